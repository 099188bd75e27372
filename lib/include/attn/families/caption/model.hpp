// The image captioner with soft attention of Show, Attend and Tell (Xu et al. 2015, sec. 3 and
// 4.2, "deterministic soft attention"), with a small convolutional encoder trained from scratch.
//
// Encoder: a stack given as a list (CaptionerConfig::encoder), e.g. "conv32x3,pool2,conv64x3,pool2":
// convK x k is a k x k convolution to K channels (stride 1, zero padding k/2, so the size is
// kept for odd k) followed by ReLU (with batch_norm: convolution without bias, batch
// normalisation, ReLU, as torch.nn.Conv2d(bias=False) + BatchNorm2d); poolP is P x P max pooling.
// Its output [B, K, h, w] gives the
// L = h w annotation vectors a_i in [D], row-major over the grid (i = y w + x), the locations
// attn-plot overlay draws over the image; D = K, or K + 2 with `coords`, which appends the
// location's centre (x, y), each scaled to [-1, 1], to its annotation. A convolutional encoder is
// translation-equivariant: without coordinates two equal digits of a strip have equal
// annotations, and content-based attention cannot say which comes first (CoordConv, Liu et al.
// 2018, gives a network the same information at its input).
//
// Decoder (an LSTM of Dd units; nn::AttentionDecoder in Bahdanau order), at step t with input
// word y_{t-1} (BOS first) and its embedding e_t = E y_{t-1} [m]:
//   alpha_t = softmax_i(v^T tanh(W h_{t-1} + U a_i))        f_att, the additive score (eq. 4-5)
//   beta_t  = sigmoid(w_b . h_{t-1} + b_b)                  the gating scalar (sec. 4.2.1; `gate`)
//   z_t     = beta_t sum_i alpha_ti a_i                     the context
//   h_t     = LSTM([e_t; z_t], h_{t-1})                     (eq. 1-3)
//   logits  = L_o dropout(tanh(L_h h_t + L_z z_t + e_t + b)) + b_o      the deep output (eq. 7)
// with the initial state h_0 = tanh(f_init,h(mean_i a_i)), c_0 = tanh(f_init,c(mean_i a_i))
// (sec. 3.1.2). The `tanh` in the deep output is the authors' code's (arctic-captions); eq. 7
// leaves it out. With attention `mean` (the ablation without attention) the context is the mean
// annotation at every step, z_t = mean_i a_i, and there is no f_att and no gate.
//
// Loss (eq. 14, doubly stochastic attention), over a batch of B captions with N_tok counted
// words (EOS included):
//   L = (1 / N_tok) [ sum_{b,t} -log p(y_bt) + lambda sum_b sum_i (1 - sum_t alpha_bti)^2 ]
// sum_t over the caption's own steps. The authors' code sums the words' losses per caption and
// averages both terms over captions; dividing both by N_tok keeps their ratio, so lambda
// (alpha_c) means what it means there. Optionally (alpha_entropy = gamma > 0, not in the paper)
// the loss adds (gamma / N_tok) sum_{b,t} H(alpha_bt), H(alpha) = -sum_i alpha_i log alpha_i, the
// entropy of every counted word's attention: it asks each word to look at few locations. A spread
// attention puts its single largest weight on the edge of the object as often as on it
// (experiments/caption-mnist), and the peak is what the attention-correctness score reads.
//
// Cost: the encoder is one im2col GEMM per convolution for the whole batch; the embedding part
// of the cell input, the deep output and the output layer are one GEMM each over all T B rows;
// per step only the recurrent GEMM, the attention and the context's part of the cell input.
//
// Parameters, by module path: encoder/conv<k>/{W, b} (k counts convolutions from 0; no b with
// batch_norm), encoder/bn<k>/{gamma, beta} (batch_norm; and the buffers running_mean, running_var),
// init_h/{W, b}, init_c/{W, b}, embedding/table, decoder/rnn/{W_ih, W_hh, b},
// decoder/attention/{W, U, v}, decoder/gate/{W, b}, deep/{W, b}, output/{W, b}.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/data/token_batch.hpp"
#include "attn/io/config_fields.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/nn/attention_decoder.hpp"
#include "attn/nn/layers.hpp"
#include "attn/nn/param.hpp"

namespace attn::caption {

// One layer of the encoder list (not nn::EncoderLayer, the Transformer's).
struct ConvEncoderLayer {
  enum Kind : uint8_t { conv, pool } kind = conv;
  int64_t channels = 0;   // conv: output channels K
  int64_t size = 0;       // conv: kernel k; pool: window P (= stride)
  bool operator==(const ConvEncoderLayer&) const = default;
};
// "conv32x3,pool2,conv64x3,pool2" -> the layers; anything else throws ConfigError saying which
// item is wrong and what the items look like.
std::vector<ConvEncoderLayer> parse_encoder(const std::string& spec);

// What the decoder attends over.
enum class CaptionAttention : uint8_t {
  soft,   // alpha_t = softmax(f_att(a_i, h_{t-1})) (Xu et al.'s deterministic attention)
  mean,   // no attention: z_t = the mean annotation at every step (the ablation)
};
CaptionAttention parse_caption_attention(const std::string& name);   // "soft", "mean"
const char* caption_attention_name(CaptionAttention attention);

struct CaptionerConfig {
  int64_t vocab = 0;                     // V (ids 0..3 are PAD, BOS, EOS, UNK)
  int64_t channels = 1;                  // C of the images [B, C, H, W]
  int64_t height = 0, width = 0;         // H, W
  std::string encoder = "conv32x3,pool2,conv64x3,pool2";
  bool batch_norm = false;               // after every convolution (momentum 0.1, eps 1e-5)
  bool coords = false;                   // append each location's (x, y) to its annotation
  int64_t embed_dim = 64;                // m: the word embedding and the deep output's width
  int64_t hidden = 128;                  // Dd: the LSTM
  int64_t attention_dim = 64;            // A: f_att's hidden layer
  CaptionAttention attention = CaptionAttention::soft;
  bool gate = true;                      // the gating scalar beta_t (soft attention only)
  float alpha_c = 1.0f;                  // lambda of the doubly stochastic penalty (soft only)
  float alpha_entropy = 0.0f;            // gamma of the attention-entropy penalty (soft only)
  float dropout = 0.0f;                  // on the deep output's hidden layer

  template <class C, class V>
  static void fields(C& c, V& v) {
    v("vocab", c.vocab);
    v("channels", c.channels);
    v("height", c.height);
    v("width", c.width);
    v("encoder", c.encoder);
    v("batch_norm", c.batch_norm);
    v("coords", c.coords);
    v("embed_dim", c.embed_dim);
    v("hidden", c.hidden);
    v("attention_dim", c.attention_dim);
    v("attention", c.attention, caption_attention_name, parse_caption_attention);
    v("gate", c.gate);
    v("alpha_c", c.alpha_c);
    v("alpha_entropy", c.alpha_entropy, io::AbsentMeans{0.0f});   // added 2026-11-29
    v("dropout", c.dropout);
  }

  // The annotation grid the encoder makes of an H x W image: D (the annotation width, coordinates
  // included), h, w; L = h w.
  struct Grid {
    int64_t D = 0, h = 0, w = 0;
    int64_t locations() const { return h * w; }
  };
  Grid grid() const;   // throws ConfigError when a pooling leaves nothing

  // Throws ConfigError naming the field for anything out of range or inconsistent.
  void validate() const;
  std::map<std::string, io::AttrValue> to_attrs() const;
  static CaptionerConfig from_attrs(const std::map<std::string, io::AttrValue>& attrs,
                                    const std::string& source = "/config");
};

// A batch: images [B, C, H, W] and captions (tgt [B, T] ending with EOS, tgt_len [B]).
struct CaptionBatch {
  Tensor images;
  Tensor tgt, tgt_len;
};

// Sums over a batch's captions.
struct CaptionStats {
  double loss_sum = 0;        // sum of the words' -log p plus lambda times the penalty plus
                              // gamma times the entropy
  double nll_sum = 0;         // sum of the words' -log p
  double penalty_sum = 0;     // sum_b sum_i (1 - sum_t alpha_bti)^2 (0 without soft attention)
  double entropy_sum = 0;     // sum over counted words of H(alpha_bt) (0 unless entropy_weight() > 0)
  int64_t tokens = 0;         // counted words (EOS included)
  int64_t correct = 0;        // words whose argmax is right (teacher forced)
  int64_t sequences = 0;      // captions
  int64_t sequences_correct = 0;   // captions all of whose words are right: exactly those that
                                   // greedy decoding reproduces
};

class Captioner;

// The decoder of a batch of images run one step at a time (attn::decode's searches): B rows,
// each a caption prefix of one image.
class CaptionerDecoderState {
 public:
  CaptionerDecoderState();
  ~CaptionerDecoderState();
  CaptionerDecoderState(CaptionerDecoderState&&) noexcept;
  CaptionerDecoderState& operator=(CaptionerDecoderState&&) noexcept;

  int64_t rows() const;
  // Keeps rows `keep` (in that order; repeats allowed: beam parents).
  void select(const std::vector<int64_t>& keep);

 private:
  friend class Captioner;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Captioner {
 public:
  // Validates the config and initialises every parameter from init_rng.
  Captioner(const CaptionerConfig& config, Rng& init_rng);
  ~Captioner();
  Captioner(Captioner&&) noexcept;
  Captioner& operator=(Captioner&&) noexcept;

  const CaptionerConfig& config() const { return config_; }
  ParamList params();   // named by module path, stable order
  // State that is not trained by gradients but saved with the model: batch normalisation's
  // running statistics, named encoder/bn<k>/running_mean and running_var (none without it).
  std::vector<std::pair<std::string, Tensor*>> buffers();

  // Forward + backward: adds the gradient of the mean loss L (above) into the params' grads (the
  // caller zeroes them), moves the running statistics (batch_norm) and returns the sums. rng
  // drives dropout.
  CaptionStats train_step(const CaptionBatch& batch, Rng& rng);
  // The sums train_step would return (the batch's own statistics, dropout from rng), without
  // gradients or any change to the model: what a gradient check differentiates.
  CaptionStats training_loss(const CaptionBatch& batch, Rng& rng) const;
  // The entropy penalty is on from construction; off, the loss, its gradient and the sums leave
  // it out (entropy_sum 0) while config().alpha_entropy still says what it was: the task turns it
  // off after a given number of epochs (families/caption/run.hpp).
  void set_entropy_penalty(bool on) { entropy_penalty_ = on; }
  bool entropy_penalty() const { return entropy_penalty_; }
  // gamma as the loss uses it now: alpha_entropy with soft attention while the penalty is on, else 0.
  float entropy_weight() const {
    return entropy_penalty_ && config_.attention == CaptionAttention::soft ? config_.alpha_entropy : 0.0f;
  }
  // Teacher-forced forward only: no dropout, no grads. With `attention` not null it receives the
  // weights alpha [B, T, L] that predicted every word (zero past a caption's length; with
  // attention `mean`, 1 / L everywhere within it).
  CaptionStats evaluate(const CaptionBatch& batch, Tensor* attention = nullptr) const;

  // ---- decoding (used by attn::decode) ----
  // Encodes images [N, C, H, W] and returns the decoder's initial state with `copies` rows per
  // image (rows n copies .. n copies + copies - 1 are image n).
  CaptionerDecoderState start_decoding(const Tensor& images, int64_t copies = 1) const;
  // Feeds ids: int32 [B] (BOS first) to the B rows and returns the logits of the next word [B, V].
  // With `weights` not null, it receives the step's attention weights [B, L] (a new tensor).
  Tensor decode_step(const Tensor& ids, CaptionerDecoderState& state, Tensor* weights = nullptr) const;

 private:
  struct Run;
  struct Conv {
    Param W, b;                            // b: none with batch_norm
    Param gamma, beta;                     // batch_norm
    Tensor running_mean, running_var;      // batch_norm
  };
  void forward(const CaptionBatch& batch, bool training, bool keep_caches, Rng& rng, Run& run,
               float* attention) const;
  // -> annotations [B, L, D]; batch normalisation by the batch's statistics when training.
  Tensor encode(const Tensor& images, bool training, Run* run) const;
  void encode_backward(Tensor dannotations, Run& run);
  bool relu_after_pool(size_t k) const;   // whether encoder layer k's ReLU runs after layer k + 1's pooling
  bool pools_with_next(size_t k) const;   // whether conv layer k runs with layer k + 1's 2 x 2 pooling, one op
  void check_images(const Tensor& images, const std::string& label) const;

  CaptionerConfig config_;
  std::vector<ConvEncoderLayer> layers_;
  std::vector<Conv> convs_;
  nn::Linear init_h_, init_c_;
  nn::Embedding embed_;
  nn::AttentionDecoder decoder_;
  nn::Linear deep_;     // [m, Dd + D]: L_h and L_z side by side
  nn::Linear output_;   // [V, m]: L_o
  bool entropy_penalty_ = true;
};

}  // namespace attn::caption

// The RNN encoder-decoder with attention (families/seq2seq): the model of Cho et al. 2014 and
// Sutskever et al. 2014 (attention `none`), Bahdanau et al. 2015 and Luong et al. 2015, with
// every alignment function those papers compare.
//
// Encoder: embedding, then `layers` GRU or LSTM layers, each optionally bidirectional
// (the two directions' states concatenated, h_i = [h->_i; h<-_i]; the backward direction reads
// each sentence reversed within its own length, so padding never reaches a real position),
// with dropout between layers. With `encoder_self_attention` each layer is an intra-attention
// RNN, a simplified LSTMN (Cheng et al. 2016): at step t the cell input is [x_t; h~_t] where
// h~_t = sum_{j<t} a_j h_j, a = softmax_j(h_{t-1}^T W h_j) (general score) over the
// direction's own earlier states (h~_0 = 0). The full LSTMN's separate hidden/memory tapes and
// its additive score are not modelled.
//
// Bridge (Bahdanau et al. 2015, appendix A.2.2): s_0 = tanh(W_b [h->_last; h<-_first] + b_b)
// from the top layer's final states (per sentence length); an LSTM decoder starts from c_0 = 0.
//
// Decoder: nn::AttentionDecoder (nn/attention_decoder.hpp: one GRU or LSTM layer and the
// attention, every style and local kind below, no context gate), at target step t with input
// token y_{t-1} (BOS first) and its embedding e_t, over the memory h_1..h_S (keys = values):
//   bahdanau: c_t, a_t = attend(s_{t-1});  s_t = RNN([e_t; c_t], s_{t-1});
//             o_t = [s_t; c_t; e_t]                                      (Bahdanau's deep-output input)
//   luong:    s_t = RNN([e_t; h~_{t-1}], s_{t-1}) (input feeding, h~_0 = 0);
//             c_t, a_t = attend(s_t);  h~_t = tanh(W_c [c_t; s_t]);  o_t = h~_t   (Luong eq. 5)
//   logits_t = W_o o_t + b_o.
// attend(q): a = softmax(score(q, h_j)) with score dot, general, concat (= additive,
// v^T tanh(W q + U h_j)), scaled_dot or location (W_a q) (Luong sec. 3.1), masked to the
// sentence. Local attention (Luong sec. 3.2) restricts it to the window [p_t - P, p_t + P]
// (P: Luong's D):
//   local_m: p_t = t;
//   local_p: p_t = S_b sigmoid(v_p^T tanh(W_p q)) with S_b the sentence's length, and the
//            weights become a_j exp(-(j - p_t)^2 / (2 sigma^2)), sigma = P / 2 (not renormalised,
//            as in the paper); the gradient flows through p_t into W_p and v_p.
// Attention `none` is the Cho/Sutskever baseline: no context (o_t = [s_t; e_t] or h~_t =
// tanh(W_c s_t)); the decoder sees the source only through s_0.
//
// Cost: the output projection and the cross-entropy of ALL target steps are one GEMM and one
// fused pass over the stacked o_t [T*B, Do] after the decoder loop; so is the embedding part of
// the decoder's input projection. Per step the decoder does the recurrent GEMM, the attention
// and the per-step part of the input projection only.
//
// Decoding: start_decoding and decode_step run the decoder one step at a time over the rows of
// a Seq2SeqDecoderState; greedy and beam search over them are attn::decode's
// (families/seq2seq/decode.hpp).
//
// Parameters, by module path: encoder/embedding, encoder/layer<l>/<fwd|bwd>/{W_ih, W_hh, b_ih,
// b_hh | b}, encoder/layer<l>/<dir>/self_attn/W, bridge/{W, b}, decoder/embedding,
// decoder/rnn/{...}, decoder/attention/{W, U, v}, decoder/local_p/{W, v}, decoder/combine/W,
// output/{W, b}.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/data/token_batch.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/nn/attention.hpp"
#include "attn/nn/attention_decoder.hpp"
#include "attn/nn/layers.hpp"
#include "attn/nn/param.hpp"
#include "attn/nn/rnn.hpp"

namespace attn::seq2seq {

// The decoder's orders and local attention kinds (nn/attention_decoder.hpp).
using AttentionStyle = nn::AttentionStyle;
using LocalAttention = nn::LocalAttention;

// The names are attn-seq2seq's option values: "bahdanau", "luong"; "global", "monotonic",
// "predictive". Parsing anything else throws ConfigError listing them.
AttentionStyle parse_attention_style(const std::string& name);
const char* attention_style_name(AttentionStyle style);
LocalAttention parse_local_attention(const std::string& name);
const char* local_attention_name(LocalAttention local);

struct Seq2SeqConfig {
  int64_t src_vocab = 0, tgt_vocab = 0;   // Vs, V (ids 0..3 are PAD, BOS, EOS, UNK)
  int64_t embed_dim = 256;                // E (source and target)
  nn::RnnCell cell = nn::RnnCell::gru;
  int64_t hidden = 256;                   // H per direction, encoder
  int64_t layers = 1;                     // encoder layers
  bool bidirectional = true;              // memory width Dv = 2H (else H)
  bool encoder_self_attention = false;    // LSTMN-style intra-attention (see above)
  int64_t dec_hidden = 256;               // Dd
  nn::ScoreKind attention = nn::ScoreKind::concat;
  AttentionStyle attention_style = AttentionStyle::bahdanau;
  int64_t attention_dim = 256;            // A: concat scores and local_p's W_p
  LocalAttention local = LocalAttention::global;
  int64_t attention_window = 10;          // P: local window radius (unused by global attention)
  int64_t max_src_len = 256;              // location scores: the longest source
  float dropout = 0.0f;                   // between encoder layers and on o_t
  float teacher_forcing = 1.0f;           // probability of feeding the gold token in training
  float label_smoothing = 0.0f;

  // The fields of /config, each once (io/config_fields.hpp).
  template <class C, class V>
  static void fields(C& c, V& v) {
    v("src_vocab", c.src_vocab);
    v("tgt_vocab", c.tgt_vocab);
    v("embed_dim", c.embed_dim);
    v("cell", c.cell, nn::rnn_cell_name, nn::parse_rnn_cell);
    v("hidden", c.hidden);
    v("layers", c.layers);
    v("bidirectional", c.bidirectional);
    v("encoder_self_attention", c.encoder_self_attention);
    v("dec_hidden", c.dec_hidden);
    v("attention", c.attention, nn::score_kind_name, nn::parse_score_kind);
    v("attention_style", c.attention_style, attention_style_name, parse_attention_style);
    v("attention_dim", c.attention_dim);
    v("local", c.local, local_attention_name, parse_local_attention);
    v("attention_window", c.attention_window);
    v("max_src_len", c.max_src_len);
    v("dropout", c.dropout);
    v("teacher_forcing", c.teacher_forcing);
    v("label_smoothing", c.label_smoothing);
  }

  int64_t memory_dim() const { return bidirectional ? 2 * hidden : hidden; }   // Dv
  int64_t context_dim() const { return attention == nn::ScoreKind::none ? 0 : memory_dim(); }
  // Do: Dd + Dv + E (bahdanau) or Dd (luong).
  int64_t output_input_dim() const;

  // Throws ConfigError naming the field for anything out of range or inconsistent.
  void validate() const;
  // /config attributes of a model file: every field under its own name (that of attn-seq2seq's
  // option), enumerations as the option values (docs/FORMATS.md).
  std::map<std::string, io::AttrValue> to_attrs() const;
  // The inverse: every attribute must be present and of its type; anything wrong, validation
  // included, is a FormatError naming `source` (the file) and the attribute.
  static Seq2SeqConfig from_attrs(const std::map<std::string, io::AttrValue>& attrs,
                                  const std::string& source = "/config");
};

class Seq2Seq;

// The decoder of one source batch run one step at a time (attn::decode's searches): B rows,
// each a hypothesis of one sentence.
class Seq2SeqDecoderState {
 public:
  Seq2SeqDecoderState();
  ~Seq2SeqDecoderState();
  Seq2SeqDecoderState(Seq2SeqDecoderState&&) noexcept;
  Seq2SeqDecoderState& operator=(Seq2SeqDecoderState&&) noexcept;

  int64_t rows() const;
  // Keeps rows `keep` (in that order; repeats allowed, e.g. beam parents): gathers the
  // recurrent state and, when the rows' sentences change, the source memory prepared for the
  // attention (a beam's BW rows of one sentence share theirs until the sentence ends).
  void select(const std::vector<int64_t>& keep);

 private:
  friend class Seq2Seq;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class Seq2Seq {
 public:
  // Validates the config and initialises every parameter from init_rng.
  Seq2Seq(const Seq2SeqConfig& config, Rng& init_rng);
  ~Seq2Seq();
  Seq2Seq(Seq2Seq&&) noexcept;
  Seq2Seq& operator=(Seq2Seq&&) noexcept;

  const Seq2SeqConfig& config() const { return config_; }
  ParamList params();   // named by module path, stable order

  // Forward + backward: adds the gradient of the MEAN loss over counted target tokens into the
  // params' grads (the caller zeroes them) and returns the sums. dropout_rng drives dropout and
  // the teacher-forcing draws.
  data::LossStats train_step(const data::TokenBatch& batch, Rng& dropout_rng);
  // Teacher-forced forward only: no dropout, no grads.
  data::LossStats evaluate(const data::TokenBatch& batch) const;
  // Teacher-forced logits [B, T, V]; with `alignment`, also the weights [B, T, S].
  Tensor logits(const data::TokenBatch& batch, Tensor* alignment = nullptr) const;

  // ---- decoding (used by attn::decode) ----
  // Encodes src: int32 [N, S], src_len: int32 [N] and returns the decoder's initial state with
  // `copies` rows per sentence (rows n * copies .. n * copies + copies - 1 are sentence n), the
  // attention memory prepared over those rows.
  Seq2SeqDecoderState start_decoding(const Tensor& src, const Tensor& src_len, int64_t copies = 1) const;
  // One decoder step: feeds ids: int32 [B] (BOS first) to the B rows and returns the logits of
  // the next token [B, V], a buffer the next step overwrites. With `weights` not null, it
  // receives the step's attention weights [B, S] (a new tensor; empty without attention).
  Tensor decode_step(const Tensor& ids, Seq2SeqDecoderState& state, Tensor* weights = nullptr) const;

 private:
  friend struct Seq2SeqImpl;      // the encoder code (seq2seq.cpp)

  struct EncoderRnn {
    nn::Rnn rnn;
    std::unique_ptr<nn::Attention> self_attn;   // encoder_self_attention only
  };

  Seq2SeqConfig config_;
  nn::Embedding src_embed_, tgt_embed_;
  std::vector<EncoderRnn> encoder_;        // [layer * dirs + dir]
  nn::Linear bridge_;
  nn::AttentionDecoder decoder_;           // "decoder": rnn, attention, local_p, combine
  nn::Linear output_;                      // [V, Do]
};

}  // namespace attn::seq2seq

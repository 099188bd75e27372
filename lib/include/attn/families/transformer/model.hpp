// The Transformer of "Attention Is All You Need" (Vaswani et al. 2017) in four shapes:
//   encdec  encoder-decoder translation model (the paper, fig. 1);
//   lm      decoder-only causal language model (Radford et al. 2018): decoder layers without
//           cross-attention;
//   mlm     encoder-only masked language model (Devlin et al. 2019, BERT): token + segment +
//           position embeddings, predicting the masked tokens (mask_tokens below);
//   cmlm    non-autoregressive encoder-decoder, the conditional masked language model of
//           Ghazvininejad et al. 2019 ("Mask-Predict"): the encdec layers, a decoder without
//           causal mask that predicts the [MASK]ed target tokens given the others and the source,
//           and a length predictor (below); decoded by mask-predict (nat.hpp).
//
// Embeddings are scaled by sqrt(D) (sec. 3.4) and summed with sinusoidal or learned positions,
// then dropped out (sec. 5.4). Token ids 0..3 are PAD, BOS, EOS, UNK. Padded keys are masked in
// every attention, and the loss (label-smoothed cross-entropy) ignores PAD targets (id 0).
//
// Teacher forcing: TokenBatch::tgt holds the target tokens ending with EOS; the decoder reads
// [BOS, tgt_0, ..., tgt_{T-2}] and predicts tgt_0 .. tgt_{T-1}.
//
// Performance: every projection is one GEMM over all B*T rows (the attention heads are
// batched GEMMs), the output projection is one GEMM [B*T, D] x [D, V], and the fused
// cross-entropy turns the logits into their gradient in place.
//
// Masked LM vocabulary: an mlm model's embedding table has tgt_vocab + 1 rows; the extra id
// tgt_vocab (mask_token_id) is "[MASK]". It is an input only: the output projection predicts
// the tgt_vocab real tokens (tied, it uses the first tgt_vocab rows of the table).
//
// CMLM (Ghazvininejad et al. 2019, sec. 3): the target y is the data's target without its EOS
// (|y| = tgt_len - 1); the decoder reads y with some positions replaced by [MASK] (id tgt_vocab,
// one more row of the target table, as the mlm's), at positions 0..|y|-1 with no BOS shift, and
// position t scores y_t. The encoder reads [LENGTH] x (id length_token_id(): one more row of the
// source table, after [MASK]'s when the table is shared) at positions 0..S; its output at [LENGTH]
// feeds a linear classifier over the OFFSET |y| - |x| in [-max_len, max_len] (class offset +
// max_len), rather than over |y| itself: the source length is known when decoding, and the offset
// is small and peaked near 0 for translation and copy-like tasks, where the absolute length would
// first have to be counted through attention, which averages. The decoder's cross-attention sees
// the whole memory, [LENGTH] included. The loss is the label-smoothed cross-entropy of the masked
// positions (their mean) + length_loss_weight x the plain cross-entropy of the offsets (its mean
// over the sentences), sec. 3.3.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/data/token_batch.hpp"
#include "attn/io/config_fields.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/nn/layers.hpp"
#include "attn/nn/multi_head_attention.hpp"
#include "attn/nn/param.hpp"
#include "attn/nn/positional_encoding.hpp"
#include "attn/nn/transformer_layers.hpp"

namespace attn::transformer {

enum class TransformerArch { encdec, lm, mlm, cmlm };
enum class PositionalKind { sinusoidal, learned };
// Which embedding tables are one: none; output: the output projection is the target embedding
// (transposed, sec. 3.4); all: also one table for source and target (encdec or cmlm with one
// vocabulary).
enum class TieEmbeddings { none, output, all };

// How a cmlm model's training masks its targets (the decoder inputs it learns to complete):
//   uniform   CMLM (Ghazvininejad et al. 2019): a number drawn uniformly from 1..|y|, decoded by
//             mask-predict's iterations;
//   all       the vanilla NAT of Gu et al. (2018) without fertility, with position queries for
//             decoder inputs: every target position is [MASK], decoded in one parallel pass;
//   glancing  GLAT (Qian et al. 2021): a first pass over all-[MASK] inputs, then the decoder sees
//             round(glancing_ratio x (tokens the first pass got wrong)) reference tokens at random
//             positions and learns the others (glance_targets); decoded in one pass.
enum class TargetMasking { uniform, all, glancing };

// What a cmlm decoder reads at a [MASK]ed position: mask, the [MASK] row of the target table
// (CMLM; with target_masking all, the position queries of a vanilla NAT); copy, the source table's
// row of the source token uniform_copy_ids picks (Gu et al. 2018's uniform copy of the source
// embeddings). Positions that hold target tokens read the target table either way.
enum class DecoderInputs { mask, copy };

// How a cmlm model decides the output length (the two ways of the lecture notes): predictor, the
// length predictor over offsets (above); eos, "generate a maximum length and cut at </s>": the
// decoder fills |x| + eos_margin positions (at most max_len), trained on y followed by </s> in
// every remaining position (eos_padded_targets), and the output ends before the first </s>.
enum class LengthRule { predictor, eos };

// The names are attn-transformer's option values: "encdec", "lm", "mlm", "cmlm" / "sinusoidal",
// "learned" / "post", "pre" / "none", "output", "all" / "uniform", "all", "glancing" / "mask",
// "copy" / "predictor", "eos"; parsing throws ConfigError listing them.
const char* arch_name(TransformerArch arch);
const char* positional_name(PositionalKind kind);
const char* norm_name(nn::NormPosition norm);
const char* tie_embeddings_name(TieEmbeddings tie);
const char* target_masking_name(TargetMasking masking);
const char* decoder_inputs_name(DecoderInputs inputs);
const char* length_rule_name(LengthRule rule);
TransformerArch arch_from_string(const std::string& name);
PositionalKind positional_from_string(const std::string& name);
nn::NormPosition norm_from_string(const std::string& name);
TieEmbeddings tie_embeddings_from_string(const std::string& name);
TargetMasking target_masking_from_string(const std::string& name);
DecoderInputs decoder_inputs_from_string(const std::string& name);
LengthRule length_rule_from_string(const std::string& name);

struct TransformerConfig {
  TransformerArch arch = TransformerArch::encdec;
  int64_t src_vocab = 0, tgt_vocab = 0;           // lm/mlm use tgt_vocab only
  TieEmbeddings tie_embeddings = TieEmbeddings::output;
  int64_t d_model = 128, heads = 4, d_ff = 512;
  int64_t enc_layers = 2, dec_layers = 2;
  float dropout = 0.1f;
  PositionalKind pos_encoding = PositionalKind::sinusoidal;
  nn::NormPosition norm = nn::NormPosition::post;
  int64_t max_len = 256;                          // learned positions and decoding limit
  int64_t attn_window = -1;                       // >= 0: truncated self-attention radius
  float label_smoothing = 0.1f;
  float length_loss_weight = 0.1f;                         // cmlm: weight of the length loss (paper: 0.1)
  TargetMasking target_masking = TargetMasking::uniform;   // cmlm: the training objective (above)
  float glancing_ratio = 0.5f;                             // cmlm, glancing: the paper's 0.5
  DecoderInputs decoder_inputs = DecoderInputs::mask;      // cmlm: what a [MASK]ed position reads
  LengthRule length_rule = LengthRule::predictor;          // cmlm: how the output length is decided
  int64_t eos_margin = 10;                                 // cmlm, eos: positions beyond |x|

  // The fields of /config, each once (io/config_fields.hpp).
  template <class C, class V>
  static void fields(C& c, V& v) {
    v("arch", c.arch, arch_name, arch_from_string);
    v("src_vocab", c.src_vocab);
    v("tgt_vocab", c.tgt_vocab);
    v("tie_embeddings", c.tie_embeddings, tie_embeddings_name, tie_embeddings_from_string);
    v("d_model", c.d_model);
    v("heads", c.heads);
    v("d_ff", c.d_ff);
    v("enc_layers", c.enc_layers);
    v("dec_layers", c.dec_layers);
    v("dropout", c.dropout);
    v("pos_encoding", c.pos_encoding, positional_name, positional_from_string);
    v("norm", c.norm, norm_name, norm_from_string);
    v("max_len", c.max_len);
    v("attn_window", c.attn_window);
    v("label_smoothing", c.label_smoothing);
    v("length_loss_weight", c.length_loss_weight, io::AbsentMeans{0.1f});   // added with cmlm
    v("target_masking", c.target_masking, target_masking_name, target_masking_from_string,
      io::AbsentMeans{TargetMasking::uniform});   // added with vanilla NAT and GLAT
    v("glancing_ratio", c.glancing_ratio, io::AbsentMeans{0.5f});
    v("decoder_inputs", c.decoder_inputs, decoder_inputs_name, decoder_inputs_from_string,
      io::AbsentMeans{DecoderInputs::mask});
    v("length_rule", c.length_rule, length_rule_name, length_rule_from_string, io::AbsentMeans{LengthRule::predictor});
    v("eos_margin", c.eos_margin, io::AbsentMeans{int64_t{10}});
  }

  bool tie_output() const { return tie_embeddings != TieEmbeddings::none; }   // output = target embedding^T
  // encdec and cmlm: a source and a target side, an encoder and a decoder with cross-attention.
  bool encoder_decoder() const { return arch == TransformerArch::encdec || arch == TransformerArch::cmlm; }
  bool shared_vocab() const { return tie_embeddings == TieEmbeddings::all && encoder_decoder(); }
  // cmlm: the classes of the length predictor, offsets |y| - |x| in [-max_len, max_len].
  int64_t length_classes() const { return 2 * max_len + 1; }
  // cmlm: mask-predict's iterations by default: 10 (the paper's) after uniform masking, 1 (one
  // parallel pass) after all or glancing.
  int64_t default_iterations() const { return target_masking == TargetMasking::uniform ? 10 : 1; }
  // cmlm: the length loss's weight in the objective: length_loss_weight, 0 with LengthRule::eos
  // (the predictor is not used: its parameters get no gradient).
  float length_weight() const { return length_rule == LengthRule::eos ? 0.0f : length_loss_weight; }
  // cmlm with LengthRule::eos: the positions the decoder fills for a source of x tokens,
  // min(x + eos_margin, max_len).
  int64_t eos_positions(int64_t x) const { return std::min(x + eos_margin, max_len); }

  // Throws ConfigError naming the field for anything out of range.
  void validate() const;
  // /config attributes of a model file: every field under its own name (that of attn-transformer's
  // option), enumerations as the option values (docs/FORMATS.md).
  std::map<std::string, io::AttrValue> to_attrs() const;
  // The inverse: every attribute must be present and of its type; anything wrong, validation
  // included, is a FormatError naming `source` (the file) and the attribute.
  static TransformerConfig from_attrs(const std::map<std::string, io::AttrValue>& attrs,
                                      const std::string& source = "/config");
};

// BERT's masking (Devlin et al. 2019, sec. 3.1 and appendix C.2) of batch.src: every position
// t < src_len[b] holding a regular token (id >= 4) is selected independently with probability
// `select` (0.15); a selected token is replaced by mask_id with probability 0.8, by a uniform
// random regular token in [4, vocab) with probability 0.1, and kept with probability 0.1.
// Returns a batch with src = the corrupted inputs, tgt = the original token at selected
// positions and PAD (ignored by the loss) elsewhere, tgt_len = src_len, segments copied.
// mask_id is normally Transformer::mask_token_id() (= tgt_vocab).
// `only`, when not empty (one flag per token id, `vocab` of them), restricts the selection to the
// tokens it flags: selective masking (Gu et al. 2020, "Train No Evil"; salient span masking in
// REALM, Guu et al. 2020), which spends every prediction on the words a downstream task asks
// about instead of on "the" and "to".
struct MaskingOptions {
  float select = 0.15f, replace_mask = 0.8f, replace_random = 0.1f;
  std::vector<bool> only;
};
data::TokenBatch mask_tokens(const data::TokenBatch& batch, Rng& rng, int32_t mask_id, int64_t vocab,
                             const MaskingOptions& options = {});
// The same with row b drawing from its own stream Rng(seed).fork(examples[b]): an example's
// mask is the same whichever batch it is in (evaluation; examples: its index in the split).
data::TokenBatch mask_examples(const data::TokenBatch& batch, uint64_t seed, std::span<const int64_t> examples,
                               int32_t mask_id, int64_t vocab, const MaskingOptions& options = {});

// CMLM's training input (Ghazvininejad et al. 2019, sec. 3.2): y is the data's target without its
// EOS.
struct CmlmBatch {
  Tensor src, src_len;   // int32 [B, S], [B]: the source
  Tensor dec_in;         // int32 [B, T], T >= 1: y with the masked positions [MASK], PAD from tgt_len on
  Tensor targets;        // int32 [B, T]: y at the masked positions, PAD (ignored by the loss) elsewhere
  Tensor tgt_len;        // int32 [B]: |y|
};
// CMLM's masking of batch (src, src_len, tgt ending with EOS, tgt_len): for each row, the number
// of masked tokens is drawn uniformly from 1..|y| (none when |y| = 0), then that many of its
// positions uniformly without replacement. mask_id is Transformer::mask_token_id().
// With TargetMasking::all every position is masked (no draw); glancing first masks all too
// (glance_targets then reveals some).
CmlmBatch cmlm_mask(const data::TokenBatch& batch, Rng& rng, int32_t mask_id,
                    TargetMasking masking = TargetMasking::uniform);
// The same with row b drawing from Rng(seed).fork(examples[b]) (validation and evaluation, as
// mask_examples).
CmlmBatch cmlm_mask_examples(const data::TokenBatch& batch, uint64_t seed, std::span<const int64_t> examples,
                             int32_t mask_id, TargetMasking masking = TargetMasking::uniform);
// GLAT's glancing (Qian et al. 2021, sec. 3): from an all-masked batch (cmlm_mask with
// TargetMasking::all) and a first pass's predictions [B, T] (int32, read at t < tgt_len), row b
// with d_b wrong predictions reveals N_b = min(|y| - 1, round(ratio x d_b)) reference tokens at
// positions drawn uniformly without replacement (dec_in = y_t, targets = PAD: not scored); the
// others stay masked and scored. A first pass without mistakes reveals nothing.
CmlmBatch glance_targets(const CmlmBatch& all_masked, const Tensor& predictions, float ratio, Rng& rng);

// LengthRule::eos's training targets: each row's target y (batch.tgt, ending with EOS) followed by
// EOS up to config.eos_positions(|x|) positions (or |y| + 1, when y is longer), then the final EOS
// that cmlm_mask drops: what the decoder learns to fill, </s> from |y| on. Sources unchanged.
data::TokenBatch eos_padded_targets(const data::TokenBatch& batch, const TransformerConfig& config);

// Gu et al. (2018)'s uniform copy, the source token each decoder position reads with
// DecoderInputs::copy: [B, T] int32, position t < tgt_len[b] = n holding src[b, floor(t x / n)]
// (x = src_len[b]: the source stretched or squeezed evenly over the target), PAD from n on.
// src: int32 [B, S], src_len, tgt_len: int32 [B].
Tensor uniform_copy_ids(const Tensor& src, const Tensor& src_len, const Tensor& tgt_len, int64_t T);

// The incremental decoding state of one batch of B rows (hypotheses): the encoder memory, its
// key lengths and projected cross-attention keys/values, and each decoder layer's
// self-attention KV cache. Each step costs O(T D) per layer and row instead of O(T^2 D).
struct DecoderState {
  Tensor memory;                        // [B, S, D] (encdec), empty for lm
  Tensor src_len;                       // int32 [B] (encdec)
  std::vector<nn::KVCache> self_kv;     // per decoder layer
  std::vector<nn::KVCache> cross_kv;    // per decoder layer (encdec)
  int64_t length = 0;                   // decoder positions fed so far
  int64_t rows() const { return self_kv.empty() ? 0 : self_kv[0].k.dim(0); }
  // Keeps rows `keep` (in that order; repeats allowed, e.g. beam parents): gathers every
  // cache, the memory and src_len.
  void select(const std::vector<int64_t>& keep);
};

class Transformer {
 public:
  // Validates the config (ConfigError) and initialises: embeddings N(0, 1/D), Glorot uniform
  // projections, LayerNorm 1/0, learned positions N(0, 0.02^2). Deterministic in init_rng.
  Transformer(const TransformerConfig& config, Rng& init_rng);
  ~Transformer();
  Transformer(Transformer&&) noexcept;
  Transformer& operator=(Transformer&&) noexcept;

  const TransformerConfig& config() const { return config_; }
  // Stable order: embeddings, [positions,] encoder layers, encoder final norm, decoder layers,
  // decoder final norm, output projection, [length predictor (cmlm)]. Names such as
  // "encoder/layer0/self_attn/w_q".
  ParamList params();
  int64_t vocab_out() const { return config_.tgt_vocab; }    // V of the logits
  int32_t mask_token_id() const { return static_cast<int32_t>(config_.tgt_vocab); }   // mlm, cmlm
  // cmlm: the source id of [LENGTH], src_vocab (tgt_vocab + 1 with one shared table).
  int32_t length_token_id() const;

  // Teacher-forced forward + backward: adds the gradient of the MEAN loss over counted tokens
  // into the params' grads (the caller zeroes them), returns the sums. dropout_rng drives dropout.
  data::LossStats train_step(const data::TokenBatch& batch, Rng& dropout_rng);
  // Forward only, no dropout, no grads.
  data::LossStats evaluate(const data::TokenBatch& batch) const;
  // Logits of a teacher-forced forward, [B, T, V] (mlm: [B, S, V]).
  Tensor logits(const data::TokenBatch& batch) const;
  // cmlm (a cmlm model refuses the TokenBatch forms above, ConfigError): the same on a masked
  // batch. The loss is the objective (above); LossStats counts the masked tokens, its loss_sum is
  // the objective times that count, its nll_sum and correct are the masked tokens' alone.
  data::LossStats train_step(const CmlmBatch& batch, Rng& dropout_rng);
  data::LossStats evaluate(const CmlmBatch& batch) const;

  // ---- fine-tuning (Radford et al. 2018, sec. 3.2; Devlin et al. 2019, sec. 3.2) ----
  // The body's final hidden states h [B, L, D], no output projection, no dropout: lm the decoder
  // over [BOS, tgt_0, ..., tgt_{T-2}] (batch.tgt, tgt_len; L = T), mlm the encoder over batch.src
  // with batch.segments (L = S). With `self` not null, every layer's self-attention weights
  // [B, NH, L, L]. ConfigError for encdec.
  Tensor hidden(const data::TokenBatch& batch, std::vector<Tensor>* self = nullptr) const;
  // dL/dh of a task head: receives h [B, L, D], adds into the head's own grads, returns [B, L, D].
  using HeadBackward = std::function<Tensor(const Tensor& h)>;
  // One training step of a head on the body: the forward of hidden() with dropout, head(h), and,
  // with lm_weight > 0 (lm only: GPT's auxiliary objective L = L_head + lm_weight L_lm), the mean
  // language-model loss of batch.tgt on the same h, whose gradient times lm_weight is added to
  // the head's. Then, when train_body, the body's backward adds into its params' grads (not
  // touched otherwise: a frozen body). Returns the LM sums (zero without lm_weight).
  data::LossStats train_head_step(const data::TokenBatch& batch, Rng& dropout_rng, float lm_weight, bool train_body,
                                  const HeadBackward& head);

  // ---- decoding (used by attn::decode) ----
  // Encoder output [B, S, D] for src [B, S] (encdec; mlm also takes segments), no dropout. cmlm:
  // the encoder over [LENGTH] src, [B, 1 + S, D], row 0 the [LENGTH] position.
  Tensor encode(const Tensor& src, const Tensor& src_len, const Tensor& segments = {}) const;
  // ---- non-autoregressive decoding (cmlm; nat.hpp) ----
  // The length predictor's logits [B, length_classes()] from a cmlm memory [B, 1 + S, D]; class
  // k is the offset |y| - |x| = k - max_len.
  Tensor length_logits(const Tensor& memory) const;
  // The non-causal decoder over tokens [B, T] (y with [MASK]s) whose first tgt_len [B] positions
  // are real, attending over the cmlm memory [B, 1 + S, D] of sources src [B, S] (read by the
  // [MASK]s with DecoderInputs::copy) of src_len [B] tokens ->
  // logits [B, T, V]. With self/cross not null, every layer's weights [B, NH, T, T] and
  // [B, NH, T, 1 + S] (column 0: [LENGTH]).
  Tensor nat_logits(const Tensor& tokens, const Tensor& tgt_len, const Tensor& memory, const Tensor& src,
                    const Tensor& src_len, std::vector<Tensor>* self = nullptr,
                    std::vector<Tensor>* cross = nullptr) const;
  // A fresh decoding state for B rows of up to `capacity` decoder positions (<= max_len); for
  // encdec it projects the memory's cross-attention keys and values once. memory/src_len are
  // ignored (pass empty tensors) for lm, in which case `rows` gives B.
  DecoderState start_decoding(const Tensor& memory, const Tensor& src_len, int64_t capacity,
                              int64_t rows = 0) const;
  // Feeds tokens [B, Tn] at positions state.length .. +Tn and returns the logits of those
  // positions [B, Tn, V]. With self/cross not null, each receives one tensor per layer:
  // weights [B, NH, Tn, length] and [B, NH, Tn, S].
  Tensor decode_step(const Tensor& tokens, DecoderState& state, std::vector<Tensor>* self = nullptr,
                     std::vector<Tensor>* cross = nullptr) const;
  // The whole decoder without a cache (teacher-forced inference): prefix [B, T] int32 (starting
  // with BOS) -> final hidden states [B, T, D]; with self/cross not null, every layer's weights
  // [B, NH, T, T] and [B, NH, T, S].
  Tensor decode_prefix(const Tensor& prefix, const Tensor& memory, const Tensor& src_len,
                       std::vector<Tensor>* self = nullptr, std::vector<Tensor>* cross = nullptr) const;
  // The output projection: hidden [..., D] -> logits [..., V].
  Tensor output_logits(const Tensor& hidden) const;

 private:
  struct StepCache;
  struct EmbedCache;

  const nn::Embedding& src_embedding() const { return shared_embed() ? tgt_embed_ : src_embed_; }
  nn::Embedding& src_embedding() { return shared_embed() ? tgt_embed_ : src_embed_; }
  bool shared_embed() const;
  // ids [B, S or T] -> sqrt(D) table[ids] + positions (+ segments), dropped out.
  Tensor embed(const nn::Embedding& table, const std::optional<nn::LearnedPositionalEmbedding>& pos,
               const Tensor& ids, const Tensor& segments, int64_t offset, bool training, Rng& rng,
               EmbedCache* cache) const;
  // The rest of embed after the table lookup x = table[ids] [B, L, D].
  Tensor finish_embedding(Tensor x, const std::optional<nn::LearnedPositionalEmbedding>& pos, const Tensor& ids,
                          const Tensor& segments, int64_t offset, bool training, Rng& rng, EmbedCache* cache) const;
  void embed_backward(const Tensor& dx, nn::Embedding& table,
                      std::optional<nn::LearnedPositionalEmbedding>& pos, const EmbedCache& cache);
  Tensor run_encoder(const Tensor& src, const Tensor& src_len, const Tensor& segments, bool training, Rng& rng,
                     StepCache* cache, std::vector<Tensor>* self = nullptr) const;
  // The final hidden states of the stack that makes the output (encdec and lm: the decoder's,
  // mlm: the encoder's), [B, L, D].
  Tensor body(const data::TokenBatch& batch, bool training, Rng& rng, StepCache* cache,
              std::vector<Tensor>* self = nullptr) const;
  void check_head_batch(const data::TokenBatch& batch) const;
  Tensor run_decoder(const Tensor& dec_in, const Tensor& dec_len, const Tensor& memory, const Tensor& src_len,
                     bool training, Rng& rng, StepCache* cache, std::vector<Tensor>* self = nullptr,
                     std::vector<Tensor>* cross = nullptr) const;
  // The decoder's layers over embedded inputs x [B, T, D].
  Tensor decoder_layers(Tensor x, const Tensor& dec_len, const Tensor& memory, const Tensor& src_len, bool training,
                        Rng& rng, StepCache* cache, std::vector<Tensor>* self, std::vector<Tensor>* cross) const;
  // cmlm: the decoder over dec_in [B, T] (y with [MASK]s; DecoderInputs above) for sources src
  // [B, S] of src_len tokens whose memory is [B, 1 + S, D] -> final hidden states [B, T, D].
  Tensor nat_decoder(const Tensor& dec_in, const Tensor& tgt_len, const Tensor& memory, const Tensor& src,
                     const Tensor& src_len, bool training, Rng& rng, StepCache* cache,
                     std::vector<Tensor>* self = nullptr, std::vector<Tensor>* cross = nullptr) const;
  // The shared forward of train_step/evaluate/logits: logits [B*T, V] and targets [B*T].
  Tensor forward_logits(const data::TokenBatch& batch, bool training, Rng& rng, StepCache* cache,
                        Tensor* targets) const;
  // The output projection of final hidden states h [B, L, D] -> [B*L, V]; training (cache not
  // null) writes into the reused logits buffer.
  Tensor project(const Tensor& h, StepCache* cache) const;
  // cmlm's forward: the decoder's final states [B*T, D], and the length logits [B, C].
  Tensor cmlm_forward(const CmlmBatch& batch, bool training, Rng& rng, StepCache* cache, Tensor* length_logits) const;
  // cmlm: the encoder input [LENGTH] src [B, 1 + S] (its lengths are src_len + 1).
  Tensor with_length_token(const Tensor& src) const;
  // Backward of the output projection, the decoder stack (returns the gradient w.r.t. the
  // memory, summed over layers) and the encoder stack, each adding into the params' grads.
  Tensor output_backward(const Tensor& dlogits, const ops::LinearCache& cache);
  Tensor decoder_backward(Tensor dh, StepCache& cache);
  void encoder_backward(Tensor dmemory, StepCache& cache);
  ops::AttentionMask self_mask(const Tensor& lengths, bool causal) const;
  void check_batch(const data::TokenBatch& batch) const;

  TransformerConfig config_;
  nn::Embedding src_embed_, tgt_embed_;   // tgt_embed_ is the only table for lm/mlm/shared
  std::optional<nn::Embedding> segment_embed_;                   // mlm
  std::optional<nn::LearnedPositionalEmbedding> enc_pos_, dec_pos_;   // learned positions
  Tensor sinusoid_;                                              // [max_len, D] (sinusoidal)
  std::vector<nn::EncoderLayer> encoder_;
  std::vector<nn::DecoderLayer> decoder_;
  std::optional<nn::LayerNorm> enc_norm_, dec_norm_;             // pre-norm final norms
  std::optional<nn::Linear> output_;                             // untied output projection
  std::optional<nn::Linear> length_;                             // cmlm: the length predictor
  std::unique_ptr<StepCache> cache_;                             // reused by train_step
};

}  // namespace attn::transformer

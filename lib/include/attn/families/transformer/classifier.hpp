// A Transformer fine-tuned to classify a sequence or a sentence pair: the second stage of GPT
// (Radford et al. 2018, sec. 3.2) and BERT (Devlin et al. 2019, sec. 3.2, fig. 1 and 4). The
// body is a pre-trained lm or mlm Transformer; one linear layer on one of its final hidden
// states gives P(y | x) = softmax(h W_y^T + b_y) over K classes:
//   lm   (GPT)   the decoder reads [BOS] A ([SEP] B) and h is the final block's activation of the
//                last token (the position that predicts the end of the text in pre-training);
//                with aux_lm = lambda > 0 the objective is L = L_cls + lambda L_lm, L_lm the
//                language-model loss of the same text ending with EOS (Radford eq. 5).
//   mlm  (BERT)  the encoder reads [CLS] A [SEP] (B [SEP]) with segment ids 0 for [CLS], A and its
//                [SEP], 1 for B and its [SEP]; h is the final state of [CLS] (position 0).
// [CLS] is the reserved id BOS (1, "<s>") and [SEP] is EOS (2, "</s>"): every vocabulary has them,
// and an mlm is pre-trained on [CLS] x [SEP] (families/transformer/run.hpp), so their embeddings are
// trained before fine-tuning; a decoder-only lm reads BOS first in pre-training too.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/data/rows.hpp"
#include "attn/families/transformer/model.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/nn/layers.hpp"
#include "attn/nn/param.hpp"

namespace attn::transformer {

inline constexpr int32_t kCls = data::kBos, kSep = data::kEos;

// BERT's input of rows of token ids without special ids: [CLS] A [SEP] (B [SEP]).
// src [B, L] int32 padded, src_len [B], segments [B, L] 0 for A then 1 for B (empty: all A).
// Returns src [B, L'], src_len (+2, +3 with a B), segments [B, L'] (tgt empty).
data::TokenBatch bert_input(const Tensor& src, const Tensor& src_len, const Tensor& segments);

// A batch a classifier reads: the body's input, the position of h that is classified per row,
// and the classes (empty for prediction).
struct ClassifierBatch {
  data::TokenBatch tokens;   // mlm: bert_input; lm: tgt = A ([SEP] B) EOS, tgt_len (the decoder reads BOS first)
  Tensor read_at;       // int32 [B]: mlm 0 ([CLS]); lm tgt_len - 1 (the last token of A ([SEP] B))
  Tensor labels;        // int32 [B] in [0, K), or empty
};
ClassifierBatch classifier_batch(TransformerArch arch, const Tensor& src, const Tensor& src_len,
                                 const Tensor& segments, const Tensor& labels);
// The positions the body reads for a row of `len` tokens (pair: with a sentence B).
int64_t classifier_input_length(TransformerArch arch, int64_t len, bool pair);
// The same for every row of a split's sources: src_len [N], segments its rows' segment ids.
std::vector<int32_t> classifier_input_lengths(TransformerArch arch, const Tensor& src_len, const data::Rows& segments);

struct ClassifierConfig {
  TransformerConfig body;
  int64_t classes = 2;    // K
  float aux_lm = 0.0f;    // lambda of GPT's auxiliary LM objective (lm bodies only)

  template <class C, class V>
  static void fields(C& c, V& v) {
    TransformerConfig::fields(c.body, v);
    v("classes", c.classes);
    v("aux_lm", c.aux_lm);
  }
  void validate() const;   // ConfigError naming the field
  std::map<std::string, io::AttrValue> to_attrs() const;
  static ClassifierConfig from_attrs(const std::map<std::string, io::AttrValue>& attrs,
                                     const std::string& source = "/config");
};

// Sums over a batch's examples.
struct ClassifierStats {
  double loss_sum = 0;    // sum of -log P(y | x)
  int64_t count = 0;      // examples
  int64_t correct = 0;    // argmax == label
  data::LossStats lm;     // the auxiliary LM's sums (aux_lm > 0)
  // The training objective's mean: L_cls + aux_lm L_lm per batch (Radford eq. 5).
  double objective(float aux_lm) const;
};

class TransformerClassifier {
 public:
  // A fresh body and head, initialised from `rng` (the from-scratch baseline, and loading).
  TransformerClassifier(const ClassifierConfig& config, Rng& rng);
  // A head on a pre-trained body (moved in, its weights untouched); the head's weights are drawn
  // from `head_rng` (Glorot uniform, zero bias).
  TransformerClassifier(Transformer body, int64_t classes, float aux_lm, Rng& head_rng);

  const ClassifierConfig& config() const { return config_; }
  Transformer& body() { return body_; }
  const Transformer& body() const { return body_; }
  // The body's parameters (their pre-training names), then "classifier/W", "classifier/b".
  ParamList params();
  ParamList head_params();

  // Forward and backward: adds the gradient of the mean objective into the head's grads and,
  // when train_body, the body's (not touched otherwise). Needs batch.labels.
  ClassifierStats train_step(const ClassifierBatch& batch, Rng& dropout_rng, bool train_body);
  // Forward only (no dropout): the sums of train_step.
  ClassifierStats evaluate(const ClassifierBatch& batch) const;
  // Class logits [B, K]; with `attention` not null, every body layer's self-attention weights
  // [B, NH, L, L].
  Tensor logits(const ClassifierBatch& batch, std::vector<Tensor>* attention = nullptr) const;

 private:
  Tensor pooled(const Tensor& h, const Tensor& read_at) const;   // h [B, L, D] -> [B, D]

  ClassifierConfig config_;
  Transformer body_;
  nn::Linear head_;
};

}  // namespace attn::transformer

// Fine-tuning a pre-trained Transformer (lm or mlm) as a classifier on a labelled data set
// (families/transformer/labelled_data.hpp): loading the pre-trained model against the data, its TrainTask for the
// model-agnostic trainer, evaluation, classification with attention weights, and model files.
// attn-transformer's finetune, eval and classify verbs are thin front ends over these functions.
//
// A fine-tuned model file (kind "transformer-classifier", docs/FORMATS.md) is a checkpoint whose
// /config holds the body's TransformerConfig fields, `classes` and `aux_lm`, whose /params are
// the body's (under their pre-training names) and classifier/W [K, D], classifier/b [K]; plus
//   /vocab/src   string [V]   the body's vocabulary (that of the pre-training data)
//   /labels      string [K]   the class names of the labelled data
//
// A classification output file (format "attnlab/output", kind "classification") holds, for the N
// examples of a split in data-set order:
//   /predictions        int32 [N]       the predicted class (argmax)
//   /probabilities      float32 [N, K]  softmax of the class logits
//   /label              int32 [N]       the data set's classes (the reference)
//   /src, /src_len, /segments           the examples as stored in the data set
//   /labels, /vocab/src                 copies, so the file stands alone
//   /attention/layer<i> float32 [N, NH, L, L]   with dump_attention: every body layer's
//                       self-attention over the input the body reads ([CLS] A [SEP] (B [SEP])
//                       for mlm, [BOS] A ([SEP] B) for lm), zero beyond an example's length
//   /metrics  attributes examples, accuracy, loss (mean -log P(label | x))
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/data/vocab.hpp"
#include "attn/families/transformer/classifier.hpp"
#include "attn/families/transformer/labelled_data.hpp"
#include "attn/families/transformer/run.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/train/split_run.hpp"
#include "attn/train/trainer.hpp"

namespace attn::transformer {

inline constexpr const char* kClassifierKind = "transformer-classifier";

// What a fine-tuning run reads of a labelled data set: /vocab/src, /labels, /train and, when the
// file has it, /valid, each opened and kept as `keep` says (transformer::open_labelled_split; in the
// file, `data` must outlive them).
struct LabelledData {
  data::Vocab vocab;
  std::vector<std::string> labels;
  LabelledSplit train;
  std::optional<LabelledSplit> valid;
  const LabelledSplit* valid_or_null() const { return valid ? &*valid : nullptr; }
};
LabelledData read_labelled_data(const io::File& data, data::KeepData keep = data::KeepData::memory);

// The pre-trained model of `path` checked against the labelled data `data`: a Transformer model
// file of arch lm or mlm whose vocabulary is the data set's /vocab/src token for token, and whose
// max_len holds the data set's longest example as the body reads it. Anything else is a
// DataError (FormatError for a file that is not a Transformer model) naming both files.
TransformerFile load_pretrained(const std::string& path, const io::File& data, const LabelledData& labelled);

// The trainer's view of a classifier on labelled splits: kind kClassifierKind, config =
// model.config().to_attrs(), unit examples, sums {cls_nll, correct}, metrics cls_loss (mean
// -log P(y | x)), accuracy and error. The loss is the objective (with aux_lm: L_cls + aux_lm L_lm,
// per batch). freeze_body: only the head is trained, the body's parameters are saved unchanged
// (TrainTask::frozen). The model, splits, vocabulary and labels must outlive the task.
train::TrainTask classifier_task(TransformerClassifier& model, const LabelledSplit& train, const LabelledSplit* valid,
                                 const data::Vocab& vocab, const std::vector<std::string>& labels, bool freeze_body);

// Input lengths of the examples as `arch` reads them (transformer::classifier_input_length).
std::vector<int32_t> classifier_lengths(TransformerArch arch, const LabelledSplit& split);

struct ClassifierFile {
  TransformerClassifier model;
  data::Vocab vocab;
  std::vector<std::string> labels;
  io::Checkpoint checkpoint;   // everything but the parameters
};
// Reads a fine-tuned model file (FormatError / ShapeError naming it otherwise).
ClassifierFile load_classifier(const std::string& path);
// Whether the model file at `path` is a fine-tuned classifier (root kind), for verbs that take both.
bool is_classifier_file(const std::string& path);

// Split `split` of a labelled data set for the classifier `m` (loaded from `model_path`): the
// data set's /vocab/src and /labels must be the model's (DataError naming both files). Opened as
// training opens it (KeepData::automatic: a large split stays in `data`, which must outlive it).
LabelledSplit read_classifier_split(const io::File& data, const std::string& split, const ClassifierFile& m,
                                    const std::string& model_path);

// Sums of the classification loss over a split (no dropout), in batches of batch_size examples:
// loss_sum and count over examples, sums {cls_nll, correct}.
train::BatchStats evaluate_classifier(const TransformerClassifier& model, const LabelledSplit& split,
                                      int64_t batch_size);

struct Classification {
  Tensor predictions;       // int32 [N]
  Tensor probabilities;     // float32 [N, K]
  NamedTensors attention;   // "layer<i>", [N, NH, L, L]
  train::BatchStats stats;   // as evaluate_classifier
};
Classification classify(const TransformerClassifier& model, const LabelledSplit& split, int64_t batch_size,
                        bool want_attention);
// Writes a classification into an open output file in the layout above.
void write_classification(io::File& file, const Classification& c, const LabelledSplit& split, const data::Vocab& vocab,
                          const std::vector<std::string>& labels);

}  // namespace attn::transformer

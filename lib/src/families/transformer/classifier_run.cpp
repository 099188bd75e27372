// Fine-tuning a Transformer as a classifier: the pre-trained model checked against the data, the
// training task, evaluation, classification and model files (classifier_run.hpp).
#include "attn/families/transformer/classifier_run.hpp"

#include <algorithm>
#include <cmath>

#include "attn/core/error.hpp"
#include "attn/core/thread_governor.hpp"
#include "attn/data/splits.hpp"
#include "attn/ops/softmax.hpp"
#include "attn/train/model_file.hpp"
#include "attn/train/split_run.hpp"
#include "attn/train/token_run.hpp"

namespace attn::transformer {
namespace {


// The batch a classifier reads for rows `index` of `split` (labels included).
ClassifierBatch batch_of(TransformerArch arch, const LabelledSplit& split, std::span<const int64_t> index) {
  const LabelledSplit rows = gather_labelled(split, index);
  return classifier_batch(arch, rows.src.all(), rows.src_len, rows.segments.all(), rows.label);
}

train::BatchStats to_stats(const ClassifierStats& s, float aux_lm) {
  const auto n = static_cast<double>(s.count);
  return {.loss_sum = s.objective(aux_lm) * n, .count = n, .units = s.count,
          .sums = {s.loss_sum, static_cast<double>(s.correct)}};
}

double accuracy(const train::BatchStats& s) { return s.count > 0 ? s.sum(1) / s.count : NAN; }

// "the first difference is id 7: 'dog' here, 'cat' there" for two token lists.
std::string first_difference(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i])
      return "the first difference is at id " + std::to_string(i) + ": '" + a[i] + "' against '" + b[i] + "'";
  return "one is a prefix of the other";
}

}  // namespace

LabelledData read_labelled_data(const io::File& data, data::KeepData keep) {
  LabelledData out{data::read_vocab(data, "/vocab/src"), read_labels(data), {}, std::nullopt};
  const auto V = out.vocab.size(), K = static_cast<int64_t>(out.labels.size());
  out.train = open_labelled_split(data, "train", V, K, keep);
  if (data::has_split(data, "valid")) out.valid = open_labelled_split(data, "valid", V, K, keep);
  return out;
}

TransformerFile load_pretrained(const std::string& path, const io::File& data, const LabelledData& labelled) {
  const std::string both = " (fine-tuning " + path + " on " + data.display_name() + ")";
  const io::FileInfo info = io::read_file_info(io::File::open_read(path));
  if (info.kind != "transformer")
    throw FormatError(path + ": a model of kind '" + info.kind +
                      "'; fine-tuning starts from a Transformer pre-trained with attn-transformer train --arch lm or "
                      "mlm" + both);
  TransformerFile m = load_transformer(path);
  const TransformerConfig& c = m.model.config();
  if (c.encoder_decoder())
    throw DataError(path + ": an encoder-decoder (arch " + arch_name(c.arch) +
                    "); fine-tuning needs a pre-trained lm (GPT) or mlm "
                    "(BERT)" +
                    both);
  const std::vector<std::string>& model_tokens = m.tgt_vocab.tokens();
  if (model_tokens != labelled.vocab.tokens())
    throw DataError(data.display_name() + ": dataset '/vocab/src' (" + std::to_string(labelled.vocab.size()) +
                    " tokens) is not the vocabulary of the pre-trained model " + path + " (" +
                    std::to_string(model_tokens.size()) + " tokens; " +
                    first_difference(labelled.vocab.tokens(), model_tokens) +
                    "): token ids would mean other words; build the labelled set with the pre-training set's "
                    "vocabulary (--vocab-from)");
  for (const LabelledSplit* s : {&labelled.train, labelled.valid_or_null()}) {
    if (!s) continue;
    const std::vector<int32_t> lengths = classifier_lengths(c.arch, *s);
    const auto longest = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
    if (longest > c.max_len)
      throw DataError(data.display_name() + ": split '/" + s->name + "' has an example of " + std::to_string(longest) +
                      " positions as the body reads it, more than the max_len " + std::to_string(c.max_len) +
                      " of the pre-trained model " + path +
                      " (pre-train with --max-positions or on longer text, or shorten the examples)");
  }
  return m;
}

std::vector<int32_t> classifier_lengths(TransformerArch arch, const LabelledSplit& split) {
  return classifier_input_lengths(arch, split.src_len, split.segments);
}

train::TrainTask classifier_task(TransformerClassifier& model, const LabelledSplit& train, const LabelledSplit* valid,
                                 const data::Vocab& vocab, const std::vector<std::string>& labels, bool freeze_body) {
  const TransformerArch arch = model.config().body.arch;
  const float aux_lm = model.config().aux_lm;
  if (freeze_body && aux_lm > 0)
    throw ConfigError("an auxiliary language-model loss (aux_lm) trains the body, which a frozen encoder keeps as it is");
  train::TrainTask task;
  task.kind = kClassifierKind;
  task.config = model.config().to_attrs();
  task.params = freeze_body ? model.head_params() : model.params();
  if (freeze_body) task.frozen = model.body().params();
  task.unit = {.rate = "ex", .plural = "examples"};
  task.sums = {"cls_nll", "correct"};
  task.metrics = {
      {"cls_loss", "classification loss",
       [](const train::BatchStats& s) { return s.count > 0 ? s.sum(0) / s.count : NAN; }},
      {"accuracy", "accuracy", accuracy},
      {"error", "error", [](const train::BatchStats& s) { return 1.0 - accuracy(s); }},
  };
  if (aux_lm > 0)   // L_cls is a mean over examples, L_lm over tokens: one weight per shard cannot mix them
    task.single_process_only = "the auxiliary LM loss (aux_lm) is a mean over tokens beside the classifier's over "
                               "examples, so a shard's gradient cannot be weighted by one count";
  task.train_lengths = classifier_lengths(arch, train);
  task.train_batch = [&model, &train, arch, aux_lm, freeze_body](std::span<const int64_t> index, Rng& rng) {
    return to_stats(model.train_step(batch_of(arch, train, index), rng, !freeze_body), aux_lm);
  };
  if (valid) {
    task.valid_lengths = classifier_lengths(arch, *valid);
    task.valid_batch = [&model, valid, arch, aux_lm](std::span<const int64_t> index) {
      return to_stats(model.evaluate(batch_of(arch, *valid, index)), aux_lm);
    };
  }
  task.write_extra = [&vocab, &labels](io::File& file) {
    data::write_vocab(file, "/vocab/src", vocab);
    write_labels(file, labels);
  };
  return task;
}

ClassifierFile load_classifier(const std::string& path) {
  const io::File file = io::File::open_read(path);
  train::LoadedModel<TransformerClassifier> m = train::load_model<TransformerClassifier>(file, kClassifierKind);
  data::Vocab vocab = data::read_vocab(file, "/vocab/src");
  if (vocab.size() != m.model.config().body.tgt_vocab)
    throw FormatError(file.display_name() + ": dataset '/vocab/src' has " + std::to_string(vocab.size()) +
                      " tokens but the model's /config says " + std::to_string(m.model.config().body.tgt_vocab));
  std::vector<std::string> labels = read_labels(file);
  if (static_cast<int64_t>(labels.size()) != m.model.config().classes)
    throw FormatError(file.display_name() + ": dataset '/labels' has " + std::to_string(labels.size()) +
                      " names but the model's /config says " + std::to_string(m.model.config().classes) + " classes");
  return {std::move(m.model), std::move(vocab), std::move(labels), std::move(m.checkpoint)};
}

bool is_classifier_file(const std::string& path) {
  return io::read_file_info(io::File::open_read(path)).kind == kClassifierKind;
}

LabelledSplit read_classifier_split(const io::File& data, const std::string& split, const ClassifierFile& m,
                                    const std::string& model_path) {
  const data::Vocab vocab = data::read_vocab(data, "/vocab/src");
  if (vocab.tokens() != m.vocab.tokens())
    throw DataError(data.display_name() + ": dataset '/vocab/src' (" + std::to_string(vocab.size()) +
                    " tokens) is not the vocabulary of the model " + model_path + " (" +
                    std::to_string(m.vocab.size()) + " tokens; " + first_difference(vocab.tokens(), m.vocab.tokens()) + ")");
  if (read_labels(data) != m.labels)
    throw DataError(data.display_name() + ": dataset '/labels' differs from the classes of the model " + model_path +
                    " (" + std::to_string(m.labels.size()) + " classes): it was fine-tuned on another task");
  LabelledSplit s = open_labelled_split(data, split, vocab.size(), static_cast<int64_t>(m.labels.size()),
                                        data::KeepData::automatic);
  train::require_examples(s.size(), data.display_name(), split);
  return s;
}

train::BatchStats evaluate_classifier(const TransformerClassifier& model, const LabelledSplit& split,
                                      int64_t batch_size) {
  const TransformerArch arch = model.config().body.arch;
  return train::evaluate(
      [&](std::span<const int64_t> index) { return to_stats(model.evaluate(batch_of(arch, split, index)), 0.0f); },
      classifier_lengths(arch, split), 0, batch_size);
}

Classification classify(const TransformerClassifier& model, const LabelledSplit& split, int64_t batch_size,
                        bool want_attention) {
  const TransformerArch arch = model.config().body.arch;
  const int64_t N = split.size(), K = model.config().classes;
  const auto batches = train::split_batches(classifier_lengths(arch, split), 0, batch_size);
  const std::string attention = "attention/";
  const train::SplitOutput all = train::run_split(N, batches, [&](std::span<const int64_t> index) {
    const ClassifierBatch batch = batch_of(arch, split, index);
    std::vector<Tensor> layers;
    const Tensor logits = model.logits(batch, want_attention ? &layers : nullptr);   // [B, K]
    const Tensor p = ops::softmax_forward(logits, nullptr);
    const ops::CrossEntropyResult ce = ops::cross_entropy_forward(logits, batch.labels, {}, nullptr);
    Tensor predicted({static_cast<int64_t>(index.size())}, DType::i32);
    for (size_t b = 0; b < index.size(); ++b) {
      const float* row = p.data() + static_cast<int64_t>(b) * K;
      predicted.idata()[b] = static_cast<int32_t>(std::max_element(row, row + K) - row);
    }
    train::BatchOutput out{.tensors = {{"predictions", predicted}, {"probabilities", p}}, .sums = {}};
    for (size_t l = 0; l < layers.size(); ++l)
      out.tensors.emplace_back(attention + "layer" + std::to_string(l), std::move(layers[l]));
    train::append_doubles({.loss_sum = ce.sum,
                           .count = static_cast<double>(ce.count),
                           .units = ce.count,
                           .sums = {ce.sum, static_cast<double>(ce.correct)}},
                          2, out.sums);
    return out;
  });
  Classification out;
  out.stats = train::stats_from_doubles(all.sums);
  if (N == 0) {
    out.predictions = Tensor({0}, DType::i32);
    out.probabilities = Tensor({0, K});
    return out;
  }
  out.predictions = all.at("predictions");
  out.probabilities = all.at("probabilities");
  for (const auto& [name, t] : all.tensors)
    if (name.starts_with(attention)) out.attention.emplace_back(name.substr(attention.size()), t);
  return out;
}

void write_classification(io::File& file, const Classification& c, const LabelledSplit& split, const data::Vocab& vocab,
                          const std::vector<std::string>& labels) {
  file.write("/predictions", c.predictions);
  file.write("/probabilities", c.probabilities);
  file.write("/label", split.label);
  file.write("/src", split.src.all());
  file.write("/src_len", split.src_len);
  io::WriteOptions byte;
  byte.as_uint8 = true;
  file.write("/segments", split.segments.all(), byte);
  write_labels(file, labels);
  data::write_vocab(file, "/vocab/src", vocab);
  for (const auto& [name, t] : c.attention) file.write("/attention/" + name, t);
  file.set_attr("/metrics", "examples", static_cast<int64_t>(split.size()));
  file.set_attr("/metrics", "accuracy", accuracy(c.stats));
  file.set_attr("/metrics", "loss", c.stats.loss());
}

}  // namespace attn::transformer

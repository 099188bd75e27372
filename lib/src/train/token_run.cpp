// Sequence models on token data sets: batches, evaluation sums, model vocabularies, translation
// output files (token_run.hpp).
#include "attn/train/token_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "attn/core/error.hpp"
#include "attn/data/tokenizer.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/train/split_run.hpp"

namespace attn::train {
namespace {

std::span<const int32_t> ints(const Tensor& t) { return {t.idata(), static_cast<size_t>(t.numel())}; }

// pred[b, t] = argmax_v logits[b, t, v].   logits: [B, T, V] -> int32 [B, T].
Tensor argmax_last(const Tensor& logits) {
  const int64_t V = logits.dim(-1), rows = logits.numel() / V;
  Tensor pred({logits.dim(0), logits.dim(1)}, DType::i32);
  const float* x = logits.data();
  for (int64_t r = 0; r < rows; ++r)
    pred.idata()[r] = static_cast<int32_t>(std::max_element(x + r * V, x + (r + 1) * V) - (x + r * V));
  return pred;
}

// Exact match of each sentence's tokens + EOS with the split's target, token by token.
metrics::AccuracyCounts reference_accuracy(const std::vector<std::vector<int32_t>>& tokens, const data::TokenSplit& split) {
  const auto n = static_cast<int64_t>(tokens.size());
  size_t longest = 0;
  for (const auto& t : tokens) longest = std::max(longest, t.size());
  const Tensor tgt = split.tgt.all();
  const int64_t width = std::max<int64_t>(tgt.dim(1), static_cast<int64_t>(longest) + 1);
  Tensor pred({n, width}, DType::i32), ref({n, width}, DType::i32);
  for (int64_t i = 0; i < n; ++i) {
    const auto& t = tokens[static_cast<size_t>(i)];
    std::copy(t.begin(), t.end(), pred.idata() + i * width);
    pred.idata()[i * width + static_cast<int64_t>(t.size())] = data::kEos;
    std::memcpy(ref.idata() + i * width, tgt.idata() + i * tgt.dim(1), static_cast<size_t>(tgt.dim(1)) * sizeof(int32_t));
  }
  return metrics::count_correct(pred, ref, split.tgt_len);
}

// The vocabulary `dataset` of a model file, checked against the model's size `want` (0: not
// checked).
data::Vocab read_model_vocab(const io::File& file, const std::string& dataset, int64_t want) {
  data::Vocab v = data::read_vocab(file, dataset);
  if (want > 0 && v.size() != want)
    throw FormatError(file.display_name() + ": dataset '" + dataset + "' has " + std::to_string(v.size()) +
                      " tokens but the model's /config says " + std::to_string(want));
  return v;
}

}  // namespace

TrainingData read_training_data(const io::File& file, const data::TokenSplitRequest& request, data::KeepData keep) {
  TrainingData out{data::open_token_split(file, "train", request, keep), std::nullopt};
  if (data::has_split(file, "valid")) out.valid = data::open_token_split(file, "valid", request, keep);
  return out;
}

BatchStats to_stats(const data::LossStats& s) {
  return {.loss_sum = s.loss_sum, .count = static_cast<double>(s.tokens), .units = s.tokens,
          .sums = {s.nll_sum, static_cast<double>(s.correct)}};
}

double perplexity(const BatchStats& s) { return s.count > 0 ? std::exp(s.sum(0) / s.count) : NAN; }
double token_accuracy(const BatchStats& s) { return s.count > 0 ? s.sum(1) / s.count : NAN; }

void describe_token_task(TrainTask& task) {
  task.unit = {.rate = "tok", .plural = "tokens"};
  task.sums = kTokenSums;
  task.metrics = {{"perplexity", "perplexity", perplexity}, {"accuracy", "token accuracy", token_accuracy}};
}

data::TokenBatch gather_token_batch(const data::TokenSplit& split, std::span<const int64_t> index) {
  data::TokenBatch batch;
  if (split.has_src()) {
    data::PaddedBatch src = data::gather_batch(split.src, split.src_len, index);
    batch.src = src.tokens, batch.src_len = src.lengths;
    if (!split.segments.empty()) batch.segments = data::gather_batch(split.segments, split.src_len, index).tokens;
  }
  if (split.has_tgt()) {
    data::PaddedBatch tgt = data::gather_batch(split.tgt, split.tgt_len, index);
    batch.tgt = tgt.tokens, batch.tgt_len = tgt.lengths;
  }
  return batch;
}

metrics::AccuracyCounts argmax_accuracy(const Tensor& logits, const data::TokenBatch& batch) {
  return metrics::count_correct(argmax_last(logits), batch.tgt, batch.tgt_len);
}

Vocabs read_data_vocabs(const io::File& data) {
  if (!data.exists("/vocab/tgt") && data.exists("/vocab/src")) {   // one vocabulary (a labelled set)
    data::Vocab src = data::read_vocab(data, "/vocab/src");
    return {src, src};
  }
  data::Vocab tgt = data::read_vocab(data, "/vocab/tgt");
  data::Vocab src = data.exists("/vocab/src") ? data::read_vocab(data, "/vocab/src") : tgt;
  return {std::move(src), std::move(tgt)};
}

Vocabs read_model_vocabs(const io::File& file, int64_t src_vocab, int64_t tgt_vocab) {
  return {read_model_vocab(file, "/vocab/src", src_vocab), read_model_vocab(file, "/vocab/tgt", tgt_vocab)};
}

void write_vocabs(io::File& file, const data::Vocab& src_vocab, const data::Vocab& tgt_vocab) {
  data::write_vocab(file, "/vocab/src", src_vocab);
  data::write_vocab(file, "/vocab/tgt", tgt_vocab);
}

data::TokenSplit read_model_split(const io::File& data, const std::string& split, const data::TokenSplitRequest& request,
                            const data::Vocab* src_vocab, const data::Vocab* tgt_vocab) {
  for (const auto& [dataset, vocab] : {std::pair{"/vocab/tgt", tgt_vocab}, std::pair{"/vocab/src", src_vocab}})
    if (vocab && data::read_vocab(data, dataset).tokens() != vocab->tokens())
      throw FormatError(data.display_name() + ": dataset '" + dataset + "' differs from the model's vocabulary (" +
                        std::to_string(vocab->size()) + " tokens): the model was trained on another data set");
  data::TokenSplit s = data::open_token_split(data, split, request, data::KeepData::automatic);
  require_examples(s.size(), data.display_name(), split);
  return s;
}

void check_resumed_vocabs(const std::map<std::string, io::AttrValue>& config, const std::string& checkpoint,
                          const io::File& data, const Vocabs& vocabs) {
  auto size = [&](const char* key) {
    const auto it = config.find(key);
    const int64_t* v = it == config.end() ? nullptr : std::get_if<int64_t>(&it->second);
    return v ? *v : int64_t{0};
  };
  const int64_t src = size("src_vocab"), tgt = size("tgt_vocab");
  if ((tgt > 0 && tgt != vocabs.tgt.size()) || (src > 0 && src != vocabs.src.size()))
    throw FormatError(data.display_name() + ": the vocabularies (/vocab/src " + std::to_string(vocabs.src.size()) +
                      ", /vocab/tgt " + std::to_string(vocabs.tgt.size()) + " tokens) differ from those of " +
                      checkpoint + " (" + std::to_string(src) + ", " + std::to_string(tgt) + ")");
  const io::File file = io::File::open_read(checkpoint);
  for (const auto& [dataset, vocab] : {std::pair{"/vocab/src", &vocabs.src}, std::pair{"/vocab/tgt", &vocabs.tgt}})
    if (file.exists(dataset) && data::read_vocab(file, dataset).tokens() != vocab->tokens())
      throw FormatError(data.display_name() + ": its vocabulary differs from " + checkpoint + "'s '" + dataset +
                        "' (the same size, other tokens or another order): the model was trained on another data set");
}

std::map<std::string, io::AttrValue> resumed_config(const std::string& checkpoint, const std::string& kind,
                                                    const io::File& data, const Vocabs& vocabs) {
  std::map<std::string, io::AttrValue> config = io::load_checkpoint(checkpoint, kind).config;
  check_resumed_vocabs(config, checkpoint, data, vocabs);
  return config;
}

int64_t generation_limit(int64_t max_len, const data::PaddedBatch& src) {
  return max_len > 0 ? max_len : src.tokens.dim(1) + 50;
}

EvalResult evaluate_split(int64_t n, const std::vector<std::vector<int64_t>>& batches,
                          const std::function<EvalResult(std::span<const int64_t>)>& run) {
  const SplitOutput all = run_split(n, batches, [&](std::span<const int64_t> index) {
    const EvalResult r = run(index);
    BatchOutput out;
    const metrics::AccuracyCounts& a = r.accuracy;
    for (const int64_t c : {a.correct_tokens, a.tokens, a.correct_sequences, a.sequences})
      out.sums.push_back(static_cast<double>(c));
    append_doubles(r.stats, r.stats.sums.size(), out.sums);
    return out;
  });
  EvalResult out;
  if (all.sums.size() < 4) return out;
  const std::span<const double> v(all.sums);
  out.accuracy = {.correct_tokens = static_cast<int64_t>(v[0]), .tokens = static_cast<int64_t>(v[1]),
                  .correct_sequences = static_cast<int64_t>(v[2]), .sequences = static_cast<int64_t>(v[3])};
  out.stats = stats_from_doubles(v.subspan(4));
  return out;
}

Translation translate_split(const data::TokenSplit& split, int64_t max_tokens, const BatchDecoder& decode) {
  if (!split.has_src()) throw ConfigError("translate: the split '" + split.name + "' has no sources");
  const int64_t n = split.size();
  if (n == 0) return {};
  const std::string attention = "attention/", output = "output/";
  const SplitOutput all = run_split(n, split_batches(ints(split.src_len), max_tokens),
                                    [&](std::span<const int64_t> index) {
                                      decode::Decoded r = decode(data::gather_batch(split.src, split.src_len, index));
                                      BatchOutput out;
                                      add_token_lists(out, r.tokens, r.scores);
                                      for (auto& [name, t] : r.attention)
                                        out.tensors.emplace_back(attention + name, std::move(t));
                                      for (auto& [name, t] : r.outputs)
                                        out.tensors.emplace_back(output + name, std::move(t));
                                      return out;
                                    });
  Translation out;
  read_token_lists(all, n, out.tokens, out.scores);
  for (const auto& [name, t] : all.tensors)
    if (name.starts_with(attention))
      out.attention.emplace_back(name.substr(attention.size()), t);
    else if (name.starts_with(output))
      out.outputs.emplace_back(name.substr(output.size()), t);
  if (split.has_tgt()) out.accuracy = reference_accuracy(out.tokens, split);
  return out;
}

void write_translation(io::File& file, const Translation& tr, const data::TokenSplit& split, const data::Vocab& src_vocab,
                       const data::Vocab& tgt_vocab) {
  const auto n = static_cast<int64_t>(tr.tokens.size());
  const data::PaddedBatch pred = data::pad_sequences(tr.tokens, /*min_len=*/1);
  std::vector<std::string> text, detok;
  text.reserve(static_cast<size_t>(n));
  detok.reserve(static_cast<size_t>(n));
  for (const auto& t : tr.tokens) {
    const std::vector<std::string> words = tgt_vocab.decode(t);
    text.push_back(data::join_tokens(words));
    detok.push_back(tgt_vocab.detokenize(words));
  }
  file.write("/predictions", pred.tokens);
  file.write("/predictions_len", pred.lengths);
  file.write_strings("/predictions_text", text);
  file.write_strings("/predictions_detok", detok);
  file.write("/scores", Tensor::from({n}, tr.scores));
  if (split.has_src()) {
    file.write("/src", split.src.all());
    file.write("/src_len", split.src_len);
  }
  write_vocabs(file, src_vocab, tgt_vocab);
  for (const auto& [name, weights] : tr.attention) file.write("/attention/" + name, weights);
  for (const auto& [name, values] : tr.outputs) file.write("/" + name, values);
  file.set_attr("/metrics", "sentences", n);
  if (tr.accuracy.sequences > 0) {
    file.set_attr("/metrics", "sequence_accuracy", tr.accuracy.sequence_accuracy());
    file.set_attr("/metrics", "token_accuracy", tr.accuracy.token_accuracy());
  }
}

EpochMetric valid_bleu(const data::TokenSplit& valid, std::function<Translation(const data::TokenSplit&)> translate) {
  if (!valid.has_src() || !valid.has_tgt())
    throw ConfigError("valid_bleu: the split '" + valid.name + "' needs sources and targets");
  return {"bleu", "BLEU", [&valid, translate = std::move(translate)] {
            const Translation t = translate(valid);
            const Tensor tgt = valid.tgt.all();
            const int64_t T = tgt.dim(1);
            metrics::BleuStats stats;
            for (int64_t i = 0; i < valid.size(); ++i) {
              const int32_t* row = tgt.idata() + i * T;
              const std::vector<int32_t> ref(row, row + valid.tgt_len.idata()[i] - 1);   // without EOS
              stats += metrics::bleu_stats(t.tokens[static_cast<size_t>(i)], ref);
            }
            return metrics::bleu_score(stats).bleu;
          }};
}

}  // namespace attn::train

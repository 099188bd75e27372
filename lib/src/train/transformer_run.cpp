// The Transformer on token data sets: training task, evaluation, translation, model files
// (transformer_run.hpp).
#include "attn/train/transformer_run.hpp"

#include <algorithm>
#include <cstring>

#include "attn/core/error.hpp"
#include "attn/data/batching.hpp"
#include "attn/data/tokenizer.hpp"
#include "attn/train/checkpoints.hpp"

namespace attn::train {
namespace {

using models::TransformerArch;

constexpr const char* kKind = "transformer";
constexpr uint64_t kValidMaskSeed = 0x6d61736b;   // "mask": the validation set's fixed masking

BatchStats to_stats(const models::LossStats& s) { return {s.loss_sum, s.nll_sum, s.tokens, s.correct}; }

std::span<const int32_t> ints(const Tensor& t) { return {t.idata(), static_cast<size_t>(t.numel())}; }

// Batches of a whole split in length order (no shuffling), for evaluation and decoding.
std::vector<std::vector<int64_t>> ordered_batches(std::span<const int32_t> lengths, int64_t max_tokens) {
  return data::make_batches(lengths, {.max_tokens = max_tokens, .max_batch = 0, .shuffle = false, .seed = 0}, 0);
}

// pred[b, t] = argmax_v logits[b, t, v].   logits: [B, T, V] -> int32 [B, T].
Tensor argmax_last(const Tensor& logits) {
  const int64_t V = logits.dim(-1), rows = logits.numel() / V;
  Tensor pred({logits.dim(0), logits.dim(1)}, DType::i32);
  const float* x = logits.data();
  for (int64_t r = 0; r < rows; ++r)
    pred.idata()[r] = static_cast<int32_t>(std::max_element(x + r * V, x + (r + 1) * V) - (x + r * V));
  return pred;
}

// The vocabularies a model file carries, checked against the model's sizes.
data::Vocab read_model_vocab(const io::File& file, const std::string& dataset, int64_t want) {
  data::Vocab v = data::read_vocab(file, dataset);
  if (want > 0 && v.size() != want)
    throw FormatError(file.display_name() + ": dataset '" + dataset + "' has " + std::to_string(v.size()) +
                      " tokens but the model's /config says " + std::to_string(want));
  return v;
}

// Copies a per-batch attention tensor [B, H, Tb, Kb] into rows `index` of out [N, H, T, K].
void scatter_attention(const Tensor& part, std::span<const int64_t> index, Tensor& out) {
  const int64_t H = part.dim(1), Tb = part.dim(2), Kb = part.dim(3);
  const int64_t T = out.dim(2), K = out.dim(3);
  for (size_t b = 0; b < index.size(); ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < Tb; ++t)
        std::memcpy(out.data() + ((index[b] * H + h) * T + t) * K,
                    part.data() + ((static_cast<int64_t>(b) * H + h) * Tb + t) * Kb,
                    static_cast<size_t>(Kb) * sizeof(float));
}

}  // namespace

TokenSplitRequest transformer_request(const models::TransformerConfig& c) {
  switch (c.arch) {
    case TransformerArch::encdec: return {.src = true, .tgt = true, .src_vocab = c.src_vocab, .tgt_vocab = c.tgt_vocab};
    case TransformerArch::lm: return {.src = false, .tgt = true, .src_vocab = 0, .tgt_vocab = c.tgt_vocab};
    case TransformerArch::mlm: return {.src = true, .tgt = false, .src_vocab = c.tgt_vocab, .tgt_vocab = 0};
  }
  throw ConfigError("transformer: unknown architecture");
}

std::vector<int32_t> transformer_lengths(TransformerArch arch, const TokenSplit& split) {
  switch (arch) {
    case TransformerArch::encdec: return data::pair_lengths(split.src_len, split.tgt_len);
    case TransformerArch::lm: return {ints(split.tgt_len).begin(), ints(split.tgt_len).end()};
    case TransformerArch::mlm: return {ints(split.src_len).begin(), ints(split.src_len).end()};
  }
  throw ConfigError("transformer: unknown architecture");
}

models::TokenBatch make_token_batch(TransformerArch arch, const TokenSplit& split, std::span<const int64_t> index) {
  models::TokenBatch batch;
  if (arch != TransformerArch::lm) {
    data::PaddedBatch src = data::gather_batch(split.src, split.src_len, index);
    batch.src = src.tokens, batch.src_len = src.lengths;
  }
  if (arch != TransformerArch::mlm) {
    data::PaddedBatch tgt = data::gather_batch(split.tgt, split.tgt_len, index);
    batch.tgt = tgt.tokens, batch.tgt_len = tgt.lengths;
  }
  return batch;
}

TrainTask transformer_task(models::Transformer& model, const TokenSplit& train, const TokenSplit* valid,
                           const data::Vocab& src_vocab, const data::Vocab& tgt_vocab) {
  const models::TransformerConfig& c = model.config();
  const TransformerArch arch = c.arch;
  TrainTask task;
  task.kind = kKind;
  task.config = c.to_attrs();
  task.params = model.params();
  task.train_lengths = transformer_lengths(arch, train);
  task.train_batch = [&model, &train, arch](std::span<const int64_t> index, Rng& rng) {
    models::TokenBatch batch = make_token_batch(arch, train, index);
    if (arch == TransformerArch::mlm)
      batch = models::mask_tokens(batch, rng, model.mask_token_id(), model.config().tgt_vocab);
    return to_stats(model.train_step(batch, rng));
  };
  if (valid) {
    task.valid_lengths = transformer_lengths(arch, *valid);
    task.valid_batch = [&model, valid, arch](std::span<const int64_t> index) {
      models::TokenBatch batch = make_token_batch(arch, *valid, index);
      if (arch == TransformerArch::mlm) {
        Rng rng = Rng(kValidMaskSeed).fork(static_cast<uint64_t>(index.front()));
        batch = models::mask_tokens(batch, rng, model.mask_token_id(), model.config().tgt_vocab);
      }
      return to_stats(model.evaluate(batch));
    };
  }
  task.write_extra = [&src_vocab, &tgt_vocab](io::File& file) {
    data::write_vocab(file, "/vocab/src", src_vocab);
    data::write_vocab(file, "/vocab/tgt", tgt_vocab);
  };
  return task;
}

TransformerFile load_transformer(const std::string& path) {
  const io::File file = io::File::open_read(path);
  io::Checkpoint ckpt = io::read_checkpoint(file, kKind);
  const models::TransformerConfig config = models::TransformerConfig::from_attrs(ckpt.config);
  Rng init(0);   // every value is overwritten by the file's
  models::Transformer model(config, init);
  io::restore_params(ckpt.params, model.params(), file.display_name());
  ckpt.params.clear();
  ckpt.optimizer.clear();
  const int64_t src_size = config.arch == TransformerArch::encdec ? config.src_vocab : 0;
  data::Vocab src = read_model_vocab(file, "/vocab/src", src_size);
  data::Vocab tgt = read_model_vocab(file, "/vocab/tgt", config.tgt_vocab);
  return {std::move(model), std::move(src), std::move(tgt), std::move(ckpt)};
}

EvalResult evaluate_transformer(const models::Transformer& model, const TokenSplit& split, int64_t max_tokens) {
  const TransformerArch arch = model.config().arch;
  EvalResult out;
  for (const auto& index : ordered_batches(transformer_lengths(arch, split), max_tokens)) {
    models::TokenBatch batch = make_token_batch(arch, split, index);
    if (arch == TransformerArch::mlm) {   // the masked tokens only: no sequence accuracy
      Rng rng = Rng(kValidMaskSeed).fork(static_cast<uint64_t>(index.front()));
      batch = models::mask_tokens(batch, rng, model.mask_token_id(), model.config().tgt_vocab);
      out.stats += to_stats(model.evaluate(batch));
      continue;
    }
    out.stats += to_stats(model.evaluate(batch));
    out.accuracy += metrics::count_correct(argmax_last(model.logits(batch)), batch.tgt, batch.tgt_len);
  }
  return out;
}

Translation translate(const models::Transformer& model, const TokenSplit& split, const TranslateOptions& options) {
  if (model.config().arch != TransformerArch::encdec)
    throw ConfigError("translate needs an encoder-decoder model (arch encdec), this one is '" +
                      std::string(models::arch_name(model.config().arch)) + "'; use generate for a language model");
  if (!split.has_src()) throw ConfigError("translate: the split '" + split.name + "' has no sources");
  const int64_t n = split.size();
  Translation out;
  out.tokens.resize(static_cast<size_t>(n));
  out.scores.resize(static_cast<size_t>(n));
  struct Part { std::vector<int64_t> index; decode::DecodeResult result; };
  std::vector<Part> parts;
  for (auto& index : ordered_batches(ints(split.src_len), options.max_tokens)) {
    const data::PaddedBatch src = data::gather_batch(split.src, split.src_len, index);
    decode::DecodeOptions d = options.decode;
    if (d.max_len <= 0) d.max_len = src.tokens.dim(1) + 50;   // the batch's longest source + 50
    decode::DecodeResult r = d.beam > 1 ? decode::beam_search(model, src.tokens, src.lengths, d)
                                        : decode::greedy(model, src.tokens, src.lengths, d);
    for (size_t b = 0; b < index.size(); ++b) {
      out.tokens[static_cast<size_t>(index[b])] = std::move(r.tokens[b]);
      out.scores[static_cast<size_t>(index[b])] = r.scores[b];
    }
    if (options.decode.want_attention) parts.push_back({std::move(index), std::move(r)});
  }

  if (options.decode.want_attention && !parts.empty()) {
    // One tensor per layer over all sentences, padded to the longest decoder and source lengths.
    const Part& first = parts.front();
    const int64_t H = first.result.self_attention.at(0).dim(1);
    int64_t T = 0, S = 0;
    for (const Part& p : parts) {
      T = std::max(T, p.result.self_attention.at(0).dim(2));
      if (!p.result.cross_attention.empty()) S = std::max(S, p.result.cross_attention.at(0).dim(3));
    }
    for (size_t l = 0; l < first.result.self_attention.size(); ++l) {
      out.self_attention.emplace_back(Shape{n, H, T, T});
      out.cross_attention.emplace_back(Shape{n, H, T, S});
      for (const Part& p : parts) {
        scatter_attention(p.result.self_attention[l], p.index, out.self_attention.back());
        scatter_attention(p.result.cross_attention[l], p.index, out.cross_attention.back());
      }
    }
  }

  if (split.has_tgt()) {   // exact match with the reference, EOS included
    const int64_t width = std::max<int64_t>(split.tgt.dim(1), [&] {
      size_t m = 0;
      for (const auto& t : out.tokens) m = std::max(m, t.size());
      return static_cast<int64_t>(m) + 1;
    }());
    Tensor pred({n, width}, DType::i32), ref({n, width}, DType::i32);
    for (int64_t i = 0; i < n; ++i) {
      const auto& t = out.tokens[static_cast<size_t>(i)];
      std::copy(t.begin(), t.end(), pred.idata() + i * width);
      pred.idata()[i * width + static_cast<int64_t>(t.size())] = data::kEos;
      std::memcpy(ref.idata() + i * width, split.tgt.idata() + i * split.tgt.dim(1),
                  static_cast<size_t>(split.tgt.dim(1)) * sizeof(int32_t));
    }
    out.accuracy = metrics::count_correct(pred, ref, split.tgt_len);
  }
  return out;
}

void write_translation(io::File& file, const Translation& tr, const TokenSplit& split, const data::Vocab& src_vocab,
                       const data::Vocab& tgt_vocab) {
  const auto n = static_cast<int64_t>(tr.tokens.size());
  const data::PaddedBatch pred = data::pad_sequences(tr.tokens, /*min_len=*/1);
  std::vector<std::string> text, detok;
  text.reserve(static_cast<size_t>(n));
  detok.reserve(static_cast<size_t>(n));
  for (const auto& t : tr.tokens) {
    const std::vector<std::string> words = tgt_vocab.decode(t);
    text.push_back(data::join_tokens(words));
    detok.push_back(data::detokenize(words));
  }
  file.write("/predictions", pred.tokens);
  file.write("/predictions_len", pred.lengths);
  file.write_strings("/predictions_text", text);
  file.write_strings("/predictions_detok", detok);
  file.write("/scores", Tensor::from({n}, tr.scores));
  if (split.has_src()) {
    file.write("/src", split.src);
    file.write("/src_len", split.src_len);
  }
  data::write_vocab(file, "/vocab/src", src_vocab);
  data::write_vocab(file, "/vocab/tgt", tgt_vocab);
  for (size_t l = 0; l < tr.self_attention.size(); ++l) {
    file.write("/attention/self/layer" + std::to_string(l), tr.self_attention[l]);
    file.write("/attention/cross/layer" + std::to_string(l), tr.cross_attention[l]);
  }
  file.set_attr("/metrics", "sentences", n);
  if (tr.accuracy.sequences > 0) {
    file.set_attr("/metrics", "sequence_accuracy", tr.accuracy.sequence_accuracy());
    file.set_attr("/metrics", "token_accuracy", tr.accuracy.token_accuracy());
  }
}

void average_transformers(const std::vector<std::string>& inputs, io::File& out, const std::string& created_by,
                          const std::string& command) {
  io::Checkpoint avg = average_checkpoints(inputs);
  if (avg.kind != kKind)
    throw FormatError(inputs.front() + ": a model of kind '" + avg.kind + "', expected '" + kKind + "'");
  avg.created_by = created_by;
  avg.command = command;
  io::write_checkpoint(out, avg);
  const io::File last = io::File::open_read(inputs.back());
  data::write_vocab(out, "/vocab/src", data::read_vocab(last, "/vocab/src"));
  data::write_vocab(out, "/vocab/tgt", data::read_vocab(last, "/vocab/tgt"));
}

}  // namespace attn::train

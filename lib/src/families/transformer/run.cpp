// The Transformer on token data sets: training task, evaluation, translation, model files
// (run.hpp).
#include "attn/families/transformer/run.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "attn/core/error.hpp"
#include "attn/core/thread_governor.hpp"
#include "attn/data/batching.hpp"
#include "attn/families/transformer/classifier.hpp"
#include "attn/families/transformer/nat.hpp"
#include "attn/train/checkpoints.hpp"
#include "attn/train/data_fingerprint.hpp"

namespace attn::transformer {
namespace {

constexpr const char* kKind = "transformer";
constexpr uint64_t kValidMaskSeed = 0x6d61736b;   // "mask": the validation set's fixed masking

std::span<const int32_t> ints(const Tensor& t) { return {t.idata(), static_cast<size_t>(t.numel())}; }

// Rows `index` as an mlm reads them, unmasked: [CLS] A [SEP] (B [SEP]) with their segments.
data::TokenBatch mlm_batch(const data::TokenSplit& split, std::span<const int64_t> index) {
  const data::TokenBatch rows = train::gather_token_batch(split, index);
  return bert_input(rows.src, rows.src_len, rows.segments);
}

// A cmlm model's rows as it trains on them: with the cut at </s>, targets padded with EOS.
data::TokenBatch nat_rows(const Transformer& model, const data::TokenSplit& split, std::span<const int64_t> index) {
  data::TokenBatch rows = train::gather_token_batch(split, index);
  return model.config().length_rule == LengthRule::eos ? eos_padded_targets(rows, model.config()) : rows;
}

// A cmlm model is validated on the inputs it decodes first: masks drawn as in training
// (uniform), or every position masked (all, glancing: decoded in one pass).
TargetMasking validation_masking(const TransformerConfig& c) {
  return c.target_masking == TargetMasking::uniform ? TargetMasking::uniform : TargetMasking::all;
}

}  // namespace

data::TokenSplitRequest transformer_request(const TransformerConfig& c) {
  switch (c.arch) {
    case TransformerArch::encdec:
    case TransformerArch::cmlm:
      return {.src = true, .tgt = true, .src_vocab = c.src_vocab, .tgt_vocab = c.tgt_vocab, .segments = false};
    case TransformerArch::lm:
      return {.src = false, .tgt = true, .src_vocab = 0, .tgt_vocab = c.tgt_vocab, .segments = false};
    case TransformerArch::mlm:
      return {.src = true, .tgt = false, .src_vocab = c.tgt_vocab, .tgt_vocab = 0, .segments = true};
  }
  throw ConfigError("transformer: unknown architecture");
}

train::Vocabs transformer_vocabs(TransformerArch arch, const train::Vocabs& data) {
  return arch == TransformerArch::mlm ? train::Vocabs{data.src, data.src} : data;
}

int64_t transformer_max_len(const train::TrainingData& data, int64_t wanted) {
  int64_t longest = 0;
  for (const data::TokenSplit* s : {&data.train, data.valid_or_null()})
    if (s)
      for (const data::Rows* t : {&s->src, &s->tgt})
        if (!t->empty()) longest = std::max(longest, t->dim(1));
  if (wanted > 0 && wanted < longest + 3)
    throw ConfigError("max_len " + std::to_string(wanted) + " is less than the longest example + 3 (" +
                      std::to_string(longest + 3) + ")");
  return wanted > 0 ? wanted : std::max<int64_t>(256, longest + 3);
}

std::vector<int32_t> transformer_lengths(TransformerArch arch, const data::TokenSplit& split) {
  switch (arch) {
    case TransformerArch::encdec:
    case TransformerArch::cmlm:
      return data::pair_lengths(split.src_len, split.tgt_len);
    case TransformerArch::lm:
      return {ints(split.tgt_len).begin(), ints(split.tgt_len).end()};
    case TransformerArch::mlm:
      return classifier_input_lengths(arch, split.src_len, split.segments);   // [CLS] A [SEP] (B [SEP])
  }
  throw ConfigError("transformer: unknown architecture");
}

train::TrainTask transformer_task(Transformer& model, const data::TokenSplit& train, const data::TokenSplit* valid,
                                  const data::Vocab& src_vocab, const data::Vocab& tgt_vocab,
                                  const MaskingOptions& masking) {
  const TransformerConfig& c = model.config();
  const TransformerArch arch = c.arch;
  train::TrainTask task;
  task.kind = kKind;
  task.config = c.to_attrs();
  task.params = model.params();
  describe_token_task(task);
  task.train_lengths = transformer_lengths(arch, train);
  task.train_batch = [&model, &train, arch, masking](std::span<const int64_t> index, Rng& rng) {
    if (arch == TransformerArch::cmlm) {
      const data::TokenBatch rows = nat_rows(model, train, index);
      const TargetMasking m = model.config().target_masking;
      return train::to_stats(model.train_step(m == TargetMasking::glancing
                                                  ? glancing_batch(model, rows, rng)
                                                  : cmlm_mask(rows, rng, model.mask_token_id(), m),
                                              rng));
    }
    if (arch == TransformerArch::mlm)
      return train::to_stats(model.train_step(
          mask_tokens(mlm_batch(train, index), rng, model.mask_token_id(), model.config().tgt_vocab, masking), rng));
    return train::to_stats(model.train_step(train::gather_token_batch(train, index), rng));
  };
  if (valid) {
    task.valid_lengths = transformer_lengths(arch, *valid);
    task.valid_batch = [&model, valid, arch, masking](std::span<const int64_t> index) {
      if (arch == TransformerArch::cmlm)
        return train::to_stats(
            model.evaluate(cmlm_mask_examples(nat_rows(model, *valid, index), kValidMaskSeed, index,
                                              model.mask_token_id(), validation_masking(model.config()))));
      if (arch == TransformerArch::mlm)
        return train::to_stats(model.evaluate(mask_examples(mlm_batch(*valid, index), kValidMaskSeed, index,
                                                            model.mask_token_id(), model.config().tgt_vocab, masking)));
      return train::to_stats(model.evaluate(train::gather_token_batch(*valid, index)));
    };
  }
  task.write_extra = [&src_vocab, &tgt_vocab](io::File& file) { train::write_vocabs(file, src_vocab, tgt_vocab); };
  if (arch == TransformerArch::cmlm)
    task.single_process_only = "a cmlm model's length loss is a mean over sentences, not over the masked tokens "
                               "the ranks' gradients are weighted by";
  return task;
}

std::vector<bool> read_mask_words(const std::string& path, const data::Vocab& vocab) {
  std::ifstream in(path);
  if (!in) throw IoError(path + ": cannot open the word list (" + std::strerror(errno) + ")");
  std::vector<bool> only(static_cast<size_t>(vocab.size()), false);
  bool any = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with('#')) continue;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      if (!vocab.contains(w))
        throw FormatError(path + ": the word '" + w + "' is not in the data set's vocabulary (" +
                          std::to_string(vocab.size()) + " tokens)");
      only[static_cast<size_t>(vocab.id(w))] = true;
      any = true;
    }
  }
  if (!any) throw FormatError(path + ": no words (expected words separated by white space)");
  return only;
}

TransformerFile load_transformer(const std::string& path) {
  return train::load_token_model<Transformer>(
      path, kKind, [](const Transformer& m) { return m.config().encoder_decoder() ? m.config().src_vocab : 0; },
      [](const Transformer& m) { return m.config().tgt_vocab; });
}

train::EvalResult evaluate_transformer(const Transformer& model, const data::TokenSplit& split, int64_t max_tokens) {
  const TransformerArch arch = model.config().arch;
  return train::evaluate_split(
      split.size(), train::split_batches(transformer_lengths(arch, split), max_tokens),
      [&](std::span<const int64_t> index) {
        train::EvalResult r;
        if (arch == TransformerArch::cmlm) {   // fixed masks, as validation: no sequence accuracy
          r.stats = train::to_stats(
              model.evaluate(cmlm_mask_examples(nat_rows(model, split, index), kValidMaskSeed, index,
                                                model.mask_token_id(), validation_masking(model.config()))));
          return r;
        }
        if (arch == TransformerArch::mlm) {   // the masked tokens only: no sequence accuracy
          r.stats = train::to_stats(model.evaluate(mask_examples(mlm_batch(split, index), kValidMaskSeed, index,
                                                                 model.mask_token_id(), model.config().tgt_vocab)));
          return r;
        }
        const data::TokenBatch batch = train::gather_token_batch(split, index);
        r.stats = train::to_stats(model.evaluate(batch));
        r.accuracy = train::argmax_accuracy(model.logits(batch), batch);
        return r;
      });
}

train::Translation translate(const Transformer& model, const data::TokenSplit& split,
                             const train::TranslateOptions& options, const MaskPredictOptions& nat) {
  if (!model.config().encoder_decoder())
    throw ConfigError("translate needs an encoder-decoder model (arch encdec or cmlm), this one is '" +
                      std::string(arch_name(model.config().arch)) + "'; use generate for a language model");
  if (model.config().arch == TransformerArch::cmlm) {
    if (options.decode.beam > 1)
      throw ConfigError("translate: beam search is autoregressive; a cmlm model decodes with mask-predict, whose "
                        "length beam decodes several target lengths (beam must be 1, got " +
                        std::to_string(options.decode.beam) + ")");
    check_mask_predict_options(model.config(), nat);
    MaskPredictOptions o = nat;
    o.want_attention = options.decode.want_attention;
    if (o.max_len == 0) o.max_len = options.decode.max_len;   // --max-len caps the lengths too
    return train::translate_split(split, options.max_tokens, [&](const data::PaddedBatch& src) {
      return mask_predict(model, src.tokens, src.lengths, o);
    });
  }
  return train::translate_split(split, options.max_tokens, [&](const data::PaddedBatch& src) {
    return train::decode_batch(model, src, options.decode);
  });
}

void average_transformers(const std::vector<std::string>& inputs, io::File& out, const std::string& created_by,
                          const std::string& command) {
  io::Checkpoint avg = train::average_checkpoints(inputs);
  if (avg.kind != kKind)
    throw FormatError(inputs.front() + ": a model of kind '" + avg.kind + "', expected '" + kKind + "'");
  avg.created_by = created_by;
  avg.command = command;
  io::write_checkpoint(out, avg);
  const io::File last = io::File::open_read(inputs.back());
  train::write_vocabs(out, data::read_vocab(last, "/vocab/src"), data::read_vocab(last, "/vocab/tgt"));
  // The data the checkpoints were trained on, so that --resume from the average checks it too.
  if (const std::optional<train::DataFingerprint> fp = train::read_fingerprint(last))
    train::write_fingerprint(out, *fp);
}

}  // namespace attn::transformer

// The RNN encoder-decoder on token data sets: training task, evaluation, translation, model
// files (run.hpp).
#include "attn/families/seq2seq/run.hpp"

#include <algorithm>

#include "attn/core/thread_governor.hpp"
#include "attn/data/batching.hpp"

namespace attn::seq2seq {
namespace {

constexpr const char* kKind = "seq2seq";

}  // namespace

data::TokenSplitRequest seq2seq_request(const Seq2SeqConfig& c) {
  return {.src = true, .tgt = true, .src_vocab = c.src_vocab, .tgt_vocab = c.tgt_vocab};
}

int64_t longest_source(const train::TrainingData& data) {
  int64_t m = 0;
  for (const data::TokenSplit* s : {&data.train, data.valid_or_null()})
    if (s && s->has_src())
      for (int64_t i = 0; i < s->src_len.numel(); ++i) m = std::max<int64_t>(m, s->src_len.idata()[i]);
  return m;
}

train::TrainTask seq2seq_task(Seq2Seq& model, const data::TokenSplit& train, const data::TokenSplit* valid,
                              const data::Vocab& src_vocab, const data::Vocab& tgt_vocab) {
  train::TrainTask task;
  task.kind = kKind;
  task.config = model.config().to_attrs();
  task.params = model.params();
  describe_token_task(task);
  task.train_lengths = data::pair_lengths(train.src_len, train.tgt_len);
  task.train_batch = [&model, &train](std::span<const int64_t> index, Rng& rng) {
    return train::to_stats(model.train_step(train::gather_token_batch(train, index), rng));
  };
  if (valid) {
    task.valid_lengths = data::pair_lengths(valid->src_len, valid->tgt_len);
    task.valid_batch = [&model, valid](std::span<const int64_t> index) {
      return train::to_stats(model.evaluate(train::gather_token_batch(*valid, index)));
    };
  }
  task.write_extra = [&src_vocab, &tgt_vocab](io::File& file) { train::write_vocabs(file, src_vocab, tgt_vocab); };
  return task;
}

Seq2SeqFile load_seq2seq(const std::string& path) {
  return train::load_token_model<Seq2Seq>(
      path, kKind, [](const Seq2Seq& m) { return m.config().src_vocab; },
      [](const Seq2Seq& m) { return m.config().tgt_vocab; });
}

train::EvalResult evaluate_seq2seq(const Seq2Seq& model, const data::TokenSplit& split, int64_t max_tokens) {
  return train::evaluate_split(
      split.size(), train::split_batches(data::pair_lengths(split.src_len, split.tgt_len), max_tokens),
      [&](std::span<const int64_t> index) {
        const data::TokenBatch batch = train::gather_token_batch(split, index);
        return train::EvalResult{.stats = train::to_stats(model.evaluate(batch)),
                                 .accuracy = train::argmax_accuracy(model.logits(batch), batch)};
      });
}

train::Translation translate(const Seq2Seq& model, const data::TokenSplit& split,
                             const train::TranslateOptions& options) {
  return train::translate_split(split, options.max_tokens, [&](const data::PaddedBatch& src) {
    return train::decode_batch(model, src, options.decode);
  });
}

}  // namespace attn::seq2seq

// The captioner's task, evaluation, captioning and files (run.hpp).
#include "attn/families/caption/run.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "attn/core/error.hpp"
#include "attn/core/thread_governor.hpp"
#include "attn/data/batching.hpp"
#include "attn/data/tokenizer.hpp"
#include "attn/metrics/bleu.hpp"
#include "attn/train/model_file.hpp"
#include "attn/train/split_run.hpp"

namespace attn::caption {
namespace {

constexpr const char* kKind = "captioner";
constexpr const char* kEntropyPenalty = "entropy_penalty";   // the start phase's name (/state)
enum Sum : size_t { kNll, kCorrect, kSequencesCorrect, kPenalty };

double ratio(double num, double den) { return den > 0 ? num / den : NAN; }

// What a model file holds beside its parameters: the buffers (batch normalisation's running
// statistics) as /buffers/<name>.
void write_buffers(io::File& file, Captioner& model) {
  for (const auto& [name, tensor] : model.buffers()) file.write("/buffers/" + name, *tensor);
}
void read_buffers(const io::File& file, Captioner& model) {
  for (const auto& [name, tensor] : model.buffers()) {
    const std::string path = "/buffers/" + name;
    if (!file.exists(path))
      throw FormatError(file.display_name() + ": no dataset '" + path + "' (the model's batch normalisation statistics)");
    const Tensor t = file.read(path, DType::f32, tensor->shape());
    for (const float v : t.values())
      if (!std::isfinite(v)) throw DataError(file.display_name() + ": '" + path + "' holds a non-finite value");
    *tensor = t;
  }
}
// The buffers, and whether the entropy penalty was still on (on unless the file says it ended).
void read_model_state(const io::File& file, Captioner& model) {
  read_buffers(file, model);
  model.set_entropy_penalty(train::phase_on(file, kEntropyPenalty, true));
}

// Row t < tgt_len - 1 of caption i of tgt [N, T]: its words without EOS.
std::vector<int32_t> reference(const Tensor& tgt, const Tensor& tgt_len, int64_t i) {
  const int32_t* row = tgt.idata() + i * tgt.dim(1);
  return {row, row + tgt_len.idata()[i] - 1};
}

}  // namespace

train::BatchStats to_stats(const CaptionStats& s) {
  train::BatchStats b;
  b.loss_sum = s.loss_sum;
  b.count = static_cast<double>(s.tokens);
  b.units = s.sequences;
  b.sums = {s.nll_sum, static_cast<double>(s.correct), static_cast<double>(s.sequences_correct), s.penalty_sum};
  return b;
}

double caption_perplexity(const train::BatchStats& s) { return s.count > 0 ? std::exp(s.sum(kNll) / s.count) : NAN; }
double caption_token_accuracy(const train::BatchStats& s) { return ratio(s.sum(kCorrect), s.count); }
double caption_sequence_accuracy(const train::BatchStats& s) {
  return ratio(s.sum(kSequencesCorrect), static_cast<double>(s.units));
}

CaptionBatch gather_caption_batch(const CaptionSplit& split, std::span<const int64_t> index) {
  CaptionBatch batch;
  const data::PaddedBatch tgt = data::gather_batch(split.tgt, split.tgt_len, index);
  batch.tgt = tgt.tokens;
  batch.tgt_len = tgt.lengths;
  batch.images = split.images.gather(index);
  return batch;
}

void check_caption_data(const CaptionerConfig& c, const data::Vocab& data_vocab, const CaptionSplit& split,
                        const std::string& file, const data::Vocab* model_vocab) {
  if (data_vocab.size() != c.vocab || (model_vocab != nullptr && data_vocab.tokens() != model_vocab->tokens()))
    throw FormatError(file + ": the data set's vocabulary (" + std::to_string(data_vocab.size()) +
                      " words) is not the model's (" + std::to_string(c.vocab) +
                      " words): the model was trained on another data set");
  const Shape want{split.size(), c.channels, c.height, c.width};
  if (split.images.shape() != want)
    throw FormatError(file + ": '/" + split.name + "/images' are " + to_string(split.images.shape()) +
                      ", the model takes " + to_string(want) + " (N, C, H, W)");
}

train::TrainTask caption_task(Captioner& model, const CaptionSplit& train, const CaptionSplit* valid,
                              const data::Vocab& vocab, const CaptionTraining& training) {
  if (vocab.size() != model.config().vocab)
    throw ConfigError("captioner: the vocabulary has " + std::to_string(vocab.size()) + " words, the model " +
                      std::to_string(model.config().vocab));
  train::TrainTask task;
  task.kind = kKind;
  task.config = model.config().to_attrs();
  task.params = model.params();
  task.unit = {.rate = "img", .plural = "images"};
  task.sums = kCaptionSums;
  task.metrics = {{"perplexity", "perplexity", caption_perplexity},
                  {"accuracy", "token accuracy", caption_token_accuracy},
                  {"sequence_accuracy", "sequence accuracy", caption_sequence_accuracy}};
  if (model.config().batch_norm)
    task.single_process_only = "batch normalisation normalises by its batch's statistics, which on several ranks "
                               "would be each shard's, and the ranks' running statistics would drift apart";
  task.train_lengths = train.lengths();
  task.train_batch = [&model, &train](std::span<const int64_t> index, Rng& rng) {
    return to_stats(model.train_step(gather_caption_batch(train, index), rng));
  };
  if (valid) {
    task.valid_lengths = valid->lengths();
    task.valid_batch = [&model, valid](std::span<const int64_t> index) {
      return to_stats(model.evaluate(gather_caption_batch(*valid, index)));
    };
  }
  if (training.alpha_entropy_epochs > 0)
    task.start_phases.push_back({.name = kEntropyPenalty,
                                 .epochs = training.alpha_entropy_epochs,
                                 .set = [&model](bool on) { model.set_entropy_penalty(on); }});
  task.write_extra = [&vocab, &model](io::File& file) {
    data::write_vocab(file, kCaptionVocab, vocab);
    write_buffers(file, model);
  };
  task.read_state = [&model](const io::File& file) { read_buffers(file, model); };
  return task;
}

CaptionerFile load_captioner(const std::string& path) {
  const io::File file = io::File::open_read(path);
  train::LoadedModel<Captioner> m = train::load_model<Captioner>(file, kKind);
  if (!file.exists(kCaptionVocab))
    throw FormatError(file.display_name() + ": no dataset '" + kCaptionVocab + "' (the model's vocabulary)");
  read_model_state(file, m.model);
  data::Vocab vocab = data::read_vocab(file, kCaptionVocab);
  if (vocab.size() != m.model.config().vocab)
    throw FormatError(file.display_name() + ": '" + kCaptionVocab + "' has " + std::to_string(vocab.size()) +
                      " words, the model's /config vocab is " + std::to_string(m.model.config().vocab));
  return {std::move(m.model), std::move(m.checkpoint), std::move(vocab)};
}

CaptionSplit read_captioner_split(const io::File& data, const std::string& split, const CaptionerFile& m) {
  CaptionSplit s = open_caption_split(data, split, m.vocab.size(), data::KeepData::automatic);
  check_caption_data(m.model.config(), read_caption_vocab(data), s, data.display_name(), &m.vocab);
  train::require_examples(s.size(), data.display_name(), split);
  return s;
}

double CaptionScores::attention_correctness() const {
  return ratio(static_cast<double>(peaks_inside), static_cast<double>(named_words));
}

CaptionScores evaluate_captioner(const Captioner& model, const CaptionSplit& split, int64_t batch_size) {
  const CaptionerConfig::Grid g = model.config().grid();
  const int64_t L = g.locations(), H = model.config().height, W = model.config().width;
  // Per batch: named words, peaks inside their box, then the BatchStats (split_run.hpp).
  const train::SplitOutput all = train::run_split(
      split.size(), train::split_batches(split.lengths(), 0, batch_size), [&](std::span<const int64_t> index) {
        const CaptionBatch batch = gather_caption_batch(split, index);
        Tensor alpha;
        const train::BatchStats stats = to_stats(model.evaluate(batch, split.has_boxes() ? &alpha : nullptr));
        int64_t named = 0, inside = 0;
        if (split.has_boxes()) {
          const int64_t T = batch.tgt.dim(1), Ts = split.tgt.dim(1);
          const Tensor boxes = split.boxes.gather(index);   // [B, Ts, 4]
          for (size_t b = 0; b < index.size(); ++b)
            for (int64_t t = 0; t < batch.tgt_len.idata()[b]; ++t) {
              const int32_t* box = boxes.idata() + (static_cast<int64_t>(b) * Ts + t) * 4;
              if (box[0] < 0) continue;
              const float* a = alpha.data() + (static_cast<int64_t>(b) * T + t) * L;
              const int64_t peak = std::max_element(a, a + L) - a;
              // The centre of the peak's cell, in pixels.
              const double cy = (static_cast<double>(peak / g.w) + 0.5) * static_cast<double>(H) /
                                static_cast<double>(g.h);
              const double cx = (static_cast<double>(peak % g.w) + 0.5) * static_cast<double>(W) /
                                static_cast<double>(g.w);
              ++named;
              inside += box[0] <= cy && cy < box[2] && box[1] <= cx && cx < box[3];
            }
        }
        train::BatchOutput out{.tensors = {}, .sums = {static_cast<double>(named), static_cast<double>(inside)}};
        train::append_doubles(stats, stats.sums.size(), out.sums);
        return out;
      });
  CaptionScores scores;
  if (all.sums.size() < 2) return scores;
  scores.named_words = static_cast<int64_t>(all.sums[0]);
  scores.peaks_inside = static_cast<int64_t>(all.sums[1]);
  scores.stats = train::stats_from_doubles(std::span<const double>(all.sums).subspan(2));
  return scores;
}

double Captions::sequence_accuracy() const {
  return ratio(static_cast<double>(exact), static_cast<double>(tokens.size()));
}

Captions caption_split(const Captioner& model, const CaptionSplit& split, decode::DecodeOptions options,
                       int64_t batch_size) {
  options.want_attention = true;
  if (split.size() == 0) throw DataError("captioning: the split '" + split.name + "' has no images");
  const CaptionerConfig::Grid g = model.config().grid();
  const train::SplitOutput all = train::run_split(
      split.size(), train::split_batches(split.lengths(), 0, batch_size), [&](std::span<const int64_t> index) {
        const Tensor images = gather_caption_batch(split, index).images;
        decode::Decoded r = options.beam > 1 ? beam_search(model, images, options) : greedy(model, images, options);
        train::BatchOutput out{.tensors = std::move(r.attention), .sums = {}};
        train::add_token_lists(out, r.tokens, r.scores);
        return out;
      });
  Captions out;
  read_token_lists(all, split.size(), out.tokens, out.scores);
  const Tensor& attention = all.at("attention");   // [N, Tmax, L]
  out.attention = attention.reshape({split.size(), attention.dim(1), g.h, g.w});
  metrics::BleuStats stats;
  const Tensor tgt = split.tgt.all();
  for (int64_t i = 0; i < split.size(); ++i) {
    const std::vector<int32_t> ref = reference(tgt, split.tgt_len, i);
    stats += metrics::bleu_stats(out.tokens[static_cast<size_t>(i)], ref);
    out.exact += out.tokens[static_cast<size_t>(i)] == ref;
  }
  const metrics::BleuScore bleu = metrics::bleu_score(stats);
  for (int n = 1; n <= 4; ++n) out.bleu[static_cast<size_t>(n - 1)] = metrics::bleu_n(bleu, n);
  return out;
}

std::vector<std::pair<std::string, double>> caption_test_scores(const std::string& path, const io::File& data) {
  if (!data.is_group("/test")) return {};
  const CaptionerFile m = load_captioner(path);
  const CaptionScores s = evaluate_captioner(m.model, read_captioner_split(data, "test", m), 64);
  return {{"test_sequence_accuracy", caption_sequence_accuracy(s.stats)}};
}

void write_captions(io::File& file, const Captions& c, const CaptionSplit& split, const data::Vocab& vocab) {
  const auto n = static_cast<int64_t>(c.tokens.size());
  const data::PaddedBatch pred = data::pad_sequences(c.tokens, /*min_len=*/1);
  std::vector<std::string> text;
  text.reserve(static_cast<size_t>(n));
  for (const auto& t : c.tokens) text.push_back(data::join_tokens(vocab.decode(t)));
  file.write("/predictions", pred.tokens);
  file.write("/predictions_len", pred.lengths);
  file.write_strings("/predictions_text", text);
  file.write("/scores", Tensor::from({n}, c.scores));
  file.write("/attention", c.attention);
  file.write("/images", split.images.all());
  file.write("/tgt", split.tgt.all());
  file.write("/tgt_len", split.tgt_len);
  if (split.has_boxes()) file.write("/boxes", split.boxes.all());
  data::write_vocab(file, kCaptionVocab, vocab);
  file.set_attr("/metrics", "images", n);
  file.set_attr("/metrics", "sequence_accuracy", c.sequence_accuracy());
  for (int k = 0; k < 4; ++k)
    file.set_attr("/metrics", "bleu" + std::to_string(k + 1), c.bleu[static_cast<size_t>(k)]);
}

}  // namespace attn::caption

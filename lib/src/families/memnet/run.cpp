// The memory network on bAbI: training task with linear start and random noise, evaluation,
// answers, model files (run.hpp).
#include "attn/families/memnet/run.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "attn/core/error.hpp"
#include "attn/core/thread_governor.hpp"
#include "attn/train/model_file.hpp"
#include "attn/train/split_run.hpp"

namespace attn::memnet {
namespace {

constexpr const char* kKind = "memnet";
constexpr const char* kLinearStart = "linear_start";   // the start phase's name (/state)

std::vector<int32_t> story_lengths(const QaSplit& s) {
  return {s.story_len.idata(), s.story_len.idata() + s.story_len.numel()};
}

// Adds the per-task counts of a batch's predictions.
void count_tasks(MemnetScores& scores, const QaSplit& split, std::span<const int64_t> index,
                 const Tensor& predictions) {
  for (size_t k = 0; k < index.size(); ++k) {
    const int64_t i = index[k];
    const int32_t task = split.task.idata()[i];
    if (task < 1 || task > 20) continue;
    ++scores.task_questions[task];
    if (predictions.idata()[k] == split.answer.idata()[i]) ++scores.task_correct[task];
  }
}

// A batch's scores as sums, and back (split_run.hpp): questions and correct answers per task,
// then the BatchStats.
void append_scores(const MemnetScores& s, std::vector<double>& out) {
  for (size_t t = 0; t < s.task_questions.size(); ++t) {
    out.push_back(static_cast<double>(s.task_questions[t]));
    out.push_back(static_cast<double>(s.task_correct[t]));
  }
  train::append_doubles(s.stats, s.stats.sums.size(), out);
}
MemnetScores scores_from(std::span<const double> v) {
  MemnetScores s;
  const size_t tasks = s.task_questions.size();
  if (v.size() < 2 * tasks) return s;
  for (size_t t = 0; t < tasks; ++t) {
    s.task_questions[t] = static_cast<int64_t>(v[2 * t]);
    s.task_correct[t] = static_cast<int64_t>(v[2 * t + 1]);
  }
  s.stats = train::stats_from_doubles(v.subspan(2 * tasks));
  return s;
}

}  // namespace

train::BatchStats to_stats(const MemN2NStats& s) {
  return {.loss_sum = s.loss_nats,
          .count = static_cast<double>(s.questions),
          .units = s.questions,
          .sums = {static_cast<double>(s.correct)}};
}

double answer_accuracy(const train::BatchStats& s) { return s.count > 0 ? s.sum(0) / s.count : NAN; }
double answer_error(const train::BatchStats& s) { return s.count > 0 ? 1.0 - s.sum(0) / s.count : NAN; }

void check_vocab(const MemN2NConfig& config, const data::Vocab& data_vocab, const std::string& file,
                 const data::Vocab* model_vocab) {
  if (data_vocab.size() != config.vocab_size)
    throw FormatError(file + ": dataset '" + kQaVocab + "' has " + std::to_string(data_vocab.size()) +
                      " words, the model " + std::to_string(config.vocab_size) +
                      ": the model was trained on another data set");
  if (model_vocab && model_vocab->tokens() != data_vocab.tokens())
    throw FormatError(file + ": dataset '" + kQaVocab +
                      "' differs from the model's vocabulary: the model was trained on another data set");
}

train::TrainTask memnet_task(MemN2N& model, const QaSplit& train, const QaSplit* valid, const data::Vocab& vocab,
                             const MemnetTraining& options) {
  if (vocab.size() != model.config().vocab_size)
    throw ConfigError("memnet: the vocabulary has " + std::to_string(vocab.size()) + " words, the model " +
                      std::to_string(model.config().vocab_size));
  train::TrainTask task;
  task.kind = kKind;
  task.config = model.config().to_attrs();
  task.params = model.params();
  task.unit = {.rate = "q", .plural = "questions"};
  task.sums = kMemnetSums;
  task.metrics = {{"accuracy", "accuracy", answer_accuracy}, {"error", "error", answer_error}};
  task.train_lengths = story_lengths(train);
  const bool noise = options.random_noise;
  task.train_batch = [&model, &train, noise](std::span<const int64_t> index, Rng& rng) {
    return to_stats(model.train_step(train.gather(index), noise ? &rng : nullptr));
  };
  if (valid) {
    task.valid_lengths = story_lengths(*valid);
    task.valid_batch = [&model, valid](std::span<const int64_t> index) {
      return to_stats(model.evaluate(valid->gather(index)).stats);
    };
  }
  model.set_linear_start(options.linear_start);   // the trainer switches it again as it runs
  if (options.linear_start)                       // the hops' softmax out, and the rate held, until it ends
    task.start_phases.push_back(
        {.name = kLinearStart, .epochs = options.linear_start_epochs, .holds_schedule = true, .set = [&model](bool on) {
           model.set_linear_start(on);
         }});
  task.write_extra = [&vocab](io::File& file) { data::write_vocab(file, kQaVocab, vocab); };
  return task;
}

MemnetFile load_memnet(const std::string& path) {
  const io::File file = io::File::open_read(path);
  train::LoadedModel<MemN2N> m = train::load_model<MemN2N>(file, kKind);
  m.model.set_linear_start(train::phase_on(file, kLinearStart, false));
  if (!file.exists(kQaVocab))
    throw FormatError(file.display_name() + ": no dataset '" + kQaVocab + "' (the model's vocabulary)");
  data::Vocab vocab = data::read_vocab(file, kQaVocab);
  check_vocab(m.model.config(), vocab, file.display_name());
  return {std::move(m.model), std::move(m.checkpoint), std::move(vocab)};
}

QaSplit read_memnet_split(const io::File& data, const std::string& split, const MemnetFile& m) {
  check_vocab(m.model.config(), read_qa_vocab(data), data.display_name(), &m.vocab);
  QaSplit s = open_qa_split(data, split, m.vocab.size(), data::KeepData::automatic);
  train::require_examples(s.size(), data.display_name(), split);
  return s;
}

std::vector<std::pair<std::string, double>> memnet_test_scores(const std::string& path, const io::File& data) {
  if (!data.is_group("/test")) return {};
  const MemnetFile m = load_memnet(path);
  return {{"test_error", answer_error(evaluate_memnet(m.model, read_memnet_split(data, "test", m), 32).stats)}};
}

int MemnetScores::tasks() const {
  int n = 0;
  for (int t = 1; t <= 20; ++t) n += task_questions[t] > 0;
  return n;
}

double MemnetScores::task_accuracy(int task) const {
  if (task < 1 || task > 20 || task_questions[task] == 0) return NAN;
  return static_cast<double>(task_correct[task]) / static_cast<double>(task_questions[task]);
}

MemnetScores evaluate_memnet(const MemN2N& model, const QaSplit& split, int64_t batch_size) {
  const train::SplitOutput all = train::run_split(
      split.size(), train::split_batches(story_lengths(split), 0, batch_size), [&](std::span<const int64_t> index) {
        const MemN2NResult r = model.evaluate(split.gather(index));
        MemnetScores scores;
        scores.stats = to_stats(r.stats);
        count_tasks(scores, split, index, r.predictions);
        train::BatchOutput b;
        append_scores(scores, b.sums);
        return b;
      });
  return scores_from(all.sums);
}

MemnetAnswers answer_memnet(const MemN2N& model, const QaSplit& split, int64_t batch_size) {
  MemnetAnswers out;
  const int64_t N = split.size(), Ms = split.memory_size(), H = model.config().hops;
  out.predictions = Tensor({N}, DType::i32);
  const train::SplitOutput all = train::run_split(
      N, train::split_batches(story_lengths(split), 0, batch_size), [&](std::span<const int64_t> index) {
        MemN2NResult r = model.answer(split.gather(index));
        MemnetScores scores;
        scores.stats = to_stats(r.stats);
        count_tasks(scores, split, index, r.predictions);
        train::BatchOutput b{.tensors = {{"predictions", r.predictions}, {"attention", std::move(r.attention)}},
                             .sums = {}};
        append_scores(scores, b.sums);
        return b;
      });
  out.scores = scores_from(all.sums);
  if (N > 0) out.predictions = all.at("predictions");
  // Every question's attention over the split's Ms slots (a batch's memory is cut to its
  // longest story), so that row labels from /story always fit.
  out.attention = Tensor({N, H, Ms});
  if (N > 0) {
    const Tensor& a = all.at("attention");
    const int64_t S = a.dim(2);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < std::min(S, Ms); ++i)
          out.attention.data()[(n * H + h) * Ms + i] = a.data()[(n * H + h) * S + i];
  }
  return out;
}

void write_memnet_answers(io::File& file, const QaSplit& split, const data::Vocab& vocab,
                          const MemnetAnswers& answers) {
  const int64_t N = split.size();
  Tensor correct({N}, DType::i32);
  for (int64_t i = 0; i < N; ++i)
    correct.idata()[i] = answers.predictions.idata()[i] == split.answer.idata()[i] ? 1 : 0;
  file.write_all("/", {{"predictions", answers.predictions}, {"answer", split.answer}, {"correct", correct},
                       {"story", split.story.all()}, {"story_len", split.story_len}, {"question", split.question.all()},
                       {"support", split.support}, {"task", split.task}});
  file.write("/attention/hops", answers.attention);
  // The supporting facts as a first row before the hops: the notes' table in one dataset.
  const int64_t H = answers.attention.dim(1), Ms = answers.attention.dim(2), Ks = split.support.dim(1);
  Tensor table({N, H + 1, Ms});
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < Ks; ++k) {
      const int32_t slot = split.support.idata()[n * Ks + k];
      if (slot >= 0 && slot < Ms) table.data()[n * (H + 1) * Ms + slot] = 1.0f;
    }
    std::copy_n(answers.attention.data() + n * H * Ms, H * Ms, table.data() + (n * (H + 1) + 1) * Ms);
  }
  file.write("/attention/support_hops", table);
  data::write_vocab(file, kQaVocab, vocab);
  const train::BatchStats& s = answers.scores.stats;
  file.set_attr("/metrics", "questions", static_cast<int64_t>(s.count));
  file.set_attr("/metrics", "loss", s.loss());
  file.set_attr("/metrics", "accuracy", answer_accuracy(s));
  file.set_attr("/metrics", "error", answer_error(s));
  Tensor per_task({20});
  for (int t = 1; t <= 20; ++t) per_task.data()[t - 1] = static_cast<float>(answers.scores.task_accuracy(t));
  file.write("/metrics/task_accuracy", per_task);
}

}  // namespace attn::memnet

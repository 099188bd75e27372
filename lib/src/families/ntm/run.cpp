// The NTM on sequence tasks: training task with a curriculum, evaluation, runs, model files,
// the LSTM baseline (run.hpp).
#include "attn/families/ntm/run.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "attn/core/error.hpp"
#include "attn/core/thread_governor.hpp"
#include "attn/train/split_run.hpp"

namespace attn::ntm {
namespace {

constexpr const char* kKind = "ntm";
constexpr const char* kLevelKey = "curriculum_level";

std::vector<int32_t> input_lengths(const data::SequenceSplit& s) {
  return {s.input_len.idata(), s.input_len.idata() + s.input_len.numel()};
}

// The curriculum's state: the input lengths present, ascending, and which one is the level.
struct Curriculum {
  std::vector<int32_t> levels;
  size_t at = 0;
  int32_t level() const { return levels[at]; }
};

// epoch_size sequences of `train` with input_len <= max_len in a random order that is a pure
// function of (seed, epoch), cut into batches of batch_size.
std::vector<std::vector<int64_t>> draw_epoch(const data::SequenceSplit& train, const NtmTraining& o, int32_t max_len,
                                             int64_t epoch) {
  std::vector<int64_t> eligible;
  for (int64_t i = 0; i < train.size(); ++i)
    if (train.input_len.idata()[i] <= max_len) eligible.push_back(i);
  const auto pool = static_cast<int64_t>(eligible.size());
  const int64_t n = o.epoch_size > 0 ? o.epoch_size : pool;
  Rng rng = Rng(o.seed).fork(static_cast<uint64_t>(epoch));
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(n));
  while (static_cast<int64_t>(order.size()) < n) {   // a fresh permutation of the pool each round
    for (int64_t i = pool - 1; i > 0; --i) std::swap(eligible[i], eligible[rng.uniform_int(i + 1)]);
    order.insert(order.end(), eligible.begin(), eligible.begin() + std::min(pool, n - static_cast<int64_t>(order.size())));
  }
  std::vector<std::vector<int64_t>> batches;
  for (int64_t i = 0; i < n; i += o.batch_size)
    batches.emplace_back(order.begin() + i, order.begin() + std::min(n, i + o.batch_size));
  return batches;
}

}  // namespace

train::BatchStats to_stats(const NtmStats& s) {
  return {.loss_sum = s.bce_nats / std::log(2.0),
          .count = static_cast<double>(s.sequences),
          .units = s.sequences,
          .sums = {static_cast<double>(s.bit_errors), static_cast<double>(s.bits),
                   static_cast<double>(s.sequences_correct)}};
}

double bit_errors_per_sequence(const train::BatchStats& s) { return s.count > 0 ? s.sum(0) / s.count : NAN; }
double bit_error_rate(const train::BatchStats& s) { return s.sum(1) > 0 ? s.sum(0) / s.sum(1) : NAN; }
double sequence_accuracy(const train::BatchStats& s) { return s.count > 0 ? s.sum(2) / s.count : NAN; }

void check_widths(const NtmConfig& c, const data::SequenceSplit& s, const std::string& file, const std::string& split) {
  auto check = [&](const char* dataset, int64_t found, int64_t want, const char* what) {
    if (found != want)
      throw FormatError(file + ": dataset '/" + split + "/" + dataset + "' has " + std::to_string(found) +
                        " channels, the model " + what + " " + std::to_string(want) +
                        " (a data set of another task or width?)");
  };
  check("inputs", s.input_width(), c.input_size, "reads");
  check("targets", s.output_width(), c.output_size, "writes");
}

train::TrainTask ntm_task(Ntm& model, const data::SequenceSplit& train, const data::SequenceSplit* valid,
                          const NtmTraining& options) {
  if (options.batch_size < 1) throw ConfigError("ntm: batch_size must be >= 1, got " + std::to_string(options.batch_size));
  if (options.epoch_size < 0) throw ConfigError("ntm: epoch_size must be >= 0, got " + std::to_string(options.epoch_size));
  train::TrainTask task;
  task.kind = kKind;
  task.config = model.config().to_attrs();
  task.params = model.params();
  task.unit = {.rate = "seq", .plural = "sequences"};
  task.sums = kNtmSums;
  task.metrics = {{"bit_errors", "bit errors per sequence", bit_errors_per_sequence},
                  {"bit_error_rate", "bit error rate", bit_error_rate},
                  {"sequence_accuracy", "sequence accuracy", sequence_accuracy}};
  task.train_lengths = input_lengths(train);
  task.train_batch = [&model, &train](std::span<const int64_t> index, Rng& rng) {
    return to_stats(model.train_step(train.gather(index), rng));
  };
  if (valid) {
    task.valid_lengths = input_lengths(*valid);
    task.valid_batch = [&model, valid](std::span<const int64_t> index) {
      return to_stats(model.evaluate(valid->gather(index)));
    };
  }
  auto curriculum = std::make_shared<Curriculum>();
  curriculum->levels = task.train_lengths;
  std::sort(curriculum->levels.begin(), curriculum->levels.end());
  curriculum->levels.erase(std::unique(curriculum->levels.begin(), curriculum->levels.end()), curriculum->levels.end());
  if (!options.curriculum) curriculum->at = curriculum->levels.size() - 1;   // every length from the start
  task.epoch_batches = [&train, options, curriculum](int64_t epoch) {
    return draw_epoch(train, options, curriculum->level(), epoch);
  };
  if (options.curriculum) {
    task.end_epoch = [options, curriculum](const train::EpochReport& r) {
      if (bit_error_rate(r.train) <= options.curriculum_threshold && curriculum->at + 1 < curriculum->levels.size())
        ++curriculum->at;
    };
    task.write_extra = [curriculum](io::File& file) {
      file.set_attr("/state", kLevelKey, int64_t{curriculum->level()});
    };
    task.read_state = [curriculum](const io::File& file) {
      const int64_t level = file.attr_int("/state", kLevelKey);
      const auto it = std::find(curriculum->levels.begin(), curriculum->levels.end(), level);
      if (it == curriculum->levels.end())
        throw FormatError(file.display_name() + ": /state curriculum_level " + std::to_string(level) +
                          " is no input length of the training set (resumed on other data?)");
      curriculum->at = static_cast<size_t>(it - curriculum->levels.begin());
    };
  }
  return task;
}

data::SequenceSplit read_ntm_split(const io::File& data, const std::string& split, const NtmConfig& config) {
  data::SequenceSplit s = data::open_sequence_split(data, split, data::KeepData::automatic);
  check_widths(config, s, data.display_name(), split);
  train::require_examples(s.size(), data.display_name(), split);
  return s;
}

NtmFile load_ntm(const std::string& path) { return train::load_model<Ntm>(io::File::open_read(path), kKind); }

train::BatchStats evaluate_ntm(const Ntm& model, const data::SequenceSplit& split, int64_t batch_size) {
  return train::evaluate([&](std::span<const int64_t> index) { return to_stats(model.evaluate(split.gather(index))); },
                         input_lengths(split), 0, batch_size);
}

NtmRunResult run_ntm(const Ntm& model, const data::SequenceSplit& split, int64_t batch_size) {
  train::SplitOutput all = train::run_split(
      split.size(), train::split_batches(input_lengths(split), 0, batch_size), [&](std::span<const int64_t> index) {
        NtmRun r = model.run(split.gather(index));
        train::BatchOutput b{.tensors = {{"outputs", std::move(r.outputs)}}, .sums = {}};
        if (model.config().read_heads > 0) b.tensors.emplace_back("read_weights", std::move(r.read_weights));
        if (model.config().write_heads > 0) b.tensors.emplace_back("write_weights", std::move(r.write_weights));
        const train::BatchStats s = to_stats(r.stats);
        train::append_doubles(s, s.sums.size(), b.sums);
        return b;
      });
  return {.tensors = std::move(all.tensors), .stats = train::stats_from_doubles(all.sums)};
}

void write_ntm_run(io::File& file, const data::SequenceSplit& split, const NtmRunResult& run) {
  file.write_all("/", {{"inputs", split.inputs.all()}, {"input_len", split.input_len}, {"targets", split.targets.all()},
                       {"target_len", split.target_len}});
  for (const auto& [name, t] : run.tensors) file.write("/" + name, t);
  file.set_attr("/metrics", "sequences", static_cast<int64_t>(run.stats.count));
  file.set_attr("/metrics", "bits_per_sequence", run.stats.loss());
  file.set_attr("/metrics", "bit_errors_per_sequence", bit_errors_per_sequence(run.stats));
  file.set_attr("/metrics", "bit_error_rate", bit_error_rate(run.stats));
  file.set_attr("/metrics", "sequence_accuracy", sequence_accuracy(run.stats));
}

int64_t parameter_count(const NtmConfig& config) {
  Rng init(0);
  Ntm model(config, init);
  int64_t n = 0;
  for (const Param* p : model.params()) n += p->value.numel();
  return n;
}

NtmConfig lstm_baseline(const NtmConfig& ntm, int64_t layers) {
  NtmConfig c = ntm;
  c.controller = NtmController::lstm;
  c.controller_layers = layers;
  c.read_heads = c.write_heads = 0;
  c.memory_init = NtmMemoryInit::constant;
  const int64_t target = parameter_count(ntm);
  auto count = [&](int64_t h) {
    c.controller_size = h;
    return parameter_count(c);
  };
  int64_t hi = 1;
  while (count(hi) < target) hi *= 2;
  int64_t lo = hi / 2;   // count(lo) < target <= count(hi), or hi == 1
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    (count(mid) < target ? lo : hi) = mid;
  }
  c.controller_size = hi;
  return c;
}

}  // namespace attn::ntm

// The training loop, its checkpoints and its resumption (trainer.hpp).
#include "attn/train/trainer.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <type_traits>
#include <variant>

#include "attn/core/error.hpp"
#include "attn/core/thread_governor.hpp"
#include "attn/data/batching.hpp"
#include "attn/dist/world.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/optim/clip.hpp"
#include "attn/train/checkpoints.hpp"
#include "attn/train/data_parallel.hpp"
#include "attn/train/rank_agreement.hpp"
#include "attn/train/split_run.hpp"
#include "start_phases.hpp"

namespace attn::train {
namespace {

// One named curve of /metrics, one entry per epoch.
struct Curve {
  std::string name;
  std::vector<float> values;
};

// Everything that changes during a run and that a checkpoint must carry besides the parameters
// and the optimizer's state.
struct RunState {
  int64_t step = 0;             // optimizer steps done
  int64_t epoch = 0;            // epochs completed
  int64_t epoch_batch = 0;      // batches of the current epoch done
  BatchStats epoch_train;       // their sums
  Rng rng;                      // the trainer's stream (dropout, sampling)
  std::vector<Curve> curves;    // per epoch, in curve_names order
  double train_seconds = 0;     // wall time inside training steps, over every resumed part
  int64_t train_units = 0;      // units of work trained on, likewise
};

constexpr const char* kSecondsCurve = "train_seconds";

// A task's epoch plan may assume a training example (the NTM's curriculum starts at the shortest
// length), so nothing plans an epoch of an empty set. The split readers refuse an empty /train
// first, naming the file (data::check_split_rows); this guards tasks built from other sources.
void require_train_examples(const TrainTask& task) {
  if (task.train_lengths.empty()) throw DataError("train: the training set is empty");
}

// The curve of the work trained on when each epoch ended: "trained_tokens", "trained_sequences".
std::string units_curve(const TrainTask& task) { return "trained_" + task.unit.plural; }

// Every curve of the task, in the order /metrics lists them and EpochReport::values gives them;
// then the units trained on and train_seconds (wall time, so unlike the others it differs between
// a resumed run and an uninterrupted one).
std::vector<std::string> curve_names(const TrainTask& task) {
  std::vector<std::string> names{"train_loss", "valid_loss"};
  for (const Metric& m : task.metrics) {
    names.push_back("train_" + m.name);
    names.push_back("valid_" + m.name);
  }
  for (const EpochMetric& m : task.epoch_metrics) names.push_back("valid_" + m.name);
  names.push_back(units_curve(task));
  names.push_back(kSecondsCurve);
  return names;
}

void validate(const TrainTask& task, const TrainConfig& c) {
  auto fail = [](const std::string& what) { throw ConfigError("train: " + what); };
  if (c.epochs < 0) fail("epochs must be >= 0, got " + std::to_string(c.epochs));
  if (c.max_steps < 0) fail("max_steps must be >= 0, got " + std::to_string(c.max_steps));
  if (c.epochs == 0 && c.max_steps == 0) fail("epochs and max_steps are both 0: the run would never stop");
  if (c.batch_size < 0) fail("batch_size must be >= 0, got " + std::to_string(c.batch_size));
  if (c.batch_size == 0 && c.max_tokens <= 0) fail("max_tokens must be > 0, got " + std::to_string(c.max_tokens));
  if (c.max_batch < 0) fail("max_batch must be >= 0, got " + std::to_string(c.max_batch));
  if (c.valid_max_tokens < 0) fail("valid_max_tokens must be >= 0, got " + std::to_string(c.valid_max_tokens));
  if (!(c.clip_value >= 0)) fail("clip_value must be >= 0 (0: no clipping), got " + std::to_string(c.clip_value));
  if (!(c.clip_norm >= 0)) fail("clip_norm must be >= 0 (0: no clipping), got " + std::to_string(c.clip_norm));
  if (c.checkpoint_every < 0) fail("checkpoint_every must be >= 0, got " + std::to_string(c.checkpoint_every));
  if (c.keep_checkpoints < 1) fail("keep_checkpoints must be >= 1, got " + std::to_string(c.keep_checkpoints));
  if (c.checkpoint_every > 0 && (c.model_path.empty() || c.model_path == "-"))
    fail("checkpoint_every needs a model file to write checkpoints next to, not '" + c.model_path + "'");
  if (task.kind.empty()) fail("the task has no model kind");
  if (task.params.empty()) fail("the model has no parameters");
  if (!task.train_batch) fail("the task has no train_batch function");
  require_train_examples(task);
  if (!task.valid_lengths.empty() && !task.valid_batch)
    fail("the task has validation examples but no valid_batch function");
  for (const Metric& m : task.metrics)
    if (m.name.empty() || !m.of) fail("a metric of the task has no name or no function");
  for (const EpochMetric& m : task.epoch_metrics)
    if (m.name.empty() || !m.compute) fail("an epoch metric of the task has no name or no function");
}

// Validation sums (spread over the ranks) and every curve's entry for an epoch whose training
// sums are `train`.
EpochReport report_epoch(const TrainTask& task, const TrainConfig& c, DataParallel& dp, int64_t epoch, int64_t step,
                         bool partial, const BatchStats& train) {
  EpochReport r{.epoch = epoch, .step = step, .partial = partial, .train = train, .valid = {}, .values = {}};
  if (!task.valid_lengths.empty())
    r.valid = dp.evaluate(task.valid_batch, task.valid_lengths, c.valid_max_tokens ? c.valid_max_tokens : c.max_tokens,
                          c.batch_size);
  r.values.emplace_back("train_loss", train.loss());
  r.values.emplace_back("valid_loss", r.valid.loss());
  for (const Metric& m : task.metrics) {
    r.values.emplace_back("train_" + m.name, m.of(train));
    r.values.emplace_back("valid_" + m.name, r.valid.count > 0 ? m.of(r.valid) : NAN);
  }
  for (const EpochMetric& m : task.epoch_metrics) r.values.emplace_back("valid_" + m.name, m.compute());
  return r;
}

// Appends one epoch's entries, the units trained on and train_seconds to the curves.
void record(std::vector<Curve>& curves, const EpochReport& r, const RunState& s) {
  for (size_t k = 0; k < r.values.size(); ++k) curves[k].values.push_back(static_cast<float>(r.values[k].second));
  curves[curves.size() - 2].values.push_back(static_cast<float>(s.train_units));
  curves.back().values.push_back(static_cast<float>(s.train_seconds));
}

void write_metrics(io::File& file, const RunState& s, const std::optional<EpochReport>& partial) {
  std::vector<Curve> curves = s.curves;
  if (partial) record(curves, *partial, s);
  const auto n = static_cast<int64_t>(curves.front().values.size());
  if (n > 0)
    for (const Curve& c : curves) file.write("/metrics/" + c.name, Tensor::from({n}, c.values));
  file.set_attr("/metrics", "epochs", n);
  file.set_attr("/metrics", "last_epoch_partial", int64_t{partial ? 1 : 0});
}

// What a model file holds: the trained parameters, then the frozen ones.
ParamList all_params(const TrainTask& task) {
  ParamList all = task.params;
  all.insert(all.end(), task.frozen.begin(), task.frozen.end());
  return all;
}

std::string sum_key(const std::string& name) { return "epoch_" + name + "_sum"; }

void save(const std::string& path, const TrainTask& task, const optim::Optimizer& opt, const RunState& s,
          const detail::StartPhases& phases, const std::optional<EpochReport>& partial) {
  io::Checkpoint ckpt;
  ckpt.kind = task.kind;
  ckpt.config = task.config;
  ckpt.params = io::collect_params(all_params(task));
  for (optim::NamedTensor& t : opt.state()) ckpt.optimizer.emplace(std::move(t.name), std::move(t.value));
  ckpt.step = s.step;
  ckpt.epoch = s.epoch;
  ckpt.rng = s.rng.state();
  ckpt.created_by = task.created_by;
  ckpt.command = task.command;

  io::File file = io::File::create(path);
  io::write_checkpoint(file, ckpt);
  file.set_attr("/state", "epoch_batch", s.epoch_batch);
  file.set_attr("/state", "epoch_loss_sum", s.epoch_train.loss_sum);
  file.set_attr("/state", "epoch_count", s.epoch_train.count);
  file.set_attr("/state", "epoch_units", s.epoch_train.units);
  for (size_t k = 0; k < task.sums.size(); ++k) file.set_attr("/state", sum_key(task.sums[k]), s.epoch_train.sum(k));
  file.set_attr("/state", "train_seconds", s.train_seconds);
  file.set_attr("/state", "train_units", s.train_units);
  file.set_attr("/state", "unit", task.unit.plural);
  phases.write(file);
  write_metrics(file, s, partial);
  if (!task.data.empty()) write_fingerprint(file, task.data);
  if (task.write_extra) task.write_extra(file);
  file.commit();
}

// Restores the parameters, the optimizer, the run state and the task's state from a file saved
// by save(), after checking that it was trained on the task's data and holds the optimizer's state.
void resume(const std::string& path, const TrainTask& task, const TrainConfig& config, optim::Optimizer& opt,
            RunState& s, detail::StartPhases& phases) {
  const io::File file = io::File::open_read(path);
  const io::Checkpoint ckpt = io::read_checkpoint(file, task.kind);
  if (!task.data.empty()) check_same_data(read_fingerprint(file), file.display_name(), task.data, config.allow_new_data);
  if (ckpt.optimizer.empty() && ckpt.step > 0 && !opt.slot_names().empty() && !config.reset_optimizer)
    throw DataError(file.display_name() + ": holds no /optimizer state (a model saved for use, or averaged), so " +
                    opt.kind() + "'s running averages would restart from zero and the run would not continue "
                    "as it was; give --reset-optimizer to continue with a fresh optimizer state");
  io::restore_params(ckpt.params, all_params(task), file.display_name());
  if (!config.reset_optimizer) {
    std::vector<optim::NamedTensor> state;
    for (const auto& [name, t] : ckpt.optimizer) state.push_back({name, t});
    opt.load_state(task.params, state);
  }
  s.step = ckpt.step;
  s.epoch = ckpt.epoch;
  s.rng.set_state(ckpt.rng);
  auto int_attr = [&](const std::string& key) { return file.has_attr("/state", key) ? file.attr_int("/state", key) : 0; };
  auto real_attr = [&](const std::string& key) {
    return file.has_attr("/state", key) ? file.attr_double("/state", key) : 0.0;
  };
  s.epoch_batch = int_attr("epoch_batch");
  s.epoch_train.loss_sum = real_attr("epoch_loss_sum");
  s.epoch_train.count = real_attr("epoch_count");
  s.epoch_train.units = int_attr("epoch_units");
  s.epoch_train.sums.clear();
  for (const std::string& name : task.sums) s.epoch_train.sums.push_back(real_attr(sum_key(name)));
  s.train_seconds = real_attr("train_seconds");
  s.train_units = int_attr("train_units");
  if (s.epoch_batch < 0 || s.step < 0 || s.epoch < 0)
    throw FormatError(file.display_name() + ": /state holds a negative step, epoch or epoch_batch");

  // The curves the task keeps; one the file lacks (another version, another metric) reads as NaN.
  const int64_t n = file.exists("/metrics") && file.has_attr("/metrics", "epochs") ? file.attr_int("/metrics", "epochs") : 0;
  for (Curve& c : s.curves) {
    const std::string dataset = "/metrics/" + c.name;
    if (n > 0 && file.exists(dataset)) {
      const Tensor t = file.read(dataset, DType::f32, {n});
      c.values.assign(t.data(), t.data() + n);
    } else {
      c.values.assign(static_cast<size_t>(n), NAN);
    }
  }
  const bool partial = n > 0 && file.has_attr("/metrics", "last_epoch_partial") &&
                       file.attr_int("/metrics", "last_epoch_partial") == 1;
  if (partial)   // the unfinished epoch's entry; the resumed run finishes the epoch
    for (Curve& c : s.curves) c.values.pop_back();
  phases.read(file);
  if (task.read_state) task.read_state(file);
}

// A /config value as text: a real as the shortest decimal that reads back as it.
std::string text_of(const io::AttrValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, std::get<double>(v));
  return std::string(buf, res.ptr);
}

std::string text_of(double v) { return text_of(io::AttrValue{v}); }

// An optimizer's float constant as the decimal it was written as (0.9, not 0.89999997615814209).
std::string text_of(float v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// The optimizer's kind and its kind's constants; its schedule's kind and constants.
std::string optimizer_text(const optim::OptimizerConfig& o) {
  std::string out = optim::optimizer_kind_name(o.kind);
  switch (o.kind) {
    case optim::OptimizerKind::sgd:
      out += " momentum " + text_of(o.sgd.momentum) + " nesterov " + std::to_string(o.sgd.nesterov) + " weight_decay " +
             text_of(o.sgd.weight_decay);
      break;
    case optim::OptimizerKind::rmsprop:
      out += " rho " + text_of(o.rmsprop.rho) + " eps " + text_of(o.rmsprop.eps) + " momentum " +
             text_of(o.rmsprop.momentum) + " centered " + std::to_string(o.rmsprop.centered) + " weight_decay " +
             text_of(o.rmsprop.weight_decay);
      break;
    case optim::OptimizerKind::adam:
    case optim::OptimizerKind::adamw:
      out += " beta1 " + text_of(o.adam.beta1) + " beta2 " + text_of(o.adam.beta2) + " eps " + text_of(o.adam.eps) +
             " weight_decay " + text_of(o.adam.weight_decay);
      break;
  }
  return out;
}

std::string schedule_text(const optim::Schedule& schedule) {
  return std::visit(
      [](const auto& s) -> std::string {
        using S = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<S, optim::ConstantLr>)
          return "constant " + text_of(s.lr);
        else if constexpr (std::is_same_v<S, optim::WarmupInverseSqrt>)
          return "inverse-sqrt d_model " + std::to_string(s.d_model) + " warmup " + std::to_string(s.warmup) +
                 " scale " + text_of(s.scale);
        else
          return "step " + text_of(s.lr0) + " x " + text_of(s.gamma) + " every " + std::to_string(s.step_size) +
                 " steps";
      },
      schedule);
}

// 16 hex digits of a hash of an epoch's batches (their sizes and example indices, in order).
std::string plan_hash(const std::vector<std::vector<int64_t>>& batches) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](uint64_t w) { h = (std::rotl(h, 5) ^ w) * 0x9E3779B97F4A7C15ULL; };
  for (const std::vector<int64_t>& b : batches) {
    mix(b.size());
    for (const int64_t i : b) mix(static_cast<uint64_t>(i));
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

// What the ranks of a data-parallel job must have alike before the first step (trainer.hpp,
// rank_agreement.hpp): what the task and the configuration resolved to, the state a --resume
// restored and the plan of the epoch it starts in. `first` is that epoch's batches.
std::vector<RankSetting> start_settings(const TrainTask& task, const TrainConfig& c, const RunState& s,
                                        const std::vector<std::vector<int64_t>>& first, int64_t total_steps) {
  std::vector<RankSetting> out{{"the model kind", task.kind}};
  for (const auto& [key, value] : task.config)
    if (std::find(task.rank_local.begin(), task.rank_local.end(), key) == task.rank_local.end())
      out.push_back({"/config " + key, text_of(value)});
  const std::pair<const char*, std::string> trainer[] = {
      {"epochs", std::to_string(c.epochs)},
      {"max_steps", std::to_string(c.max_steps)},
      {"batch_size", std::to_string(c.batch_size)},
      {"max_tokens", std::to_string(c.max_tokens)},
      {"max_batch", std::to_string(c.max_batch)},
      {"valid_max_tokens", std::to_string(c.valid_max_tokens)},
      {"seed", std::to_string(c.seed)},
      {"clip_value", text_of(c.clip_value)},
      {"clip_norm", text_of(c.clip_norm)},
      {"checkpoint_every", std::to_string(c.checkpoint_every)},
      {"keep_checkpoints", std::to_string(c.keep_checkpoints)},
      {"allow_new_data", std::to_string(c.allow_new_data)},
      {"reset_optimizer", std::to_string(c.reset_optimizer)},
  };
  for (const auto& [name, value] : trainer) out.push_back({std::string("the trainer's ") + name, value});
  out.push_back({"the optimizer", optimizer_text(c.optimizer)});
  out.push_back({"the learning-rate schedule", schedule_text(c.optimizer.schedule)});
  int64_t values = 0;
  for (const Param* p : all_params(task)) values += p->value.numel();
  out.push_back({"the model's parameters", std::to_string(task.params.size()) + " trained and " +
                                               std::to_string(task.frozen.size()) + " frozen tensors of " +
                                               std::to_string(values) + " values"});
  // The step resumed from: the checkpoints differ (compared before the parameters, whose check
  // could only say that they differ).
  const std::string start = std::to_string(s.step) + " (epoch " + std::to_string(s.epoch + 1) + ", batch " +
                            std::to_string(s.epoch_batch) + ")";
  out.push_back({"the step it starts from", start,
                 start + (c.resume_from.empty() ? ", a fresh start" : " of '" + c.resume_from + "'"), Blame::inputs});
  const std::string epoch = "epoch " + std::to_string(s.epoch + 1);
  out.push_back({"the step plan: the batches in " + epoch, std::to_string(first.size())});
  out.push_back({"the step plan: " + epoch + "'s batches (a hash)", plan_hash(first)});
  out.push_back({"the step plan: the last step", std::to_string(total_steps)});
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The divergence check of a batch's loss (the gradient norm is checked beside it).
bool finite(const BatchStats& b) { return std::isfinite(b.loss_sum); }

}  // namespace

BatchStats& BatchStats::operator+=(const BatchStats& o) {
  loss_sum += o.loss_sum;
  count += o.count;
  units += o.units;
  if (sums.size() < o.sums.size()) sums.resize(o.sums.size(), 0.0);
  for (size_t k = 0; k < o.sums.size(); ++k) sums[k] += o.sums[k];
  return *this;
}

std::vector<std::vector<int64_t>> epoch_batches(std::span<const int32_t> lengths, const TrainConfig& c,
                                                int64_t epoch) {
  if (c.batch_size > 0) {   // equal lengths: make_batches' sort by (length, random key) is a shuffle
    const std::vector<int32_t> ones(lengths.size(), 1);
    return data::make_batches(ones, {.max_tokens = c.batch_size, .max_batch = 0, .shuffle = true, .seed = c.seed},
                              epoch);
  }
  return data::make_batches(lengths, {.max_tokens = c.max_tokens, .max_batch = c.max_batch, .shuffle = true,
                                      .seed = c.seed},
                            epoch);
}

int64_t batches_per_epoch(const TrainTask& task, const TrainConfig& config) {
  require_train_examples(task);
  return static_cast<int64_t>(task.epoch_batches ? task.epoch_batches(0).size()
                                                 : epoch_batches(task.train_lengths, config, 0).size());
}

BatchStats evaluate(const std::function<BatchStats(std::span<const int64_t>)>& run_batch,
                    std::span<const int32_t> lengths, int64_t max_tokens, int64_t batch_size) {
  return evaluate(run_batch, lengths, max_tokens, batch_size, dist::world());
}

BatchStats evaluate(const std::function<BatchStats(std::span<const int64_t>)>& run_batch,
                    std::span<const int32_t> lengths, int64_t max_tokens, int64_t batch_size,
                    dist::Communicator& comm) {
  const SplitOutput out = run_split(
      static_cast<int64_t>(lengths.size()), split_batches(lengths, max_tokens, batch_size),
      [&](std::span<const int64_t> index) {
        BatchOutput b;
        const BatchStats s = run_batch(index);
        append_doubles(s, s.sums.size(), b.sums);
        return b;
      },
      comm);
  return stats_from_doubles(out.sums);
}

void append_doubles(const BatchStats& s, size_t sums, std::vector<double>& out) {
  out.push_back(s.loss_sum);
  out.push_back(s.count);
  out.push_back(static_cast<double>(s.units));
  for (size_t k = 0; k < sums; ++k) out.push_back(s.sum(k));
}

BatchStats stats_from_doubles(std::span<const double> v) {
  if (v.size() < 3) return {};   // nothing was run
  return {.loss_sum = v[0], .count = v[1], .units = static_cast<int64_t>(v[2]), .sums = {v.begin() + 3, v.end()}};
}

TrainResult fit(const TrainTask& task, const TrainConfig& config, const TrainCallbacks& callbacks) {
  validate(task, config);
  DataParallel dp(dist::world(), task);   // one rank: the plain single-process step
  const std::unique_ptr<optim::Optimizer> opt = optim::make_optimizer(config.optimizer);
  optim::lr_at(config.optimizer.schedule, 1);   // a schedule that cannot give a rate fails here
  RunState s;
  s.rng = Rng(config.seed).fork(/*label=*/0x64726f70);   // "drop": the dropout stream
  for (const std::string& name : curve_names(task)) s.curves.push_back({name, {}});
  detail::StartPhases phases(task.start_phases);
  if (!config.resume_from.empty()) resume(config.resume_from, task, config, *opt, s, phases);

  auto plan = [&](int64_t epoch) {
    return task.epoch_batches ? task.epoch_batches(epoch) : epoch_batches(task.train_lengths, config, epoch);
  };
  int64_t total_steps = config.epochs > 0 ? config.epochs * batches_per_epoch(task, config) : 0;
  if (config.max_steps > 0) total_steps = total_steps ? std::min(total_steps, config.max_steps) : config.max_steps;

  // Several ranks: the same data, configuration, starting step and plan on every one, before rank 0
  // removes a checkpoint or any rank steps (rank_agreement.hpp); then the same parameters.
  if (dp.ranks() > 1) {
    agree_on_data(dist::world(), task.data);
    agree_on_settings(dist::world(), start_settings(task, config, s, plan(s.epoch), total_steps),
                      "; every rank of a data-parallel job must train alike (the same options, data and "
                      "checkpoint to resume); stopping the job");
  }
  dp.check_same_params(config.resume_from.empty() ? "after initialisation" : "after resuming");

  // Periodic checkpoints beyond the starting step belong to a run being replaced.
  if (dp.is_root() && !config.model_path.empty() && config.model_path != "-")
    for (const CheckpointFile& c : list_checkpoints(config.model_path))
      if (c.step > s.step) std::filesystem::remove(c.path);

  auto save_to = [&](const std::string& path, const std::optional<EpochReport>& partial) {   // rank 0 only
    save(path, task, *opt, s, phases, partial);
    if (callbacks.on_save) callbacks.on_save(path, s.step);
  };

  TrainResult result;
  double train_seconds = 0;
  int64_t run_units = 0, run_steps = 0;
  bool stopped = false;   // by max_steps, possibly in the middle of an epoch
  while (!stopped && (config.epochs == 0 || s.epoch < config.epochs)) {
    if (config.max_steps > 0 && s.step >= config.max_steps) break;
    const auto batches = plan(s.epoch);
    while (s.epoch_batch < static_cast<int64_t>(batches.size())) {
      if (config.max_steps > 0 && s.step >= config.max_steps) {
        stopped = true;
        break;
      }
      const auto t0 = std::chrono::steady_clock::now();
      const int64_t t = s.step + 1;
      zero_grads(task.params);
      const BatchStats stats = dp.train_batch(batches[static_cast<size_t>(s.epoch_batch)], s.rng);
      if (config.clip_value > 0) optim::clip_grad_value(task.params, static_cast<float>(config.clip_value));
      const double norm = config.clip_norm > 0 ? optim::clip_grad_norm(task.params, config.clip_norm)
                                               : optim::grad_norm(task.params);
      if (!std::isfinite(norm) || !finite(stats))
        throw Error("train: step " + std::to_string(t) + " (epoch " + std::to_string(s.epoch + 1) + "): the " +
                    (finite(stats) ? "gradient norm is " + std::to_string(norm)
                                   : "loss is " + std::to_string(stats.loss_sum)) +
                    "; training diverged before this step's update (try a lower learning rate or gradient "
                    "clipping); the last checkpoint written is the last good state");
      const float lr = optim::lr_at(config.optimizer.schedule, phases.schedule_step(t));
      opt->set_lr(lr);
      opt->step(task.params, t);
      adapt_threads();   // the thread count for the next step (thread_governor.hpp)
      s.step = t;
      ++s.epoch_batch;
      s.epoch_train += stats;
      const double step_seconds = seconds_since(t0);
      train_seconds += step_seconds;
      run_units += stats.units;
      ++run_steps;
      s.train_seconds += step_seconds;
      s.train_units += stats.units;

      if (dp.is_root() && callbacks.on_step)
        callbacks.on_step({.step = t, .total_steps = total_steps, .epoch = s.epoch, .loss = stats.loss(),
                           .epoch_loss = s.epoch_train.loss(), .grad_norm = norm, .lr = lr, .units = run_units,
                           .units_per_second = train_seconds > 0 ? double(run_units) / train_seconds : 0.0});
      if (dp.is_root() && config.checkpoint_every > 0 && t % config.checkpoint_every == 0) {
        save_to(checkpoint_path(config.model_path, t), std::nullopt);
        rotate_checkpoints(config.model_path, config.keep_checkpoints);
      }
    }
    if (stopped) break;
    const EpochReport report = report_epoch(task, config, dp, s.epoch, s.step, /*partial=*/false, s.epoch_train);
    phases.end_epoch(report);
    if (task.end_epoch) task.end_epoch(report);
    record(s.curves, report, s);
    result.last = report;
    ++s.epoch;
    s.epoch_batch = 0;
    s.epoch_train = {};
    if (dp.is_root() && callbacks.on_epoch) callbacks.on_epoch(report);
  }

  std::optional<EpochReport> partial;
  if (s.epoch_batch > 0) {   // stopped by max_steps inside an epoch: report it as it stands
    partial = report_epoch(task, config, dp, s.epoch, s.step, /*partial=*/true, s.epoch_train);
    result.last = *partial;
    if (dp.is_root() && callbacks.on_epoch) callbacks.on_epoch(*partial);
  }
  if (dp.is_root() && !config.model_path.empty()) save_to(config.model_path, partial);
  // Every rank returns only once rank 0 has written the model (a rank that failed to write has
  // ended the job instead); the ranks' parameters must still be the same bits.
  dp.check_same_params("at the end of training");

  result.step = s.step;
  result.epoch = s.epoch;
  result.train_seconds = s.train_seconds;
  result.train_units = s.train_units;
  result.ranks = dp.ranks();
  result.run_steps = run_steps;
  result.comm_seconds = dp.comm_seconds();
  result.comm_bytes = dp.comm_bytes();
  std::vector<Curve> curves = s.curves;
  if (partial) record(curves, *partial, s);
  for (Curve& c : curves) result.curves[c.name] = std::move(c.values);
  return result;
}

}  // namespace attn::train

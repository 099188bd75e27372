// The training loop, its checkpoints and its resumption (trainer.hpp).
#include "attn/train/trainer.hpp"

#include <chrono>
#include <filesystem>
#include <optional>

#include "attn/core/error.hpp"
#include "attn/data/batching.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/optim/clip.hpp"
#include "attn/train/checkpoints.hpp"

namespace attn::train {
namespace {

// Everything that changes during a run and that a checkpoint must carry besides the parameters
// and the optimizer's moments.
struct RunState {
  int64_t step = 0;             // optimizer steps done
  int64_t epoch = 0;            // epochs completed
  int64_t epoch_batch = 0;      // batches of the current epoch done
  BatchStats epoch_train;       // their sums
  Rng rng;                      // the dropout stream
  std::vector<float> train_loss, valid_loss, valid_perplexity, valid_accuracy;   // per epoch
  std::vector<float> train_seconds_at;   // per epoch: train_seconds when it ended
  double train_seconds = 0;     // wall time inside training steps, over every resumed part
  int64_t train_tokens = 0;     // target tokens trained on, likewise
};

void validate(const TrainTask& task, const TrainConfig& c) {
  auto fail = [](const std::string& what) { throw ConfigError("train: " + what); };
  if (c.epochs < 0) fail("epochs must be >= 0, got " + std::to_string(c.epochs));
  if (c.max_steps < 0) fail("max_steps must be >= 0, got " + std::to_string(c.max_steps));
  if (c.epochs == 0 && c.max_steps == 0) fail("epochs and max_steps are both 0: the run would never stop");
  if (c.max_tokens <= 0) fail("max_tokens must be > 0, got " + std::to_string(c.max_tokens));
  if (c.max_batch < 0) fail("max_batch must be >= 0, got " + std::to_string(c.max_batch));
  if (c.valid_max_tokens < 0) fail("valid_max_tokens must be >= 0, got " + std::to_string(c.valid_max_tokens));
  if (!(c.clip_norm >= 0)) fail("clip_norm must be >= 0 (0: no clipping), got " + std::to_string(c.clip_norm));
  if (c.checkpoint_every < 0) fail("checkpoint_every must be >= 0, got " + std::to_string(c.checkpoint_every));
  if (c.keep_checkpoints < 1) fail("keep_checkpoints must be >= 1, got " + std::to_string(c.keep_checkpoints));
  if (c.checkpoint_every > 0 && (c.model_path.empty() || c.model_path == "-"))
    fail("checkpoint_every needs a model file to write checkpoints next to, not '" + c.model_path + "'");
  if (task.kind.empty()) fail("the task has no model kind");
  if (task.params.empty()) fail("the model has no parameters");
  if (!task.train_batch) fail("the task has no train_batch function");
  if (task.train_lengths.empty()) throw DataError("train: the training set is empty");
  if (!task.valid_lengths.empty() && !task.valid_batch)
    fail("the task has validation examples but no valid_batch function");
}

BatchStats validation(const TrainTask& task, const TrainConfig& c) {
  if (task.valid_lengths.empty()) return {};
  return evaluate(task.valid_batch, task.valid_lengths, c.valid_max_tokens ? c.valid_max_tokens : c.max_tokens);
}

// The curves with one more entry for the unfinished epoch when `partial` is given.
// train_seconds is wall time, so unlike the other curves it differs between a resumed run and
// an uninterrupted one; it lets experiments plot a metric against time and report tokens/s.
constexpr int kCurves = 5;
constexpr const char* kCurveNames[kCurves] = {"train_loss", "valid_loss", "valid_perplexity", "valid_accuracy",
                                              "train_seconds"};

void write_metrics(io::File& file, const RunState& s, const std::optional<EpochReport>& partial) {
  std::vector<float> curves[kCurves] = {s.train_loss, s.valid_loss, s.valid_perplexity, s.valid_accuracy,
                                        s.train_seconds_at};
  if (partial) {
    curves[0].push_back(static_cast<float>(partial->train.loss()));
    curves[1].push_back(static_cast<float>(partial->valid.loss()));
    curves[2].push_back(static_cast<float>(partial->valid.perplexity()));
    curves[3].push_back(static_cast<float>(partial->valid.accuracy()));
    curves[4].push_back(static_cast<float>(s.train_seconds));
  }
  const int64_t n = static_cast<int64_t>(curves[0].size());
  if (n > 0)
    for (int k = 0; k < kCurves; ++k)
      file.write(std::string("/metrics/") + kCurveNames[k], Tensor::from({n}, curves[k]));
  file.set_attr("/metrics", "epochs", n);
  file.set_attr("/metrics", "last_epoch_partial", int64_t{partial ? 1 : 0});
}

void save(const std::string& path, const TrainTask& task, const optim::Optimizer& opt, const RunState& s,
          const std::optional<EpochReport>& partial) {
  io::Checkpoint ckpt;
  ckpt.kind = task.kind;
  ckpt.config = task.config;
  ckpt.params = io::collect_params(task.params);
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
  file.set_attr("/state", "epoch_nll_sum", s.epoch_train.nll_sum);
  file.set_attr("/state", "epoch_tokens", s.epoch_train.tokens);
  file.set_attr("/state", "epoch_correct", s.epoch_train.correct);
  file.set_attr("/state", "train_seconds", s.train_seconds);
  file.set_attr("/state", "train_tokens", s.train_tokens);
  write_metrics(file, s, partial);
  if (task.write_extra) task.write_extra(file);
  file.commit();
}

std::vector<float> read_curve(const io::File& file, const std::string& name) {
  if (!file.exists(name)) return {};
  const Tensor t = file.read(name, DType::f32, {kAny});
  return {t.data(), t.data() + t.numel()};
}

// Restores the parameters, the optimizer and the run state from a file saved by save().
void resume(const std::string& path, const TrainTask& task, optim::Optimizer& opt, RunState& s) {
  const io::File file = io::File::open_read(path);
  const io::Checkpoint ckpt = io::read_checkpoint(file, task.kind);
  io::restore_params(ckpt.params, task.params, file.display_name());
  std::vector<optim::NamedTensor> state;
  for (const auto& [name, t] : ckpt.optimizer) state.push_back({name, t});
  opt.load_state(task.params, state);
  s.step = ckpt.step;
  s.epoch = ckpt.epoch;
  s.rng.set_state(ckpt.rng);
  auto int_attr = [&](const char* key) { return file.has_attr("/state", key) ? file.attr_int("/state", key) : 0; };
  auto real_attr = [&](const char* key) { return file.has_attr("/state", key) ? file.attr_double("/state", key) : 0.0; };
  s.epoch_batch = int_attr("epoch_batch");
  s.epoch_train = {real_attr("epoch_loss_sum"), real_attr("epoch_nll_sum"), int_attr("epoch_tokens"),
                   int_attr("epoch_correct")};
  s.train_seconds = real_attr("train_seconds");
  s.train_tokens = int_attr("train_tokens");
  std::vector<float>* curves[kCurves] = {&s.train_loss, &s.valid_loss, &s.valid_perplexity, &s.valid_accuracy,
                                         &s.train_seconds_at};
  for (int k = 0; k < kCurves; ++k) *curves[k] = read_curve(file, std::string("/metrics/") + kCurveNames[k]);
  const size_t n = s.train_loss.size();
  if (s.train_seconds_at.empty()) s.train_seconds_at.assign(n, 0.0f);   // a file from before the curve
  for (const auto* curve : curves)
    if (curve->size() != n) throw FormatError(file.display_name() + ": the curves in /metrics have different lengths");
  const bool partial = file.exists("/metrics") && file.has_attr("/metrics", "last_epoch_partial") &&
                       file.attr_int("/metrics", "last_epoch_partial") == 1;
  if (partial && n > 0)   // the unfinished epoch's entry; the resumed run finishes the epoch
    for (auto* curve : curves) curve->pop_back();
  if (s.epoch_batch < 0 || s.step < 0 || s.epoch < 0)
    throw FormatError(file.display_name() + ": /state holds a negative step, epoch or epoch_batch");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

BatchStats evaluate(const std::function<BatchStats(std::span<const int64_t>)>& run_batch,
                    std::span<const int32_t> lengths, int64_t max_tokens) {
  const data::BatchingOptions opts{.max_tokens = max_tokens, .max_batch = 0, .shuffle = false, .seed = 0};
  BatchStats total;
  for (const auto& batch : data::make_batches(lengths, opts, /*epoch=*/0)) total += run_batch(batch);
  return total;
}

TrainResult fit(const TrainTask& task, const TrainConfig& config, const TrainCallbacks& callbacks) {
  validate(task, config);
  optim::Adam adam(config.adam);
  RunState s;
  s.rng = Rng(config.seed).fork(/*label=*/0x64726f70);   // "drop": the dropout stream
  if (!config.resume_from.empty()) resume(config.resume_from, task, adam, s);

  // Periodic checkpoints beyond the starting step belong to a run being replaced.
  if (!config.model_path.empty() && config.model_path != "-")
    for (const CheckpointFile& c : list_checkpoints(config.model_path))
      if (c.step > s.step) std::filesystem::remove(c.path);

  const data::BatchingOptions batching{.max_tokens = config.max_tokens, .max_batch = config.max_batch,
                                       .shuffle = true, .seed = config.seed};
  const auto batches_per_epoch = static_cast<int64_t>(data::make_batches(task.train_lengths, batching, 0).size());
  int64_t total_steps = config.epochs > 0 ? config.epochs * batches_per_epoch : 0;
  if (config.max_steps > 0) total_steps = total_steps ? std::min(total_steps, config.max_steps) : config.max_steps;

  auto save_to = [&](const std::string& path, const std::optional<EpochReport>& partial) {
    save(path, task, adam, s, partial);
    if (callbacks.on_save) callbacks.on_save(path, s.step);
  };
  auto record_epoch = [&](const EpochReport& r) {
    s.train_loss.push_back(static_cast<float>(r.train.loss()));
    s.valid_loss.push_back(static_cast<float>(r.valid.loss()));
    s.valid_perplexity.push_back(static_cast<float>(r.valid.perplexity()));
    s.valid_accuracy.push_back(static_cast<float>(r.valid.accuracy()));
    s.train_seconds_at.push_back(static_cast<float>(s.train_seconds));
  };

  TrainResult result;
  double train_seconds = 0;
  int64_t run_tokens = 0;
  bool stopped = false;   // by max_steps, possibly in the middle of an epoch
  while (!stopped && (config.epochs == 0 || s.epoch < config.epochs)) {
    if (config.max_steps > 0 && s.step >= config.max_steps) break;
    const auto batches = data::make_batches(task.train_lengths, batching, s.epoch);
    while (s.epoch_batch < static_cast<int64_t>(batches.size())) {
      if (config.max_steps > 0 && s.step >= config.max_steps) {
        stopped = true;
        break;
      }
      const auto t0 = std::chrono::steady_clock::now();
      const int64_t t = s.step + 1;
      zero_grads(task.params);
      const BatchStats stats = task.train_batch(batches[static_cast<size_t>(s.epoch_batch)], s.rng);
      const double norm = config.clip_norm > 0 ? optim::clip_grad_norm(task.params, config.clip_norm)
                                               : optim::grad_norm(task.params);
      if (!std::isfinite(norm))
        throw Error("train: step " + std::to_string(t) + " (epoch " + std::to_string(s.epoch) +
                    "): the gradient norm is " + std::to_string(norm) +
                    "; training diverged (try a lower learning rate or gradient clipping)");
      const float lr = optim::lr_at(config.schedule, t);
      adam.set_lr(lr);
      adam.step(task.params, t);
      s.step = t;
      ++s.epoch_batch;
      s.epoch_train += stats;
      const double step_seconds = seconds_since(t0);
      train_seconds += step_seconds;
      run_tokens += stats.tokens;
      s.train_seconds += step_seconds;
      s.train_tokens += stats.tokens;

      if (callbacks.on_step)
        callbacks.on_step({.step = t, .total_steps = total_steps, .epoch = s.epoch, .loss = stats.loss(),
                           .epoch_loss = s.epoch_train.loss(), .grad_norm = norm, .lr = lr,
                           .tokens = run_tokens,
                           .tokens_per_second = train_seconds > 0 ? double(run_tokens) / train_seconds : 0.0});
      if (config.checkpoint_every > 0 && t % config.checkpoint_every == 0) {
        save_to(checkpoint_path(config.model_path, t), std::nullopt);
        rotate_checkpoints(config.model_path, config.keep_checkpoints);
      }
    }
    if (stopped) break;
    const EpochReport report{.epoch = s.epoch, .step = s.step, .partial = false, .train = s.epoch_train,
                             .valid = validation(task, config)};
    record_epoch(report);
    result.last_valid = report.valid;
    ++s.epoch;
    s.epoch_batch = 0;
    s.epoch_train = {};
    if (callbacks.on_epoch) callbacks.on_epoch(report);
  }

  std::optional<EpochReport> partial;
  if (s.epoch_batch > 0) {   // stopped by max_steps inside an epoch: report it as it stands
    partial = EpochReport{.epoch = s.epoch, .step = s.step, .partial = true, .train = s.epoch_train,
                          .valid = validation(task, config)};
    result.last_valid = partial->valid;
    if (callbacks.on_epoch) callbacks.on_epoch(*partial);
  }
  if (!config.model_path.empty()) save_to(config.model_path, partial);

  result.step = s.step;
  result.epoch = s.epoch;
  result.train_seconds = s.train_seconds;
  result.train_tokens = s.train_tokens;
  result.train_loss = s.train_loss;
  result.valid_loss = s.valid_loss;
  if (partial) {
    result.train_loss.push_back(static_cast<float>(partial->train.loss()));
    result.valid_loss.push_back(static_cast<float>(partial->valid.loss()));
  }
  return result;
}

}  // namespace attn::train

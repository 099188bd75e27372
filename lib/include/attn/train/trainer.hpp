// The model-agnostic training loop: epochs of length-bucketed batches, Adam with a learning-rate
// schedule, clipping by global norm, validation every epoch, and checkpoints that resume to the
// same bits. Every model family (Transformer, seq2seq, NTM, memory network) trains through it by
// describing itself as a TrainTask: its parameters, the lengths of its examples, and two
// functions that run a batch of example indices.
//
// One optimizer step t (1-based, explicit as everywhere in optim/):
//   zero_grads(params);  stats = task.train_batch(batch, rng);        // adds d(mean loss)
//   norm = clip_grad_norm(params, clip);                                // or grad_norm
//   adam.set_lr(schedule(t));  adam.step(params, t);
// The batches of epoch e are data::make_batches(train_lengths, {max_tokens, seed}, e): a pure
// function of (lengths, options, seed, e). Together with the saved parameters, Adam moments,
// step, position in the epoch, the dropout stream's RngState and the epoch's running sums, a
// resumed run therefore repeats the uninterrupted run's updates bit for bit.
//
// Files (all written atomically through io::File, layout of io/checkpoint.hpp plus):
//   /state     epoch_batch (batches done in the current epoch), epoch_loss_sum (float64) and
//              epoch_tokens: the running sums of the current, unfinished epoch;
//              train_seconds (float64) and train_tokens: wall time in training steps and
//              target tokens trained on since the run began, resumed parts included
//   /metrics   train_loss, valid_loss, valid_perplexity, valid_accuracy, train_seconds:
//              float32 [E], one entry per epoch (valid_* NaN without a validation set;
//              train_seconds the state's train_seconds when the epoch ended); attribute
//              last_epoch_partial = 1 when the last entry covers an unfinished epoch (a run
//              stopped by max_steps), which a resumed run replaces.
// The final model goes to config.model_path; every checkpoint_every steps a checkpoint goes to
// checkpoint_path(model_path, step) ("tf.h5" -> "tf.step000200.h5"), and only the newest
// keep_checkpoints of those are kept (checkpoints.hpp).
//
// The library never prints: progress, epoch results and saved files are reported through
// TrainCallbacks.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/nn/param.hpp"
#include "attn/optim/adam.hpp"
#include "attn/optim/schedule.hpp"

namespace attn::train {

// Loss statistics summed over the counted tokens (targets that are not padding) of one batch,
// or of many (+=).
struct BatchStats {
  double loss_sum = 0;    // the training loss (e.g. label-smoothed cross-entropy)
  double nll_sum = 0;     // plain negative log-likelihood, nats (for perplexity)
  int64_t tokens = 0;     // counted tokens
  int64_t correct = 0;    // tokens whose argmax is the target

  BatchStats& operator+=(const BatchStats& o) {
    loss_sum += o.loss_sum, nll_sum += o.nll_sum, tokens += o.tokens, correct += o.correct;
    return *this;
  }
  // Means per counted token; NaN when no token was counted.
  double loss() const { return tokens ? loss_sum / double(tokens) : NAN; }
  double nll() const { return tokens ? nll_sum / double(tokens) : NAN; }
  double perplexity() const { return std::exp(nll()); }
  double accuracy() const { return tokens ? double(correct) / double(tokens) : NAN; }
};

// What the trainer needs from a model family and its data set.
struct TrainTask {
  std::string kind;                               // root `kind` of the model file: "transformer"
  std::map<std::string, io::AttrValue> config;    // /config: the hyper-parameters (and options)
  ParamList params;                               // stable names and order
  std::vector<int32_t> train_lengths;             // per training example, >= 1 (bucketing)
  std::vector<int32_t> valid_lengths;             // per validation example; empty: no validation
  // Forward and backward on the training examples `index`: ADDS the gradient of the mean loss
  // over the batch's counted tokens into the params' grads (the trainer zeroes them first) and
  // returns the sums. `rng` is the trainer's stream (dropout), saved in checkpoints.
  std::function<BatchStats(std::span<const int64_t> index, Rng& rng)> train_batch;
  // Forward only (no dropout, no grads) on the validation examples `index`.
  std::function<BatchStats(std::span<const int64_t> index)> valid_batch;
  // Writes whatever else a model file of this family holds (vocabularies) into a file being
  // saved, after the checkpoint. Optional.
  std::function<void(io::File&)> write_extra;
  std::string created_by;                         // root attributes of saved files
  std::string command;
};

struct TrainConfig {
  int64_t epochs = 10;            // stop after this many epochs; 0: no limit (max_steps then > 0)
  int64_t max_steps = 0;          // ...or once this step is done, whichever comes first; 0: none
  int64_t max_tokens = 4096;      // batch budget B x Lmax, padding included (data/batching.hpp)
  int64_t max_batch = 0;          // at most this many examples per batch; 0: no limit
  int64_t valid_max_tokens = 0;   // budget of validation batches; 0: max_tokens
  uint64_t seed = 1;              // batch order (with the epoch) and the dropout stream
  // Vaswani et al. 2017, sec. 5.3: beta1 0.9, beta2 0.98, eps 1e-9; the rate comes from
  // `schedule` at every step (adam.lr is ignored).
  optim::AdamConfig adam{.lr = 0.0f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f, .weight_decay = 0.0f};
  optim::Schedule schedule = optim::WarmupInverseSqrt(/*d_model=*/512, /*warmup=*/4000);
  double clip_norm = 0;           // > 0: clip the gradients' global L2 norm to this; 0: off
  std::string model_path;         // the final model file ("-": stdout, then no checkpoint_every)
  int64_t checkpoint_every = 0;   // steps between checkpoints; 0: only the final model
  int64_t keep_checkpoints = 5;   // newest periodic checkpoints kept, >= 1
  std::string resume_from;        // a checkpoint (or model) file to continue from; "": fresh
};

// Reported after every step.
struct StepReport {
  int64_t step = 0;               // the step just taken, 1-based
  int64_t total_steps = 0;        // the step the run stops at (0: not known)
  int64_t epoch = 0;              // the epoch being trained, 0-based
  double loss = NAN;              // this batch's mean loss
  double epoch_loss = NAN;        // mean loss over the epoch so far
  double grad_norm = 0;           // global gradient norm before clipping
  float lr = 0;                   // the rate used for this step
  int64_t tokens = 0;             // counted tokens of the run so far (this process)
  double tokens_per_second = 0;   // counted tokens per second of this process's training
};

// Reported after every epoch (and for the last, unfinished one of a run stopped by max_steps).
struct EpochReport {
  int64_t epoch = 0;              // 0-based
  int64_t step = 0;               // steps done
  bool partial = false;           // stopped before the epoch's last batch
  BatchStats train;               // sums over the epoch's training batches
  BatchStats valid;               // over the validation set (tokens 0 without one)
};

struct TrainCallbacks {
  std::function<void(const StepReport&)> on_step;
  std::function<void(const EpochReport&)> on_epoch;
  std::function<void(const std::string& path, int64_t step)> on_save;   // a file was written
};

struct TrainResult {
  int64_t step = 0;               // steps done in total
  int64_t epoch = 0;              // epochs completed
  std::vector<float> train_loss, valid_loss;   // the curves stored in /metrics
  BatchStats last_valid;          // the last validation (tokens 0 without one)
  double train_seconds = 0;       // wall time spent in training steps, resumed parts included
  int64_t train_tokens = 0;       // target tokens trained on, likewise (tokens/s = the ratio)
};

// Trains task.params per `config` (validated first: ConfigError naming the field), resuming
// from config.resume_from when set (FormatError/ShapeError naming the file when it does not fit
// the task), and saves the final model to config.model_path. A non-finite gradient norm throws
// attn::Error naming the step (the run diverged) before the parameters are touched.
TrainResult fit(const TrainTask& task, const TrainConfig& config, const TrainCallbacks& callbacks = {});

// The loss statistics of `valid_batch` over every example of `lengths`, batched by max_tokens
// in length order (no shuffling).
BatchStats evaluate(const std::function<BatchStats(std::span<const int64_t>)>& run_batch,
                    std::span<const int32_t> lengths, int64_t max_tokens);

}  // namespace attn::train

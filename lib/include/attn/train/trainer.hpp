// The model-agnostic training loop: epochs of batches, any optimizer with a learning-rate
// schedule, clipping by value and by global norm, validation every epoch, and checkpoints that
// resume to the same bits. Every model family (Transformer, seq2seq, NTM, memory network,
// captioner) trains through it by describing itself as a TrainTask: its parameters, the lengths
// of its examples, two functions that run a batch of example indices, and what it measures
// (its unit of work and its metrics).
//
// One optimizer step t (1-based, explicit as everywhere in optim/):
//   zero_grads(params);  stats = task.train_batch(batch, rng);        // adds d(mean loss)
//   clip_grad_value(params, clip_value);                                // when > 0
//   norm = clip_grad_norm(params, clip_norm);                           // or grad_norm
//   opt.set_lr(schedule(t));  opt.step(params, t);
// The batches of epoch e are task.epoch_batches(e) when the task plans its own (a curriculum),
// else epoch_batches(task, config, e): length-bucketed by max_tokens (data/batching.hpp), or
// batch_size examples in random order: a pure function of (lengths, options, seed, e). Together
// with the saved parameters, optimizer state, step, position in the epoch, the trainer's RngState,
// the epoch's running sums and the task's own state, a resumed run repeats the uninterrupted
// run's updates bit for bit.
//
// Files (all written atomically through io::File, layout of io/checkpoint.hpp plus):
//   /trained_on  the data set's fingerprints (data_fingerprint.hpp), when the task has them
//   /state     epoch_batch (batches done in the current epoch), epoch_loss_sum, epoch_count,
//              epoch_units and epoch_<sum>_sum (float64): the running sums of the current,
//              unfinished epoch; train_seconds (float64) and train_units: wall time in training
//              steps and units of work trained on since the run began, resumed parts included;
//              unit: what a unit is ("tokens", "sequences", ...); plus the task's own state
//   /metrics   float32 [epochs], one entry per epoch: train_loss, valid_loss, train_<m> and
//              valid_<m> for every metric m of the task, valid_<m> for every epoch metric,
//              trained_<unit> (units of work trained on when the epoch ended: trained_tokens,
//              trained_sequences; the x axis of a learning curve) and train_seconds (the state's
//              train_seconds when the epoch ended); valid_* are NaN
//              without a validation set. Attribute last_epoch_partial = 1 when the last entry
//              covers an unfinished epoch (a run stopped by max_steps), which a resumed run
//              replaces.
// The final model goes to config.model_path; every checkpoint_every steps a checkpoint goes to
// checkpoint_path(model_path, step) ("tf.h5" -> "tf.step000200.h5"), and only the newest
// keep_checkpoints of those are kept (checkpoints.hpp).
//
// The library never prints: progress, epoch results and saved files are reported through
// TrainCallbacks.
//
// Several ranks (dist::world() of an MPI job, data_parallel.hpp): every rank runs fit with the
// same task and config; each trains on its shard of every global batch and the ranks exchange
// sums and gradients, so every rank takes the update one process would take on the global batch.
// Rank 0 alone writes files and calls the callbacks (its StepReport counts the global batch's
// units, so the rate shown is the job's); fit returns on every rank once rank 0 has written the
// final model. Checkpoints hold nothing that depends on the number of ranks, so --resume works
// with another number of ranks. Before the first step the ranks compare what they will train
// with (rank_agreement.hpp): the data's fingerprints, the task's kind and config (but its
// rank_local keys), the TrainConfig (but the file names), the optimizer and its schedule, the
// parameters' count, the step resumed from and the plan of the epoch it starts; a difference
// throws on every rank (ConfigError, or DataError for the data and the step resumed from).
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/dist/communicator.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/nn/param.hpp"
#include "attn/optim/config.hpp"
#include "attn/train/data_fingerprint.hpp"

namespace attn::train {

// Sums over the examples of one batch, or of many (+=): the loss, what it is a mean over, the
// work done, and the task's own sums (named by TrainTask::sums, in that order).
struct BatchStats {
  double loss_sum = 0;        // the training objective, summed
  double count = 0;           // what the loss is a mean over: tokens, sequences, questions
  int64_t units = 0;          // work done in the task's unit (TrainTask::unit), for rates
  std::vector<double> sums;   // e.g. {nll, correct} for token tasks

  BatchStats& operator+=(const BatchStats& o);
  double loss() const { return count > 0 ? loss_sum / count : NAN; }   // NaN: nothing counted
  double sum(size_t k) const { return k < sums.size() ? sums[k] : 0.0; }
};

// A number a task reports for a split, computed from the split's summed BatchStats.
struct Metric {
  std::string name;                               // curve suffix: "perplexity" -> valid_perplexity
  std::string label;                              // in progress lines: "perplexity"
  std::function<double(const BatchStats&)> of;    // NaN when nothing was counted
};

// A number computed over the whole validation set after each epoch by other means than batch
// sums (e.g. BLEU of greedy translations). Stored as the curve valid_<name>.
struct EpochMetric {
  std::string name, label;
  std::function<double()> compute;
};

// What work is counted in: the rate "tok/s" and the summary "12000 tokens".
struct Unit {
  std::string rate = "tok";          // per second in progress lines
  std::string plural = "tokens";
};

struct EpochReport;

// A mode of the model that is on from the start of training and then ends for good, after a set
// number of epochs or after the first epoch whose validation loss (the training loss without a
// validation set) does not improve on the best of the epochs before: linear start (Sukhbaatar et
// al. 2015: the hops' softmax removed at first) and the captioner's early attention-entropy
// penalty are two. The trainer switches the model with `set` (on at the start of a run, then as
// the run's state says on --resume), ends the phase after an epoch's validation, and keeps its
// state in every file it saves (/state attributes <name> (0/1), <name>_best, <name>_end: the step
// it ended at), so that a resumed run continues it; phase_on() reads it back for a loaded model.
struct StartPhase {
  std::string name;     // its /state attributes: "linear_start"
  int64_t epochs = 0;   // > 0: on for exactly this many epochs; 0: until the loss stops improving
  // Whether the rate schedule waits for the phase: while it is on, every step takes the rate of
  // step 1; after it ends at step e, step t takes the rate of step t - e (the schedule restarts).
  bool holds_schedule = false;
  std::function<void(bool on)> set;   // puts the model into the mode, or out of it
};

// Whether the phase `name` was on when `file` was saved; `absent` when the file does not say
// (saved without the phase, or before it existed).
bool phase_on(const io::File& file, const std::string& name, bool absent);

// What the trainer needs from a model family and its data set.
struct TrainTask {
  std::string kind;                               // root `kind` of the model file: "transformer"
  std::map<std::string, io::AttrValue> config;    // /config: the hyper-parameters (and options)
  ParamList params;                               // stable names and order
  ParamList frozen;                               // saved with params and restored on resume, never
                                                  // trained (a fine-tuned model's frozen encoder)
  Unit unit;
  std::vector<std::string> sums;                  // names of BatchStats::sums
  std::vector<Metric> metrics;                    // of train and valid sums
  std::vector<EpochMetric> epoch_metrics;         // of the model on the validation set
  std::vector<int32_t> train_lengths;             // per training example, >= 1 (bucketing)
  std::vector<int32_t> valid_lengths;             // per validation example; empty: no validation
  // Forward and backward on the training examples `index`: ADDS the gradient of the mean loss
  // into the params' grads (the trainer zeroes them first) and returns the sums. `rng` is the
  // trainer's stream (dropout, sampling), saved in checkpoints.
  std::function<BatchStats(std::span<const int64_t> index, Rng& rng)> train_batch;
  // Forward only (no dropout, no grads) on the validation examples `index`. Its sums must not
  // depend on how examples are grouped into batches.
  std::function<BatchStats(std::span<const int64_t> index)> valid_batch;
  // Optional: the batches of epoch e, when the task plans them itself (a curriculum); must be a
  // pure function of e and the task's state.
  std::function<std::vector<std::vector<int64_t>>(int64_t epoch)> epoch_batches;
  // Modes on from the start of training until they end (above): the trainer runs them.
  std::vector<StartPhase> start_phases;
  // Optional: called after each finished epoch's validation (before it is recorded), after the
  // start phases; may change the task's state (a curriculum's level).
  std::function<void(const EpochReport&)> end_epoch;
  // Optional: writes whatever else a model file of this family holds (vocabularies) and the
  // task's state into a file being saved, after the checkpoint.
  std::function<void(io::File&)> write_extra;
  // Optional: restores the task's state from a file being resumed (what write_extra stored).
  std::function<void(const io::File&)> read_state;
  std::string created_by;                         // root attributes of saved files
  std::string command;
  // The fingerprints of the data set trained on (data_fingerprint.hpp), written into every file
  // saved (/trained_on) and checked on resume; empty: neither (a task built in code).
  DataFingerprint data;
  // Keys of `config` whose values may differ between the ranks of a data-parallel job (file names,
  // thread counts): fit compares every other key, rank by rank, before the first step
  // (rank_agreement.hpp).
  std::vector<std::string> rank_local;
  // Non-empty: why this task cannot train data-parallel on several ranks (its gradient is not
  // that of loss_sum / count over its rows, or its forward depends on the whole batch); fit then
  // refuses to run it on more than one rank (ConfigError with this text). data_parallel.hpp.
  std::string single_process_only;
};

struct TrainConfig {
  int64_t epochs = 10;            // stop after this many epochs; 0: no limit (max_steps then > 0)
  int64_t max_steps = 0;          // ...or once this step is done, whichever comes first; 0: none
  int64_t batch_size = 0;         // > 0: batches of this many examples in random order
  int64_t max_tokens = 4096;      // else: batch budget B x Lmax, padding included (data/batching.hpp)
  int64_t max_batch = 0;          // with max_tokens: at most this many examples per batch; 0: no limit
  int64_t valid_max_tokens = 0;   // budget of validation batches; 0: max_tokens (or batch_size)
  uint64_t seed = 1;              // batch order (with the epoch) and the trainer's stream
  optim::OptimizerConfig optimizer;   // kind, constants and the schedule of the rate
  double clip_value = 0;          // > 0: clamp every gradient element to [-clip_value, clip_value]
  double clip_norm = 0;           // > 0: then clip the gradients' global L2 norm to this; 0: off
  std::string model_path;         // the final model file ("-": stdout, then no checkpoint_every)
  int64_t checkpoint_every = 0;   // steps between checkpoints; 0: only the final model
  int64_t keep_checkpoints = 5;   // newest periodic checkpoints kept, >= 1
  std::string resume_from;        // a checkpoint (or model) file to continue from; "": fresh
  // Resuming: continue on a training split other than the one the checkpoint was trained on
  // (the vocabularies must still be the same); without it a mismatch throws DataError.
  bool allow_new_data = false;
  // Resuming: start the optimizer's state afresh. Without it a checkpoint without /optimizer
  // (saved for inference, or averaged) throws DataError for an optimizer that keeps state, as
  // its moments would silently restart and the run would not continue bit for bit.
  bool reset_optimizer = false;
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
  int64_t units = 0;              // units of work of the run so far (every rank's)
  double units_per_second = 0;    // units per second of the run's training steps (every rank's)
};

// Reported after every epoch (and for the last, unfinished one of a run stopped by max_steps).
struct EpochReport {
  int64_t epoch = 0;              // 0-based
  int64_t step = 0;               // steps done
  bool partial = false;           // stopped before the epoch's last batch
  BatchStats train;               // sums over the epoch's training batches
  BatchStats valid;               // over the validation set (count 0 without one)
  std::vector<std::pair<std::string, double>> values;   // every curve's entry for this epoch
                                                         // but trained_<unit> and train_seconds,
                                                         // in curve order
};

struct TrainCallbacks {
  std::function<void(const StepReport&)> on_step;
  std::function<void(const EpochReport&)> on_epoch;
  std::function<void(const std::string& path, int64_t step)> on_save;   // a file was written
};

struct TrainResult {
  int64_t step = 0;               // steps done in total
  int64_t epoch = 0;              // epochs completed
  std::map<std::string, std::vector<float>> curves;   // what /metrics stores
  EpochReport last;               // the last epoch's report (values empty when no epoch ran)
  double train_seconds = 0;       // wall time spent in training steps, resumed parts included
  int64_t train_units = 0;        // units trained on, likewise (the rate is the ratio)
  int ranks = 1;                  // processes the run was spread over (data_parallel.hpp)
  int64_t run_steps = 0;          // steps taken by this run (resumed parts excluded)
  double comm_seconds = 0;        // of this run's training time, this rank's waiting after its
                                  // backward for the exchange of sums and gradients to end (the
                                  // part the backward did not hide; 0 with one rank)
  int64_t comm_bytes = 0;         // bytes this rank sent in it
};

// Trains task.params per `config` (validated first: ConfigError naming the field), resuming
// from config.resume_from when set (FormatError/ShapeError naming the file when it does not fit
// the task), and saves the final model to config.model_path. A non-finite loss or gradient norm
// throws attn::Error naming the step (the run diverged) before the parameters are touched, so
// the last checkpoint written is the last good one.
TrainResult fit(const TrainTask& task, const TrainConfig& config, const TrainCallbacks& callbacks = {});

// The batches of epoch e per config (no task override): see above.
std::vector<std::vector<int64_t>> epoch_batches(std::span<const int32_t> lengths, const TrainConfig& config,
                                                int64_t epoch);
// How many batches an epoch of the task's training set has (epoch 0's plan); DataError when the
// set is empty, as fit's.
int64_t batches_per_epoch(const TrainTask& task, const TrainConfig& config);

// The sums of `run_batch` over every example of `lengths`, in batches of about max_tokens in
// length order (batch_size > 0: runs of batch_size consecutive examples); no shuffling. On several
// ranks the batches are shared out and the sums added in batch order (split_run.hpp): one
// process's numbers, bit for bit.
BatchStats evaluate(const std::function<BatchStats(std::span<const int64_t>)>& run_batch,
                    std::span<const int32_t> lengths, int64_t max_tokens, int64_t batch_size = 0);
BatchStats evaluate(const std::function<BatchStats(std::span<const int64_t>)>& run_batch,
                    std::span<const int32_t> lengths, int64_t max_tokens, int64_t batch_size,
                    dist::Communicator& comm);

// A BatchStats as doubles, loss_sum, count, units, then `sums` entries of its sums (0 beyond
// them; units are exact below 2^53), and back: how sums travel between ranks and batches.
void append_doubles(const BatchStats& s, size_t sums, std::vector<double>& out);
BatchStats stats_from_doubles(std::span<const double> v);

}  // namespace attn::train

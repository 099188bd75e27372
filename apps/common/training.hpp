// Every tool's `train` verb, written once: the options every model family shares (--data,
// --model, batching, --epochs/--steps, the optimizer and its schedule, clipping, checkpoints,
// --resume, --seed, --threads), opening the data set, building the model through the tool's
// hook, train::fit with progress and epoch lines, the configuration stored with the model, and
// the summary line. A tool describes its verb and adds only its model's options:
//
//   int cmd_train(int argc, char** argv) {
//     return cli::run_train_verb(kTool, argc, argv, {
//         .about = "Trains ...",
//         .data_help = "NTM task data set, HDF5 (attn-data copy, ...)",
//         .batching = {.batch_size = 1},
//         .optimizer = {.kind = optim::OptimizerKind::rmsprop, .lr = 1e-4},
//         .add_options = add_model_options,           // opts.add_model()("memory", ...)
//         .prepare = prepare,   // (opts, inputs) -> unique_ptr<TrainRun>: the model's config from the
//                               // options, or from inputs.resumed_config("ntm"); a run that owns
//                               // model and data and fills run->task
//     });
//   }
//
// `--repeats K` trains K runs with seeds --seed, --seed + 1, ... and keeps the one of the best
// final validation `repeats_metric` (attn/train/repeats.hpp), recording each run's `test_scores`.
//
// The model file's /config holds, one attribute per field: the verb's own options as given (with
// their defaults), the optimizer's settings as resolved (only those of its kind and schedule),
// and the model's own configuration (the task's config, its to_attrs()). Model options are not
// stored as typed: a --layers that sets enc_layers and dec_layers is stored as those two.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/data/rows.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/optim/config.hpp"
#include "attn/train/optimizer_spec.hpp"
#include "attn/train/trainer.hpp"
#include "common/options.hpp"

namespace attn::cli {

// What a train verb has read before it builds its model.
struct TrainInputs {
  io::File data;        // --data, open
  data::KeepData keep_data = data::KeepData::automatic;   // --keep-data: where its rows are kept
  std::string resume;   // the checkpoint to continue from: --resume FILE, or --resume alone the
                        // newest checkpoint of --model; "" for a fresh run
  Rng init_rng;         // initialises a fresh model: Rng(--seed).fork(1); draws nothing on --resume
  // The /config of the checkpoint resumed, which must be a model of `kind` (FormatError naming
  // the file otherwise).
  std::map<std::string, io::AttrValue> resumed_config(const std::string& kind) const;
};

// What a tool's prepare hook returns: its model, data and TrainTask, alive for the whole run.
// Tools derive from it to own the model and the data the task refers to.
struct TrainRun {
  virtual ~TrainRun() = default;
  train::TrainTask task;     // task.config: the model's own configuration (to_attrs)
  int64_t model_width = 0;   // d_model, for --lr-schedule inverse-sqrt's default peak (--lr 0)
};

// Batching: exactly one of the two is > 0 (and is the default of its option).
struct BatchingDefaults {
  int64_t max_tokens = 0;   // --max-tokens: length-bucketed batches of B x Lmax tokens
  int64_t batch_size = 0;   // --batch-size: batches of this many examples in random order
  // With batch_size: also offer --max-tokens (default 0, off), length-bucketed batches instead of
  // --batch-size, for examples of very different lengths (padding every random batch to its
  // longest example wastes most of the work).
  bool max_tokens_option = false;
};

struct TrainVerb {
  std::string synopsis = "--data FILE --model FILE [options]";
  std::string about;                    // the --help paragraph
  std::string data_help;                // --data's help: which data sets it reads
  BatchingDefaults batching;
  int64_t epochs = 10;
  // The defaults of the optimizer options. Each kind keeps its own constants, so that
  // `--optimizer adam` on a tool whose default is RMSProp gets Adam's usual ones.
  train::OptimizerSpec optimizer;
  double clip_norm = 0;                 // --clip (global norm; 0: off)
  double clip_value = 0;                // --clip-value (0: off)
  std::function<void(Options&)> add_options;   // the model's (add_model) and the tool's own
  std::function<std::unique_ptr<TrainRun>(const Options&, TrainInputs&)> prepare;
  // --repeats: the curve whose final validation value selects the run kept, lower being better
  // ("loss", or one of the task's metrics: "error"), and, optionally, a trained model's scores
  // on the data set's test split ({"test_error", 0.012}; none without a test split).
  const char* repeats_metric = "loss";
  std::function<std::vector<std::pair<std::string, double>>(const std::string& model, const io::File& data)>
      test_scores{};
};

// Parses the options, prepares the run, trains and prints the summary; the verb's exit code.
int run_train_verb(const char* tool, int argc, char** argv, const TrainVerb& verb);

// Whether the user gave the option (command line or --config) rather than taking its default.
bool given(const Options& opts, const std::string& name);

}  // namespace attn::cli

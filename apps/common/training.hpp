// What the `train` verbs of the sequence-model tools (attn-transformer, attn-seq2seq) share:
// the trainer's options, the train::TrainConfig they give, the configuration stored with the
// model, progress and epoch lines on stderr, and the summary line. A verb adds its model's
// options and its learning-rate options around them:
//
//   add_batch_options(opts, 4096, 10);            // --max-tokens --epochs --steps
//   opts.add()("lr", ...);                         // the tool's own schedule
//   add_run_options(opts, /*default_clip=*/0);    // --clip --checkpoint-every --keep-checkpoints
//                                                  // --resume --seed --threads
//   if (!opts.parse(argc, argv)) return 0;
//   const TrainInputs in = open_train_inputs(opts);    // the data set, resumed or not
//   ... the model's config from the options or in.resumed_config(kind), the model, its task ...
//   train::TrainConfig tc = train_config(opts, in.resume);   // then tc.schedule, tc.adam
//   describe_task(opts, task);
//   run_training(opts, task, tc);
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "attn/io/hdf5_file.hpp"
#include "attn/train/token_run.hpp"
#include "attn/train/trainer.hpp"
#include "common/options.hpp"

namespace attn::cli {

// The end of every train verb's --help text: what the model file holds.
inline constexpr const char* kTrainFilesAbout =
    "The model file holds /config, /params, /optimizer, /state, /metrics (loss curves) and\n"
    "/vocab, and --resume continues from it to the same bits as an uninterrupted run.";

// --max-tokens, --epochs, --steps.
void add_batch_options(Options& opts, int64_t default_max_tokens, int64_t default_epochs);
// --clip, --checkpoint-every, --keep-checkpoints, --resume, --seed, --threads.
void add_run_options(Options& opts, double default_clip);

// Whether the user gave the option (command line or --config) rather than taking its default.
bool given(const Options& opts, const std::string& name);

// The file to continue from: --resume FILE, or --resume alone the newest checkpoint of --model
// (IoError when there is none); "" without --resume.
std::string resume_path(const Options& opts);

// What a train verb reads before it builds its model: --data, its vocabularies, and the
// checkpoint to continue from (resume_path; "" for a fresh run).
struct TrainInputs {
  io::File data;
  train::Vocabs vocabs;
  std::string resume;
  // The /config of the checkpoint resumed, a model of `kind` whose vocabulary sizes must be the
  // data set's (train::resumed_config).
  std::map<std::string, io::AttrValue> resumed_config(const std::string& kind) const;
};
TrainInputs open_train_inputs(const Options& opts);

// The trainer's configuration from the options above and --model: --steps alone replaces
// --epochs. The caller sets the schedule and the Adam constants.
train::TrainConfig train_config(const Options& opts, const std::string& resume);

// task.config becomes the effective options (named with '_' for '-') overlaid by the model's
// own hyper-parameters already in it; created_by and command name the tool and its command line.
void describe_task(const Options& opts, train::TrainTask& task);

// train::fit with a progress line and one line per epoch on stderr (none with --quiet), then
// the one-line summary on stdout (stderr when the model goes to stdout). A failure to write a
// model or checkpoint throws OutputError (the inputs were read before).
train::TrainResult run_training(const Options& opts, const train::TrainTask& task, const train::TrainConfig& config);

}  // namespace attn::cli

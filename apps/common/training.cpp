// The train verbs' shared options, configuration, progress and summary (training.hpp).
#include "common/training.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "attn/train/checkpoints.hpp"
#include "common/cli.hpp"
#include "common/progress.hpp"

namespace attn::cli {

void add_batch_options(Options& opts, int64_t default_max_tokens, int64_t default_epochs) {
  opts.add()("max-tokens", int_value(default_max_tokens)->notifier(positive<int64_t>("max-tokens")),
             "tokens per batch (B x longest length, padding included)");
  opts.epochs(default_epochs);
  opts.add()("steps", int_value(0)->notifier(at_least<int64_t>("steps", 0)),
             "stop after this many optimizer steps (0: no limit); alone, it replaces --epochs");
}

void add_run_options(Options& opts, double default_clip) {
  opts.add()
      ("clip", po::value<double>()->value_name("X")->default_value(default_clip, format_number(default_clip))
                   ->notifier(at_least<double>("clip", 0.0)),
       "clip the gradients' global norm to this (0: no clipping)")
      ("checkpoint-every", int_value(0)->notifier(at_least<int64_t>("checkpoint-every", 0)),
       "write a checkpoint every N steps (0: only the final model)")
      ("keep-checkpoints", int_value(5)->notifier(positive<int64_t>("keep-checkpoints")),
       "periodic checkpoints kept, the newest")
      ("resume", po::value<std::string>()->value_name("FILE")->implicit_value(""),
       "continue a run from FILE, or alone from the newest checkpoint of --model; the model's "
       "options (architecture, dropout, ...) come from the file, the trainer's (batches, steps, "
       "rate, clipping, seed) from this command line (give the same ones to continue bit for bit)");
  opts.seed(1).threads();
}

bool given(const Options& opts, const std::string& name) {
  for (const ConfigEntry& e : opts.config())
    if (e.name == name) return !e.defaulted;
  return false;
}

std::string resume_path(const Options& opts) {
  if (!opts.has("resume")) return "";
  const std::string resume = opts.get<std::string>("resume");
  return resume.empty() ? train::latest_checkpoint(opts.get<std::string>("model")) : resume;
}

std::map<std::string, io::AttrValue> TrainInputs::resumed_config(const std::string& kind) const {
  return train::resumed_config(resume, kind, data, vocabs);
}

TrainInputs open_train_inputs(const Options& opts) {
  io::File data = io::File::open_read(opts.get<std::string>("data"));
  train::Vocabs vocabs = train::read_data_vocabs(data);
  return {std::move(data), std::move(vocabs), resume_path(opts)};
}

train::TrainConfig train_config(const Options& opts, const std::string& resume) {
  train::TrainConfig tc;
  tc.max_steps = opts.get<int64_t>("steps");
  tc.epochs = (tc.max_steps > 0 && !given(opts, "epochs")) ? 0 : opts.get<int64_t>("epochs");
  tc.max_tokens = opts.get<int64_t>("max-tokens");
  tc.seed = static_cast<uint64_t>(opts.get<int64_t>("seed"));
  tc.clip_norm = opts.get<double>("clip");
  tc.model_path = opts.get<std::string>("model");
  tc.checkpoint_every = opts.get<int64_t>("checkpoint-every");
  tc.keep_checkpoints = opts.get<int64_t>("keep-checkpoints");
  tc.resume_from = resume;
  return tc;
}

void describe_task(const Options& opts, train::TrainTask& task) {
  std::map<std::string, io::AttrValue> stored;   // the options, then the model's own fields
  for (const ConfigEntry& e : opts.config()) {
    std::string key = e.name;
    std::replace(key.begin(), key.end(), '-', '_');
    stored[key] = e.value;
  }
  for (auto& [key, value] : task.config) stored[key] = value;
  task.config = std::move(stored);
  task.created_by = opts.tool() + " " + version();
  task.command = opts.command();
}

train::TrainResult run_training(const Options& opts, const train::TrainTask& task, const train::TrainConfig& config) {
  const char* tool = opts.tool().c_str();
  train::TrainResult result;
  {
    // Made before training starts, so that the ETA counts from the first step's start; the rate
    // shown is the trainer's tokens per second of training steps (validation left out). The
    // scope ends it (and closes a redrawn line) before the summary below.
    ProgressOptions shown;
    shown.unit = "tok";
    shown.quiet = opts.quiet();
    Progress progress(0, shown);
    train::TrainCallbacks callbacks;
    callbacks.on_step = [&](const train::StepReport& r) {
      progress.set_total(r.total_steps);
      progress.update(r.step, r.epoch_loss, r.tokens, r.tokens_per_second);
    };
    callbacks.on_epoch = [&](const train::EpochReport& r) {
      if (opts.quiet()) return;
      progress.finish();
      char line[256];
      std::snprintf(line, sizeof line, "%s train: epoch %lld%s (step %lld): train loss %.4f", tool,
                    static_cast<long long>(r.epoch + 1), r.partial ? " (partial)" : "",
                    static_cast<long long>(r.step), r.train.loss());
      std::cerr << line;
      if (r.valid.tokens > 0) {
        std::snprintf(line, sizeof line, ", valid loss %.4f, perplexity %.3f, token accuracy %.4f", r.valid.loss(),
                      r.valid.perplexity(), r.valid.accuracy());
        std::cerr << line;
      }
      std::cerr << "\n";
    };

    try {
      result = train::fit(task, config, callbacks);
    } catch (const IoError& e) {   // the inputs were read before: a failure now is in writing
      throw OutputError(e.what());
    }
  }

  const std::string& model_path = config.model_path;
  char summary[512];
  if (result.last_valid.tokens > 0)
    std::snprintf(summary, sizeof summary,
                  "%s train: %lld steps, %lld epochs; valid loss %.4f, perplexity %.3f, token accuracy %.4f -> %s",
                  tool, static_cast<long long>(result.step), static_cast<long long>(result.epoch),
                  result.last_valid.loss(), result.last_valid.perplexity(), result.last_valid.accuracy(),
                  model_path.c_str());
  else
    std::snprintf(summary, sizeof summary, "%s train: %lld steps, %lld epochs; train loss %.4f -> %s", tool,
                  static_cast<long long>(result.step), static_cast<long long>(result.epoch),
                  result.train_loss.empty() ? NAN : double(result.train_loss.back()), model_path.c_str());
  const double rate = result.train_seconds > 0 ? double(result.train_tokens) / result.train_seconds : 0.0;
  const size_t used = std::strlen(summary);
  std::snprintf(summary + used, sizeof summary - used, " (%lld target tokens in %.1f s of training, %.0f tokens/s)",
                static_cast<long long>(result.train_tokens), result.train_seconds, rate);
  if (model_path == "-") {
    if (!opts.quiet()) std::cerr << summary << std::endl;
  } else {
    std::cout << summary << std::endl;
  }
  return result;
}

}  // namespace attn::cli

// Every tool's train verb: shared options, optimizer resolution, the stored configuration,
// progress and summary lines (training.hpp).
#include "common/training.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <optional>

#include "attn/core/memory.hpp"
#include "attn/dist/world.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/train/checkpoints.hpp"
#include "attn/train/data_fingerprint.hpp"
#include "attn/train/optimizer_spec.hpp"
#include "attn/train/rank_agreement.hpp"
#include "attn/train/repeats.hpp"
#include "common/cli.hpp"
#include "common/progress.hpp"

namespace attn::cli {
namespace {

using optim::OptimizerKind;

// The end of every train verb's --help text: what the model file holds.
constexpr const char* kTrainFilesAbout =
    "The model file holds /config, /params, /optimizer, /state, /metrics (learning curves) and\n"
    "/trained_on (fingerprints of the data), and --resume continues from it to the same bits as an\n"
    "uninterrupted run, on the same data only (--allow-new-data otherwise).";

// A float constant as the decimal it was written as (0.98f -> 0.98, not 0.9800000190734863).
double decimal(float v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::stod(std::string(buf, res.ptr));
}

std::string kind_names(std::initializer_list<OptimizerKind> kinds) {
  std::string out;
  for (OptimizerKind k : kinds) out += (out.empty() ? "" : " or ") + std::string(optim::optimizer_kind_name(k));
  return out;
}

void add_optimizer_options(Options& opts, const train::OptimizerSpec& d) {
  auto real = [](const std::string& flag, double dflt) {
    return po::value<double>()->value_name("X")->default_value(dflt, format_number(dflt))->notifier(
        at_least<double>(flag, 0.0));
  };
  auto per_kind = [](const char* what, double adam, double rmsprop, double sgd) {
    std::string h = what;
    h += " (default: ";
    bool first = true;
    for (const auto& [name, v] : {std::pair{"adam", adam}, std::pair{"rmsprop", rmsprop}, std::pair{"sgd", sgd}})
      if (!std::isnan(v))   // the constants are floats: shown as the decimals they were written as
        h += (first ? "" : ", ") + std::string(name) + " " + format_number(decimal(static_cast<float>(v))), first = false;
    return h + ")";
  };
  const char* kind = optim::optimizer_kind_name(d.kind);
  // clang-format off
  opts.add_optimizer()
      ("optimizer", choice("optimizer", kind, {"sgd", "rmsprop", "adam", "adamw"}),
       "sgd (momentum, Nesterov), rmsprop (Graves 2013's centred form), adam, adamw")
      ("lr", real("lr", d.lr), "learning rate; with inverse-sqrt its peak (0: (model width * warmup)^-0.5)")
      ("lr-schedule", choice("lr-schedule", train::lr_schedule_name(d.schedule), {"constant", "inverse-sqrt", "step"}),
       "constant; inverse-sqrt: linear warm-up, then 1/sqrt(step) (Vaswani et al. eq. 3); step: multiplied "
       "by --lr-decay after every --lr-decay-every epochs")
      ("warmup", int_value(d.warmup)->notifier(positive<int64_t>("warmup")), "warm-up steps of inverse-sqrt")
      ("lr-decay", po::value<double>()->value_name("X")->default_value(d.lr_decay, format_number(d.lr_decay))
                       ->notifier(in_range<double>("lr-decay", 1e-9, 1.0)),
       "factor of the step schedule")
      ("lr-decay-every", int_value(d.lr_decay_every)->notifier(positive<int64_t>("lr-decay-every")),
       "epochs between the step schedule's decays")
      ("beta1", po::value<double>()->value_name("X")->notifier(in_range<double>("beta1", 0.0, 0.999999)),
       per_kind("Adam's beta1", d.adam.beta1, NAN, NAN).c_str())
      ("beta2", po::value<double>()->value_name("X")->notifier(in_range<double>("beta2", 0.0, 0.999999)),
       per_kind("Adam's beta2", d.adam.beta2, NAN, NAN).c_str())
      ("eps", po::value<double>()->value_name("X")->notifier(positive<double>("eps")),
       per_kind("epsilon", d.adam.eps, d.rmsprop.eps, NAN).c_str())
      ("rho", po::value<double>()->value_name("X")->notifier(in_range<double>("rho", 0.0, 0.999999)),
       per_kind("RMSProp's decay of its running averages", NAN, d.rmsprop.rho, NAN).c_str())
      ("centered", po::value<bool>()->value_name("0|1"),
       per_kind("RMSProp divides by the running standard deviation", NAN, d.rmsprop.centered, NAN).c_str())
      ("momentum", po::value<double>()->value_name("X")->notifier(in_range<double>("momentum", 0.0, 0.999999)),
       per_kind("momentum", NAN, d.rmsprop.momentum, d.sgd.momentum).c_str())
      ("nesterov", po::value<bool>()->value_name("0|1"),
       per_kind("Nesterov momentum", NAN, NAN, d.sgd.nesterov).c_str())
      ("weight-decay", po::value<double>()->value_name("X")->notifier(at_least<double>("weight-decay", 0.0)),
       per_kind("L2 weight decay (adamw: decoupled)", d.adam.weight_decay, d.rmsprop.weight_decay,
                d.sgd.weight_decay).c_str());
  // clang-format on
}

// The optimizer and schedule the options describe, from the tool's defaults. A flag of another
// optimizer or schedule than the one chosen is a usage error.
train::OptimizerSpec optimizer_spec(const Options& opts, const train::OptimizerSpec& defaults) {
  train::OptimizerSpec spec = defaults;
  spec.kind = optim::parse_optimizer_kind(opts.get<std::string>("optimizer"));
  const bool adam = spec.kind == OptimizerKind::adam || spec.kind == OptimizerKind::adamw;
  const bool rmsprop = spec.kind == OptimizerKind::rmsprop, sgd = spec.kind == OptimizerKind::sgd;
  auto given_for = [&](const char* flag, bool applies, const std::string& kinds) {
    if (!opts.has(flag)) return false;
    if (!applies)
      throw ConfigError(std::string("--") + flag + " applies to --optimizer " + kinds + ", not " +
                        optim::optimizer_kind_name(spec.kind));
    return true;
  };
  auto real = [&](const char* flag) { return static_cast<float>(opts.get<double>(flag)); };
  const std::string adams = kind_names({OptimizerKind::adam, OptimizerKind::adamw});
  if (given_for("beta1", adam, adams)) spec.adam.beta1 = real("beta1");
  if (given_for("beta2", adam, adams)) spec.adam.beta2 = real("beta2");
  if (given_for("eps", adam || rmsprop, adams + " or rmsprop")) (adam ? spec.adam.eps : spec.rmsprop.eps) = real("eps");
  if (given_for("rho", rmsprop, "rmsprop")) spec.rmsprop.rho = real("rho");
  if (given_for("centered", rmsprop, "rmsprop")) spec.rmsprop.centered = opts.get<bool>("centered");
  if (given_for("momentum", sgd || rmsprop, "sgd or rmsprop"))
    (sgd ? spec.sgd.momentum : spec.rmsprop.momentum) = real("momentum");
  if (given_for("nesterov", sgd, "sgd")) spec.sgd.nesterov = opts.get<bool>("nesterov");
  if (opts.has("weight-decay"))
    spec.adam.weight_decay = spec.sgd.weight_decay = spec.rmsprop.weight_decay = real("weight-decay");

  spec.schedule = train::parse_lr_schedule(opts.get<std::string>("lr-schedule"));
  const std::string schedule = train::lr_schedule_name(spec.schedule);
  for (const auto& [flag, wanted] : {std::pair{"warmup", "inverse-sqrt"}, std::pair{"lr-decay", "step"},
                                     std::pair{"lr-decay-every", "step"}})
    if (given(opts, flag) && schedule != wanted)
      throw ConfigError(std::string("--") + flag + " applies to --lr-schedule " + wanted + ", not " + schedule);
  spec.lr = opts.get<double>("lr");
  spec.warmup = opts.get<int64_t>("warmup");
  spec.lr_decay = opts.get<double>("lr-decay");
  spec.lr_decay_every = opts.get<int64_t>("lr-decay-every");
  return spec;
}

void add_training_options(Options& opts, const TrainVerb& verb) {
  const BatchingDefaults& b = verb.batching;
  if (b.max_tokens > 0)
    opts.add()("max-tokens", int_value(b.max_tokens)->notifier(positive<int64_t>("max-tokens")),
               "tokens per batch (B x longest length, padding included)");
  else
    opts.batch_size(b.batch_size);
  if (b.max_tokens <= 0 && b.max_tokens_option)
    opts.add()("max-tokens", int_value(0)->notifier(at_least<int64_t>("max-tokens", 0)),
               "length-bucketed batches of about this many tokens (B x longest length, padding included) "
               "instead of --batch-size (0: off)");
  opts.epochs(verb.epochs);
  // clang-format off
  opts.add()
      ("steps", int_value(0)->notifier(at_least<int64_t>("steps", 0)),
       "stop after this many optimizer steps (0: no limit); alone, it replaces --epochs")
      ("clip", po::value<double>()->value_name("X")->default_value(verb.clip_norm, format_number(verb.clip_norm))
                   ->notifier(at_least<double>("clip", 0.0)),
       "clip the gradients' global norm to this (0: no clipping)")
      ("clip-value", po::value<double>()->value_name("X")
                         ->default_value(verb.clip_value, format_number(verb.clip_value))
                         ->notifier(at_least<double>("clip-value", 0.0)),
       "clamp every gradient element to [-X, X] before the norm is clipped (0: no clamping)")
      ("checkpoint-every", int_value(0)->notifier(at_least<int64_t>("checkpoint-every", 0)),
       "write a checkpoint every N steps (0: only the final model)")
      ("keep-checkpoints", int_value(5)->notifier(positive<int64_t>("keep-checkpoints")),
       "periodic checkpoints kept, the newest")
      ("repeats", int_value(1)->notifier(positive<int64_t>("repeats")),
       ("train N runs, seeds --seed, --seed + 1, ..., into MODEL.run<k>.h5 and keep the one of the least final "
        "validation " + std::string(verb.repeats_metric) + " as --model (Sukhbaatar et al.'s best-of-N protocol); every run's "
        "scores go to MODEL.repeats.h5, so that the median can be reported too; not with --resume").c_str())
      ("resume", po::value<std::string>()->value_name("FILE")->implicit_value(""),
       "continue a run from FILE, or alone from the newest checkpoint of --model; the model's "
       "options come from the file, the trainer's (batches, steps, optimizer, clipping, seed) from this "
       "command line (give the same ones to continue bit for bit)")
      ("allow-new-data", po::bool_switch(),
       "with --resume: continue on a training split other than the one the model was trained on (its "
       "vocabularies must be the same); without it such a --data is refused")
      ("reset-optimizer", po::bool_switch(),
       "with --resume: start the optimizer's state (moments) afresh; needed to resume from a model "
       "without /optimizer (an averaged one), which is refused otherwise")
      ("keep-data", choice("keep-data", "auto", {"auto", "memory", "file"}),
       "where the training data's rows are kept: memory (read whole at the start: the fastest steps), "
       "file (left in --data and read a batch at a time: memory does not grow with the data set, and under "
       "mpirun each rank reads only its shard of every batch), auto (memory while they take at most a "
       "16th of the machine's memory, else file)")
      ("rank-timeout", po::value<double>()->value_name("S")->default_value(600.0, "600")
                           ->notifier(greater_than<double>("rank-timeout", 0.0)),
       "under mpirun: seconds a rank waits for the others before it stops the job (a rank died or hung)");
  // clang-format on
  opts.seed(1).threads();
}

train::TrainConfig train_config(const Options& opts, const std::string& resume) {
  train::TrainConfig tc;
  tc.max_steps = opts.get<int64_t>("steps");
  tc.epochs = (tc.max_steps > 0 && !given(opts, "epochs")) ? 0 : opts.get<int64_t>("epochs");
  if (opts.has("max-tokens") && opts.get<int64_t>("max-tokens") > 0) tc.max_tokens = opts.get<int64_t>("max-tokens");
  else tc.batch_size = opts.get<int64_t>("batch-size");
  tc.seed = static_cast<uint64_t>(opts.get<int64_t>("seed"));
  tc.clip_norm = opts.get<double>("clip");
  tc.clip_value = opts.get<double>("clip-value");
  tc.model_path = opts.get<std::string>("model");
  tc.checkpoint_every = opts.get<int64_t>("checkpoint-every");
  tc.keep_checkpoints = opts.get<int64_t>("keep-checkpoints");
  tc.resume_from = resume;
  tc.allow_new_data = opts.get<bool>("allow-new-data");
  tc.reset_optimizer = opts.get<bool>("reset-optimizer");
  if ((tc.allow_new_data || tc.reset_optimizer) && !opts.has("resume"))
    throw ConfigError(std::string("--") + (tc.allow_new_data ? "allow-new-data" : "reset-optimizer") +
                      " applies to --resume only");
  return tc;
}

// Options whose values may differ between the ranks of an MPI job: where a rank finds its files
// (the data's and a checkpoint's contents are compared instead) and how it runs.
constexpr const char* kRankLocal[] = {"data", "model", "resume", "threads", "fixed-threads", "rank-timeout"};

bool rank_local(const std::string& option) {
  return std::find(std::begin(kRankLocal), std::end(kRankLocal), option) != std::end(kRankLocal);
}

// Under mpirun, before the ranks share a pass over the data (the splits' checks): every rank must
// run the same tool and build with the same options (but kRankLocal) on the same training data
// (train/rank_agreement.hpp); fit compares what they resolve to. Returns this rank's fingerprint
// of --data, computed whole, as a fingerprint the ranks share out would be the same on every rank
// whatever its file holds; nullopt with one rank (fingerprinted after prepare, as ever).
std::optional<train::DataFingerprint> agree_before_start(const Options& opts, const io::File& data) {
  dist::Communicator& ranks = dist::world();
  if (ranks.size() == 1) return std::nullopt;
  std::vector<train::RankSetting> mine{{"the tool", opts.tool() + " " + opts.verb()},
                                       {"the attnlab version", version()}};
  for (const ConfigEntry& e : opts.config())
    if (!rank_local(e.name)) mine.push_back({"--" + e.name, e.text});
  // Whether a run resumes is the same everywhere; from which file, fit compares by what it holds.
  const std::string resume = opts.has("resume") ? opts.get<std::string>("resume") : "";
  mine.push_back({"--resume", opts.has("resume") ? "given" : "not given",
                  !opts.has("resume") ? "not given"
                  : resume.empty()    ? "given alone"
                                      : "'" + resume + "'"});
  train::agree_on_settings(ranks, mine,
                           "; every rank of a data-parallel job must be started with the same options (only the "
                           "names of the --data, --model and --resume files, --threads, --fixed-threads and "
                           "--rank-timeout may differ); stopping the job");
  dist::SingleProcess alone;
  train::DataFingerprint own = train::fingerprint_data(data, alone);
  train::agree_on_data(ranks, own);
  return own;
}

// /config: the verb's own options as given (the number of epochs as the trainer took it: 0 when
// --steps alone bounds the run; the seed and the model file as the run has them, which under
// --repeats are its own), the optimizer as resolved, the model's fields.
void describe_task(const Options& opts, const train::TrainConfig& tc,
                   const std::map<std::string, io::AttrValue>& optimizer, train::TrainTask& task) {
  std::map<std::string, io::AttrValue> stored;
  for (const ConfigEntry& e : opts.config()) {
    if (e.group != OptionGroup::own) continue;
    std::string key = e.name;
    std::replace(key.begin(), key.end(), '-', '_');
    stored[key] = e.value;
  }
  stored["epochs"] = tc.epochs;
  stored["seed"] = static_cast<int64_t>(tc.seed);
  stored["model"] = tc.model_path;
  for (const auto& [key, value] : optimizer) stored[key] = value;
  for (const auto& [key, value] : task.config) stored[key] = value;
  task.config = std::move(stored);
  for (const char* option : kRankLocal) {   // not compared between the ranks
    std::string key = option;
    std::replace(key.begin(), key.end(), '-', '_');
    task.rank_local.push_back(key);
  }
  task.created_by = opts.tool() + " " + version();
  task.command = opts.command();
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

// ", valid loss 0.1234, perplexity 1.2345, token accuracy 0.9876" (valid) or the train metrics.
std::string metrics_text(const train::TrainTask& task, const train::EpochReport& r) {
  const bool valid = r.valid.count > 0;
  std::string out = valid ? ", valid loss " + number(r.valid.loss()) : "";
  for (const train::Metric& m : task.metrics) out += ", " + m.label + " " + number(m.of(valid ? r.valid : r.train));
  for (const auto& [name, value] : r.values)
    for (const train::EpochMetric& m : task.epoch_metrics)
      if (name == "valid_" + m.name) out += ", " + m.label + " " + number(value);
  return out;
}

// "; 2 ranks, exchange 12.3 ms and 45.6 MB per step" on several ranks (rank 0's wait after its
// backward, the part of the exchange the backward did not hide), "" on one.
std::string ranks_text(const train::TrainResult& r) {
  if (r.ranks == 1) return "";
  const double steps = static_cast<double>(std::max<int64_t>(r.run_steps, 1));
  char text[160];
  std::snprintf(text, sizeof text, "; %d ranks, exchange %.1f ms and %.2f MB per step", r.ranks,
                1e3 * r.comm_seconds / steps, static_cast<double>(r.comm_bytes) / steps / 1e6);
  return text;
}

// train::fit with a progress line and one line per epoch on stderr (none with --quiet), then
// the one-line summary on stdout (stderr when the model goes to stdout). A failure to write a
// model or checkpoint throws OutputError (the inputs were read before).
void run_training(const Options& opts, const train::TrainTask& task, const train::TrainConfig& config) {
  const std::string tool = opts.tool();
  train::TrainResult result;
  {
    // Made before training starts, so that the ETA counts from the first step's start; the rate
    // shown is the trainer's own (validation left out). The scope ends it (and closes a redrawn
    // line) before the summary below.
    ProgressOptions shown;
    shown.unit = task.unit.rate;
    shown.quiet = opts.quiet() || !dist::world().is_root();   // one progress line per job
    Progress progress(0, shown);
    train::TrainCallbacks callbacks;
    callbacks.on_step = [&](const train::StepReport& r) {
      progress.set_total(r.total_steps);
      progress.update(r.step, r.epoch_loss, r.units, r.units_per_second);
    };
    callbacks.on_epoch = [&](const train::EpochReport& r) {
      if (opts.quiet()) return;
      progress.finish();
      std::cerr << tool << " " << opts.verb() << ": epoch " << r.epoch + 1 << (r.partial ? " (partial)" : "")
                << " (step " << r.step << "): train loss " << number(r.train.loss()) << metrics_text(task, r) << "\n";
    };
    try {
      result = train::fit(task, config, callbacks);
    } catch (const IoError& e) {   // the inputs were read before: a failure now is in writing
      throw OutputError(e.what());
    }
  }

  std::string summary = tool + " " + opts.verb() + ": " + std::to_string(result.step) + " steps, " +
                        std::to_string(result.epoch) + " epochs; ";
  if (result.last.valid.count > 0 || result.last.values.empty())
    summary += metrics_text(task, result.last).substr(2);
  else
    summary += "train loss " + number(result.last.train.loss()) + metrics_text(task, result.last);
  char rate[160];
  std::snprintf(rate, sizeof rate, " (%lld %s in %.1f s of training, %.0f %s/s)",
                static_cast<long long>(result.train_units), task.unit.plural.c_str(), result.train_seconds,
                result.train_seconds > 0 ? double(result.train_units) / result.train_seconds : 0.0,
                task.unit.plural.c_str());
  summary += " -> " + config.model_path + rate + ranks_text(result);
  if (!dist::world().is_root()) return;   // rank 0 speaks for the job
  if (config.model_path == "-") {
    if (!opts.quiet()) std::cerr << summary << std::endl;
  } else {
    std::cout << summary << std::endl;
  }
}

// One training run with this seed into this model file, the rest as the options say.
void train_one(const Options& opts, const TrainVerb& verb, int64_t seed, const std::string& model) {
  TrainInputs in{io::open_dataset(opts.get<std::string>("data")),
                 data::parse_keep_data(opts.get<std::string>("keep-data")), "",
                 Rng(static_cast<uint64_t>(seed)).fork(/*label=*/1)};
  if (opts.has("resume")) {
    const std::string resume = opts.get<std::string>("resume");
    in.resume = resume.empty() ? train::latest_checkpoint(model) : resume;
    // Every value is restored from the checkpoint: drawing them would be work thrown away, and
    // for a damaged /config that asks for more memory than the machine has, minutes of it.
    in.init_rng = Rng::drawing_nothing();
  }
  train::TrainConfig tc = train_config(opts, in.resume);
  const std::optional<train::DataFingerprint> own = agree_before_start(opts, in.data);
  // A resumed model is sized by its checkpoint's /config; a new one by the options.
  const MemoryScope scope = in.resume.empty()
                                ? MemoryScope::options("the model the options describe")
                                : MemoryScope::input("the model that " + in.resume + "'s /config describes");
  const std::unique_ptr<TrainRun> run = verb.prepare(opts, in);
  run->task.data = own ? *own : train::fingerprint_data(in.data);   // stored in the model, checked by --resume
  tc.seed = static_cast<uint64_t>(seed);
  tc.model_path = model;
  const train::OptimizerSpec optimizer = optimizer_spec(opts, verb.optimizer);
  tc.optimizer = train::resolve_optimizer(optimizer, train::batches_per_epoch(run->task, tc), run->model_width);
  describe_task(opts, tc, train::optimizer_attrs(optimizer), run->task);
  run_training(opts, run->task, tc);
}

// "valid error 0.0100, test error 0.0120"
std::string scores_text(const train::RepeatRun& r, const std::string& metric) {
  std::string out = "valid " + metric + " " + number(r.valid_metric);
  for (const auto& [name, value] : r.test) {
    std::string label = name;
    std::replace(label.begin(), label.end(), '_', ' ');
    out += ", " + label + " " + number(value);
  }
  return out;
}

int train_repeats(const Options& opts, const TrainVerb& verb, int64_t repeats) {
  const std::string model = opts.get<std::string>("model"), data = opts.get<std::string>("data");
  if (opts.has("resume"))
    throw ConfigError("--repeats does not combine with --resume (resume the run's own file, MODEL.run<k>.h5)");
  if (model == "-") throw ConfigError("--repeats needs --model FILE (not -): every run has a file beside it");
  if (data == "-") throw ConfigError("--repeats reads --data once per run: give a file, not -");
  std::vector<train::RepeatRun> runs;
  for (int64_t k = 1; k <= repeats; ++k) {
    train::RepeatRun r{.seed = opts.get<int64_t>("seed") + k - 1, .path = train::repeat_run_path(model, k)};
    train_one(opts, verb, r.seed, r.path);
    runs.push_back(r);
  }
  // Every rank: fit returned once rank 0 had written every run, and the test scores' batches are
  // shared out over the ranks (train/split_run.hpp); rank 0 alone keeps the best run.
  const io::File d = io::open_dataset(data);
  for (train::RepeatRun& r : runs) {
    train::read_final_scores(r, verb.repeats_metric);
    if (verb.test_scores) r.test = verb.test_scores(r.path, d);
  }
  if (!dist::world().is_root()) return 0;
  const size_t kept = train::best_run(runs);
  try {
    train::keep_best(runs, kept, verb.repeats_metric, model, opts.tool() + " " + version());
  } catch (const IoError& e) {
    throw OutputError(e.what());
  }
  const std::string tool = opts.tool();
  for (size_t k = 0; k < runs.size(); ++k)
    std::cout << tool << " " << opts.verb() << ": run " << k + 1 << " (seed " << runs[k].seed
              << "): " << scores_text(runs[k], verb.repeats_metric) << " -> " << runs[k].path << "\n";
  std::string spread;
  for (const train::ScoreSpread& s : train::test_spreads(runs, kept))
    spread += "; " + s.name + " over the runs: median " + number(s.median) + ", min " + number(s.min) + ", max " +
              number(s.max);
  std::cout << tool << " " << opts.verb() << ": --repeats " << repeats << ": kept run " << kept + 1 << " (seed "
            << runs[kept].seed << "), the least final valid " << verb.repeats_metric << " (the best-of-" << repeats
            << " protocol): " << scores_text(runs[kept], verb.repeats_metric) << spread << " -> " << model
            << " (every run: " << train::repeats_summary_path(model) << ")" << std::endl;
  return 0;
}

}  // namespace

bool given(const Options& opts, const std::string& name) {
  for (const ConfigEntry& e : opts.config())
    if (e.name == name) return !e.defaulted;
  return false;
}

std::map<std::string, io::AttrValue> TrainInputs::resumed_config(const std::string& kind) const {
  return io::load_checkpoint(resume, kind).config;
}

int run_train_verb(const char* tool, int argc, char** argv, const TrainVerb& verb) {
  Options opts(tool, verb.synopsis, verb.about + "\n" + kTrainFilesAbout);
  opts.data(verb.data_help).model("the trained model to write (HDF5); checkpoints go next to it as NAME.stepN.h5",
                                  /*required=*/true, FileRole::output);
  opts.may_share("resume", "model");   // a checkpoint continued into itself
  if (verb.add_options) verb.add_options(opts);
  add_training_options(opts, verb);
  add_optimizer_options(opts, verb.optimizer);
  opts.distributed();
  if (!opts.parse(argc, argv)) return 0;
  dist::world().set_timeout(opts.get<double>("rank-timeout"));
  const int64_t repeats = opts.get<int64_t>("repeats");
  if (repeats > 1) return train_repeats(opts, verb, repeats);
  train_one(opts, verb, opts.get<int64_t>("seed"), opts.get<std::string>("model"));
  return 0;
}

}  // namespace attn::cli

// attn-ntm train: options -> ntm::NtmConfig and the sequence task, then the shared train verb
// (apps/common/training.hpp) over attn/families/ntm/run.hpp.
#include <iostream>
#include <memory>
#include <optional>

#include "attn/families/ntm/run.hpp"
#include "common/options.hpp"
#include "common/training.hpp"
#include "verbs.hpp"

namespace attn::ntm_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;

void add_options(cli::Options& opts) {
  // clang-format off
  opts.add_model()
      ("controller", cli::choice("controller", "lstm", {"lstm", "ff"}),
       "controller network: an LSTM, or feed-forward tanh layers")
      ("controller-size", int_value(100)->notifier(cli::positive<int64_t>("controller-size")), "controller width H")
      ("controller-layers", int_value(1)->notifier(cli::positive<int64_t>("controller-layers")), "controller layers")
      ("memory", po::value<std::string>()->value_name("N,M")->default_value("128,20"),
       "memory rows N and row width M")
      ("read-heads", int_value(1)->notifier(cli::at_least<int64_t>("read-heads", 0)), "read heads")
      ("write-heads", int_value(1)->notifier(cli::at_least<int64_t>("write-heads", 0)), "write heads")
      ("shift-range", int_value(1)->notifier(cli::at_least<int64_t>("shift-range", 0)),
       "location addressing shifts by -r..r rows")
      ("memory-init", cli::choice("memory-init", "constant", {"constant", "learned", "random"}),
       "the memory before the first step: 1e-6 everywhere, a learned matrix, or random per sequence "
       "(Collier & Beel 2018 compare the three)")
      ("baseline", cli::choice("baseline", "none", {"none", "lstm"}),
       "lstm: train Graves et al.'s baseline instead of the NTM the other options describe: an LSTM "
       "of --baseline-layers layers and no memory, as wide as it takes to match that NTM's parameter "
       "count")
      ("baseline-layers", int_value(3)->notifier(cli::positive<int64_t>("baseline-layers")),
       "layers of the LSTM baseline (Graves et al.: 3)");
  opts.add()
      ("epoch-size", int_value(1000)->notifier(cli::at_least<int64_t>("epoch-size", 0)),
       "sequences per epoch, after each of which come validation and a learning-curve entry (0: the "
       "whole training set)")
      ("curriculum", po::bool_switch(),
       "start with the shortest sequences and admit the next length after each epoch whose training "
       "bit error rate is at most --curriculum-threshold")
      ("curriculum-threshold", po::value<double>()->value_name("X")->default_value(0.01, "0.01")
                                   ->notifier(cli::in_range<double>("curriculum-threshold", 0.0, 1.0)),
       "bit error rate at which the curriculum moves on");
  // clang-format on
}

ntm::NtmConfig config_from_options(const cli::Options& opts, const data::SequenceSplit& train) {
  ntm::NtmConfig c;
  c.input_size = train.input_width();
  c.output_size = train.output_width();
  c.controller = ntm::parse_ntm_controller(opts.get<std::string>("controller"));
  c.controller_size = opts.get<int64_t>("controller-size");
  c.controller_layers = opts.get<int64_t>("controller-layers");
  const std::vector<int64_t> memory = cli::parse_int_list("memory", opts.get<std::string>("memory"));
  if (memory.size() != 2 || memory[0] < 1 || memory[1] < 1)
    throw ConfigError("--memory must be two positive integers N,M, got '" + opts.get<std::string>("memory") + "'");
  c.memory_rows = memory[0];
  c.memory_width = memory[1];
  c.read_heads = opts.get<int64_t>("read-heads");
  c.write_heads = opts.get<int64_t>("write-heads");
  c.shift_range = opts.get<int64_t>("shift-range");
  c.memory_init = ntm::parse_ntm_memory_init(opts.get<std::string>("memory-init"));
  c.validate();
  if (opts.get<std::string>("baseline") == "lstm") {
    const ntm::NtmConfig baseline = ntm::lstm_baseline(c, opts.get<int64_t>("baseline-layers"));
    if (!opts.quiet())
      std::cerr << kTool << " train: the LSTM baseline: " << baseline.controller_layers << " layers of "
                << baseline.controller_size << " units, " << ntm::parameter_count(baseline)
                << " parameters (the NTM it stands in for: " << ntm::parameter_count(c) << ")\n";
    return baseline;
  }
  return c;
}

// What a training run keeps alive: the data, the model and its task.
struct NtmRun : cli::TrainRun {
  data::SequenceSplit train, valid;
  bool has_valid = false;
  std::optional<ntm::Ntm> model;
};

std::unique_ptr<cli::TrainRun> prepare(const cli::Options& opts, cli::TrainInputs& in) {
  auto run = std::make_unique<NtmRun>();
  run->train = data::open_sequence_split(in.data, "train", in.keep_data);
  run->has_valid = in.data.is_group("/valid");
  if (run->has_valid) run->valid = data::open_sequence_split(in.data, "valid", in.keep_data);
  const ntm::NtmConfig config = in.resume.empty() ? config_from_options(opts, run->train)
                                                  : ntm::NtmConfig::from_attrs(in.resumed_config("ntm"), in.resume);
  ntm::check_widths(config, run->train, in.data.display_name(), "train");
  if (run->has_valid) ntm::check_widths(config, run->valid, in.data.display_name(), "valid");
  run->model.emplace(config, in.init_rng);
  ntm::NtmTraining serving;
  serving.batch_size = opts.get<int64_t>("batch-size");
  serving.epoch_size = opts.get<int64_t>("epoch-size");
  serving.seed = static_cast<uint64_t>(opts.get<int64_t>("seed"));
  serving.curriculum = opts.get<bool>("curriculum");
  serving.curriculum_threshold = opts.get<double>("curriculum-threshold");
  run->task = ntm::ntm_task(*run->model, run->train, run->has_valid ? &run->valid : nullptr, serving);
  return run;
}

}  // namespace

int cmd_train(int argc, char** argv) {
  // clang-format off
  return cli::run_train_verb(kTool, argc, argv, {
      .about = "Trains a neural Turing machine (Graves et al. 2014; Collier & Beel 2018's parameterisation) on\n"
               "a task of attn-data: by default with RMSProp in Graves' centred form (rho 0.95, momentum 0.9,\n"
               "eps 1e-4, lr 1e-4) on one sequence at a time, gradients clipped to [-10, 10]; validates on\n"
               "/valid after every --epoch-size sequences. Costs are in bits per sequence.",
      .data_help = "NTM task data set, HDF5 (attn-data copy, repeat-copy, assoc-recall, priority-sort)",
      .batching = {.max_tokens = 0, .batch_size = 1},
      .epochs = 100,
      .optimizer = {.kind = optim::OptimizerKind::rmsprop, .lr = 1e-4},
      .clip_value = 10.0,
      .add_options = add_options,
      .prepare = prepare,
  });
  // clang-format on
}

}  // namespace attn::ntm_tool

// attn-memnet train: options -> models::MemN2NConfig and the bAbI task, then the shared train
// verb (apps/common/training.hpp) over attn/train/memnet_run.hpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/train/memnet_run.hpp"
#include "common/options.hpp"
#include "common/training.hpp"
#include "verbs.hpp"

namespace attn::memnet_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;

void add_options(cli::Options& opts) {
  opts.add_model()
      ("hops", int_value(3)->notifier(cli::positive<int64_t>("hops")), "memory hops (the paper's K)")
      ("embedding-size", int_value(20)->notifier(cli::positive<int64_t>("embedding-size")),
       "embedding width (the paper's d: 20 on one task, 50 joint)")
      ("encoding", cli::choice("encoding", "position", {"bow", "position", "position-fixed"}),
       "sentence encoding: bag of words; the paper's position encoding (PE, weights by a word's place in its "
       "sentence); or position-fixed, the authors' code's PE (weights by place alone, over the longest sentence "
       "of the training data + 1), which solves bAbI tasks 15 and 16 where the paper's form fails them")
      ("temporal-encoding", po::bool_switch(), "add the learned temporal vectors T_A, T_C to the memories (the default)")
      ("no-temporal-encoding", po::bool_switch(), "leave the temporal encoding out")
      ("tying", cli::choice("tying", "adjacent", {"adjacent", "layerwise"}),
       "weight tying: adjacent (A^{k+1} = C^k) or layerwise (one A and C, u <- H u + o)")
      ("memory-size", int_value(50)->notifier(cli::positive<int64_t>("memory-size")),
       "the most recent story sentences the model reads");
  opts.add()
      ("linear-start", po::bool_switch(),
       "linear start (LS): train without the hops' softmax until the validation loss stops falling, then "
       "restore it")
      ("linear-start-epochs", int_value(0)->notifier(cli::at_least<int64_t>("linear-start-epochs", 0)),
       "with --linear-start: restore the softmax after exactly N epochs (the authors' code: 20 on one task, 30 "
       "joint); 0: when the validation loss stops falling (the paper's rule). The rate stays at --lr while the "
       "softmax is out; its schedule starts when it is restored")
      ("random-noise", po::bool_switch(),
       "random noise (RN): insert 10% empty memories at random places in time while training (temporal "
       "encoding only)")
      ("repeats", int_value(1)->notifier(cli::positive<int64_t>("repeats")),
       "train K runs (seeds --seed, --seed + 1, ...) into MODEL.run<k>.h5, keep the one of the best "
       "final validation error (then loss) as --model (the paper's protocol) and write every run's validation and "
       "test error to MODEL.repeats.h5; not with --resume");
}

models::MemN2NConfig config_from_options(const cli::Options& opts, const data::Vocab& vocab, const data::QaSplit& train) {
  if (opts.get<bool>("temporal-encoding") && opts.get<bool>("no-temporal-encoding"))
    throw ConfigError("give --temporal-encoding or --no-temporal-encoding, not both");
  models::MemN2NConfig c;
  c.vocab_size = vocab.size();
  c.embedding_size = opts.get<int64_t>("embedding-size");
  c.hops = opts.get<int64_t>("hops");
  c.memory_size = opts.get<int64_t>("memory-size");
  c.encoding = models::parse_memn2n_encoding(opts.get<std::string>("encoding"));
  c.temporal = !opts.get<bool>("no-temporal-encoding");
  c.tying = models::parse_memn2n_tying(opts.get<std::string>("tying"));
  // The code's J: the longest sentence or question, + 1 for its time word.
  if (c.encoding == models::MemN2NEncoding::position_fixed)
    c.sentence_length = std::max(train.sentence_width(), train.question_width()) + 1;
  c.validate();
  return c;
}

// What a training run keeps alive: the data, the vocabulary, the model and its task.
struct MemnetRun : cli::TrainRun {
  data::Vocab vocab;
  data::QaSplit train, valid;
  bool has_valid = false;
  std::optional<models::MemN2N> model;
};

std::unique_ptr<cli::TrainRun> prepare(const cli::Options& opts, cli::TrainInputs& in) {
  if (opts.get<int64_t>("repeats") != 1)   // cmd_train runs the repeats; only from a --config file it is not seen
    throw ConfigError("give --repeats on the command line, not in a --config file");
  auto run = std::make_unique<MemnetRun>();
  run->vocab = data::read_qa_vocab(in.data);
  run->train = data::read_qa_split(in.data, "train", run->vocab.size());
  run->has_valid = in.data.is_group("/valid");
  if (run->has_valid) run->valid = data::read_qa_split(in.data, "valid", run->vocab.size());
  const models::MemN2NConfig config =
      in.resume.empty() ? config_from_options(opts, run->vocab, run->train)
                        : models::MemN2NConfig::from_attrs(in.resumed_config("memnet"), in.resume);
  train::check_vocab(config, run->vocab, in.data.display_name());
  run->model.emplace(config, in.init_rng);
  train::MemnetTraining options;
  options.linear_start = opts.get<bool>("linear-start");
  options.linear_start_epochs = opts.get<int64_t>("linear-start-epochs");
  if (options.linear_start_epochs > 0 && !options.linear_start)
    throw ConfigError("--linear-start-epochs applies with --linear-start");
  options.random_noise = opts.get<bool>("random-noise");
  run->task = train::memnet_task(*run->model, run->train, run->has_valid ? &run->valid : nullptr, run->vocab, options);
  run->model_width = config.embedding_size;
  return run;
}

int train_once(int argc, char** argv);

// --repeats K: the command line's words, with --repeats, --model and --seed picked out.
struct RepeatsLine {
  int64_t repeats = 1;
  std::string model, data;
  int64_t seed = 1;
  bool resume = false, help = false;
  std::vector<std::string> rest;   // every other word (argv[0], the verb, first)
  std::vector<std::string> picked; // the flags picked out, each once
};

RepeatsLine scan(int argc, char** argv) {
  RepeatsLine line;
  line.rest.emplace_back(argv[0]);
  auto number = [](const std::string& flag, const std::string& text) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size()) throw ConfigError("--" + flag + " must be an integer, got '" + text + "'");
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i], value;
    const size_t eq = word.find('=');
    const std::string flag = word.rfind("--", 0) == 0 ? word.substr(2, eq == std::string::npos ? std::string::npos : eq - 2) : "";
    const bool picked = flag == "repeats" || flag == "model" || flag == "seed";
    if (picked) {
      if (eq != std::string::npos) {
        value = word.substr(eq + 1);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        throw ConfigError("--" + flag + " needs a value");
      }
      if (std::find(line.picked.begin(), line.picked.end(), flag) != line.picked.end())
        throw ConfigError("--" + flag + " is given more than once");
      line.picked.push_back(flag);
      if (flag == "repeats") line.repeats = number(flag, value);
      if (flag == "model") line.model = value;
      if (flag == "seed") line.seed = number(flag, value);
      continue;
    }
    if (flag == "resume") line.resume = true;
    if (flag == "help") line.help = true;
    if (flag == "data") line.data = eq != std::string::npos ? word.substr(eq + 1) : (i + 1 < argc ? argv[i + 1] : "");
    line.rest.push_back(word);
  }
  return line;
}

// "mn.h5" -> "mn.run2.h5", "mn.repeats.h5".
std::string beside(const std::string& model, const std::string& tag) {
  const std::filesystem::path p(model);
  return (p.parent_path() / (p.stem().string() + "." + tag + p.extension().string())).string();
}

// The last entry of a model file's curve, NaN when absent or empty.
double last_of(const io::File& file, const std::string& curve) {
  if (!file.is_dataset("/metrics/" + curve)) return NAN;
  const Tensor t = file.read("/metrics/" + curve);
  return t.numel() > 0 ? t.at(t.numel() - 1) : NAN;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? NAN : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int train_repeats(const RepeatsLine& line) {
  if (line.resume) throw ConfigError("--repeats does not combine with --resume (resume the run's own file instead)");
  if (line.model.empty() || line.model == "-") throw ConfigError("--repeats needs --model FILE (not -)");
  if (line.data == "-") throw ConfigError("--repeats reads --data once per run: give a file, not -");
  const int64_t K = line.repeats;
  std::vector<double> valid_error(static_cast<size_t>(K)), valid_loss(static_cast<size_t>(K)),
      test_error(static_cast<size_t>(K));
  std::vector<std::string> paths;
  for (int64_t k = 0; k < K; ++k) {
    paths.push_back(beside(line.model, "run" + std::to_string(k + 1)));
    std::vector<std::string> words = line.rest;
    for (const std::string& w : {std::string("--model"), paths.back(), std::string("--seed"),
                                 std::to_string(line.seed + k)})
      words.push_back(w);
    std::vector<char*> args;
    for (std::string& w : words) args.push_back(w.data());
    args.push_back(nullptr);
    const int code = train_once(static_cast<int>(words.size()), args.data());
    if (code != 0) return code;
  }
  // Every run's final validation error (its training error without a validation set) and its
  // test error when the data set has a test split.
  const io::File data = io::File::open_read(line.data);
  std::optional<data::QaSplit> test;
  for (int64_t k = 0; k < K; ++k) {
    const train::MemnetFile m = train::load_memnet(paths[k]);
    {
      const io::File f = io::File::open_read(paths[k]);
      valid_error[k] = last_of(f, "valid_error");
      valid_loss[k] = last_of(f, "valid_loss");
      if (std::isnan(valid_error[k])) {
        valid_error[k] = last_of(f, "train_error");
        valid_loss[k] = last_of(f, "train_loss");
      }
    }
    test_error[k] = NAN;
    if (data.is_group("/test")) {
      if (!test) test = data::read_qa_split(data, "test", m.vocab.size());
      train::check_vocab(m.model.config(), data::read_qa_vocab(data), data.display_name(), &m.vocab);
      test_error[k] = train::answer_error(train::evaluate_memnet(m.model, *test, 32).stats);
    }
  }
  int64_t kept = 0;   // the least validation error; on a tie, the least validation loss
  for (int64_t k = 1; k < K; ++k)
    if (valid_error[k] < valid_error[kept] || std::isnan(valid_error[kept]) ||
        (valid_error[k] == valid_error[kept] && valid_loss[k] < valid_loss[kept]))
      kept = k;
  std::filesystem::copy_file(paths[kept], line.model, std::filesystem::copy_options::overwrite_existing);
  const std::string summary_path = beside(line.model, "repeats");
  {
    io::File f = io::File::create(summary_path);
    f.set_attr("/", "format", "attnlab/output");
    f.set_attr("/", "kind", "memnet-repeats");
    f.set_attr("/", "kept_run", kept + 1);
    std::vector<float> v(valid_error.begin(), valid_error.end()), t(test_error.begin(), test_error.end());
    std::vector<int32_t> seeds;
    for (int64_t k = 0; k < K; ++k) seeds.push_back(static_cast<int32_t>(line.seed + k));
    f.write("/valid_error", Tensor::from({K}, v));
    f.write("/test_error", Tensor::from({K}, t));
    f.write("/seed", Tensor::from_ints({K}, seeds));
    f.set_attr("/", "test_error_kept", test_error[kept]);
    f.set_attr("/", "test_error_median", median(test_error));
    f.commit();
  }
  for (int64_t k = 0; k < K; ++k)
    std::printf("%s train: run %lld (seed %lld): valid error %.4f, test error %.4f -> %s\n", kTool,
                static_cast<long long>(k + 1), static_cast<long long>(line.seed + k), valid_error[k], test_error[k],
                paths[k].c_str());
  const auto [lo, hi] = std::minmax_element(test_error.begin(), test_error.end());
  std::printf("%s train: --repeats %lld: kept run %lld, the best validation error (Sukhbaatar et al.'s protocol): "
              "test error %.4f; over the %lld runs: median %.4f, min %.4f, max %.4f -> %s (every run: %s)\n",
              kTool, static_cast<long long>(K), static_cast<long long>(kept + 1), test_error[kept],
              static_cast<long long>(K), median(test_error), *lo, *hi, line.model.c_str(), summary_path.c_str());
  return 0;
}

}  // namespace

int cmd_train(int argc, char** argv) {
  const RepeatsLine line = scan(argc, argv);
  if (line.help || line.repeats == 1) return train_once(argc, argv);
  if (line.repeats < 1) throw ConfigError("--repeats must be >= 1, got " + std::to_string(line.repeats));
  return train_repeats(line);
}

namespace {

int train_once(int argc, char** argv) {
  return cli::run_train_verb(kTool, argc, argv, {
      .about = "Trains an end-to-end memory network (Sukhbaatar et al. 2015) on a bAbI data set of attn-data babi\n"
               "(one task, or all 20 for a joint model), validating on /valid after every epoch. By default with\n"
               "the paper's schedule: SGD, 100 epochs of batches of 32 questions, the rate halved every 25\n"
               "epochs, the gradient's norm clipped. The model averages its loss over the batch where the\n"
               "paper's code sums it, so the defaults are the paper's rescaled to give the same updates:\n"
               "--lr 0.32 = the paper's 0.01 x 32 questions, --clip 1.25 = the paper's 40 / 32. Change\n"
               "--batch-size and scale both to keep the paper's updates.",
      .data_help = "bAbI data set, HDF5 (attn-data babi)",
      .batching = {.max_tokens = 0, .batch_size = 32},
      .epochs = 100,
      .optimizer = {.kind = optim::OptimizerKind::sgd, .schedule = "step", .lr = 0.32, .lr_decay = 0.5,
                    .lr_decay_every = 25},
      .clip_norm = 1.25,
      .add_options = add_options,
      .prepare = prepare,
  });
}

}  // namespace

}  // namespace attn::memnet_tool

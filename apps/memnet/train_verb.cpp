// attn-memnet train: options -> memnet::MemN2NConfig and the bAbI task, then the shared train
// verb (apps/common/training.hpp) over attn/families/memnet/run.hpp.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "attn/core/error.hpp"
#include "attn/families/memnet/run.hpp"
#include "common/options.hpp"
#include "common/training.hpp"
#include "verbs.hpp"

namespace attn::memnet_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;

void add_options(cli::Options& opts) {
  // clang-format off
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
       "the most recent story sentences the model reads")
      ("empty-slots", po::bool_switch(),
       "as the authors' code: the hops' softmax also spans the memory's empty slots (min(--memory-size, the "
       "training data's longest story) in all), each scoring 0 and reading nothing, a way to attend to nothing");
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
       "encoding only)");
  // clang-format on
}

memnet::MemN2NConfig config_from_options(const cli::Options& opts, const data::Vocab& vocab,
                                         const memnet::QaSplit& train) {
  if (opts.get<bool>("temporal-encoding") && opts.get<bool>("no-temporal-encoding"))
    throw ConfigError("give --temporal-encoding or --no-temporal-encoding, not both");
  memnet::MemN2NConfig c;
  c.vocab_size = vocab.size();
  c.embedding_size = opts.get<int64_t>("embedding-size");
  c.hops = opts.get<int64_t>("hops");
  c.memory_size = opts.get<int64_t>("memory-size");
  c.encoding = memnet::parse_memn2n_encoding(opts.get<std::string>("encoding"));
  c.temporal = !opts.get<bool>("no-temporal-encoding");
  c.tying = memnet::parse_memn2n_tying(opts.get<std::string>("tying"));
  // The code's J: the longest sentence or question, + 1 for its time word.
  if (c.encoding == memnet::MemN2NEncoding::position_fixed)
    c.sentence_length = std::max(train.sentence_width(), train.question_width()) + 1;
  // The code's memory: as many slots as the longest training story has sentences, at most Mm.
  if (opts.get<bool>("empty-slots")) c.empty_slots = std::min(c.memory_size, train.memory_size());
  c.validate();
  return c;
}

// What a training run keeps alive: the data, the vocabulary, the model and its task.
struct MemnetRun : cli::TrainRun {
  data::Vocab vocab;
  memnet::QaSplit train, valid;
  bool has_valid = false;
  std::optional<memnet::MemN2N> model;
};

std::unique_ptr<cli::TrainRun> prepare(const cli::Options& opts, cli::TrainInputs& in) {
  auto run = std::make_unique<MemnetRun>();
  run->vocab = memnet::read_qa_vocab(in.data);
  run->train = memnet::open_qa_split(in.data, "train", run->vocab.size(), in.keep_data);
  run->has_valid = in.data.is_group("/valid");
  if (run->has_valid) run->valid = memnet::open_qa_split(in.data, "valid", run->vocab.size(), in.keep_data);
  const memnet::MemN2NConfig config = in.resume.empty()
                                          ? config_from_options(opts, run->vocab, run->train)
                                          : memnet::MemN2NConfig::from_attrs(in.resumed_config("memnet"), in.resume);
  std::optional<data::Vocab> resumed_vocab;   // the words the resumed model was trained with
  if (!in.resume.empty()) {
    const io::File checkpoint = io::File::open_read(in.resume);
    if (checkpoint.exists(memnet::kQaVocab)) resumed_vocab = data::read_vocab(checkpoint, memnet::kQaVocab);
  }
  memnet::check_vocab(config, run->vocab, in.data.display_name(), resumed_vocab ? &*resumed_vocab : nullptr);
  run->model.emplace(config, in.init_rng);
  memnet::MemnetTraining options;
  options.linear_start = opts.get<bool>("linear-start");
  options.linear_start_epochs = opts.get<int64_t>("linear-start-epochs");
  if (options.linear_start_epochs > 0 && !options.linear_start)
    throw ConfigError("--linear-start-epochs applies with --linear-start");
  options.random_noise = opts.get<bool>("random-noise");
  run->task = memnet::memnet_task(*run->model, run->train, run->has_valid ? &run->valid : nullptr, run->vocab, options);
  run->model_width = config.embedding_size;
  return run;
}

}  // namespace

int cmd_train(int argc, char** argv) {
  // clang-format off
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
      .optimizer = {.kind = optim::OptimizerKind::sgd, .schedule = train::LrSchedule::step, .lr = 0.32, .lr_decay = 0.5,
                    .lr_decay_every = 25},
      .clip_norm = 1.25,
      .add_options = add_options,
      .prepare = prepare,
      .repeats_metric = "error",
      .test_scores = memnet::memnet_test_scores,
  });
  // clang-format on
}

}  // namespace attn::memnet_tool

// attn-caption train: options -> caption::CaptionerConfig and the captioning task, then the
// shared train verb (apps/common/training.hpp) over attn/families/caption/run.hpp.
#include <memory>
#include <optional>
#include <string>

#include "attn/core/error.hpp"
#include "attn/families/caption/run.hpp"
#include "common/options.hpp"
#include "common/training.hpp"
#include "verbs.hpp"

namespace attn::caption_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;

void add_options(cli::Options& opts) {
  // clang-format off
  opts.add_model()
      ("encoder", po::value<std::string>()->value_name("LIST")->default_value("conv32x3,pool2,conv64x3,pool2"),
       "the convolutional encoder, trained from scratch: convKxS is an S x S convolution to K channels (zero "
       "padding S/2) and a ReLU, poolP is P x P max pooling; its last grid holds the annotation vectors")
      ("batch-norm", po::bool_switch(),
       "batch normalisation between every convolution and its ReLU (the convolution then has no bias; "
       "running statistics are used by eval and caption)")
      ("coords", po::bool_switch(),
       "append every location's (x, y), scaled to [-1, 1], to its annotation vector, so that attention can "
       "tell equal contents apart by where they are (the encoder alone is translation-equivariant)")
      ("embed-dim", int_value(64)->notifier(cli::in_range<int64_t>("embed-dim", 1, 65536)),
       "word embedding width (also the deep output's, the paper's m)")
      ("hidden", int_value(128)->notifier(cli::in_range<int64_t>("hidden", 1, 65536)), "LSTM units (the paper's n)")
      ("attention-dim", int_value(64)->notifier(cli::in_range<int64_t>("attention-dim", 1, 65536)),
       "hidden width of the attention's scoring network f_att")
      ("attention", cli::choice("attention", "soft", {"soft", "mean"}),
       "soft: Xu et al.'s deterministic attention; mean: no attention, the context is the mean annotation at "
       "every step (the ablation)")
      ("no-gate", po::bool_switch(), "leave out the gating scalar beta_t on the context (sec. 4.2.1)")
      ("alpha-c", po::value<double>()->value_name("L")->default_value(1.0, "1")
                      ->notifier(cli::in_range<double>("alpha-c", 0.0, 1e6)),
       "lambda of the doubly stochastic penalty sum_i (1 - sum_t alpha_ti)^2 (0: off)")
      ("alpha-entropy", po::value<double>()->value_name("G")->default_value(0.0, "0")
                            ->notifier(cli::in_range<double>("alpha-entropy", 0.0, 1e6)),
       "gamma of the attention-entropy penalty: gamma times the entropy of every word's attention "
       "(0: off; not in the paper: it asks each word to look at few locations)")
      ("alpha-entropy-epochs", int_value(0)->notifier(cli::at_least<int64_t>("alpha-entropy-epochs", 0)),
       "with --alpha-entropy: keep the entropy penalty for the first N epochs only, then train on the words' "
       "loss alone (0: throughout); a training option like --epochs, taken from the command line on --resume")
      ("dropout", po::value<double>()->value_name("P")->default_value(0.0, "0")
                      ->notifier(cli::in_range<double>("dropout", 0.0, 0.99)),
       "dropout on the deep output's hidden layer");
  // clang-format on
}

caption::CaptionerConfig config_from_options(const cli::Options& opts, const data::Vocab& vocab,
                                             const caption::CaptionSplit& train) {
  caption::CaptionerConfig c;
  c.vocab = vocab.size();
  c.channels = train.images.dim(1);
  c.height = train.images.dim(2);
  c.width = train.images.dim(3);
  c.encoder = opts.get<std::string>("encoder");
  c.batch_norm = opts.get<bool>("batch-norm");
  c.coords = opts.get<bool>("coords");
  c.embed_dim = opts.get<int64_t>("embed-dim");
  c.hidden = opts.get<int64_t>("hidden");
  c.attention_dim = opts.get<int64_t>("attention-dim");
  c.attention = caption::parse_caption_attention(opts.get<std::string>("attention"));
  if (c.attention != caption::CaptionAttention::soft)
    for (const char* name : {"no-gate", "alpha-c", "alpha-entropy"})
      if (opts.given(name))
        throw ConfigError(std::string("--") + name + " applies to --attention soft only (the mean ablation has no " +
                          "attention weights and no gate), got --attention " + opts.get<std::string>("attention"));
  c.gate = c.attention == caption::CaptionAttention::soft && !opts.get<bool>("no-gate");
  c.alpha_c = c.attention == caption::CaptionAttention::soft ? static_cast<float>(opts.get<double>("alpha-c")) : 0.0f;
  c.alpha_entropy = c.attention == caption::CaptionAttention::soft
                        ? static_cast<float>(opts.get<double>("alpha-entropy"))
                        : 0.0f;
  c.dropout = static_cast<float>(opts.get<double>("dropout"));
  c.validate();
  return c;
}

// What a training run keeps alive: the data, the vocabulary, the model and its task.
struct CaptionRun : cli::TrainRun {
  data::Vocab vocab;
  caption::CaptionSplit train, valid;
  bool has_valid = false;
  std::optional<caption::Captioner> model;
};

std::unique_ptr<cli::TrainRun> prepare(const cli::Options& opts, cli::TrainInputs& in) {
  auto run = std::make_unique<CaptionRun>();
  run->vocab = caption::read_caption_vocab(in.data);
  run->train = caption::open_caption_split(in.data, "train", run->vocab.size(), in.keep_data);
  run->has_valid = in.data.is_group("/valid");
  if (run->has_valid) run->valid = caption::open_caption_split(in.data, "valid", run->vocab.size(), in.keep_data);
  const caption::CaptionerConfig config = in.resume.empty() ? config_from_options(opts, run->vocab, run->train)
                                                            : caption::CaptionerConfig::from_attrs(
                                                                  in.resumed_config("captioner"), in.resume);
  caption::check_caption_data(config, run->vocab, run->train, in.data.display_name());
  if (run->has_valid) caption::check_caption_data(config, run->vocab, run->valid, in.data.display_name());
  run->model.emplace(config, in.init_rng);
  caption::CaptionTraining training;
  training.alpha_entropy_epochs = opts.get<int64_t>("alpha-entropy-epochs");
  if (training.alpha_entropy_epochs > 0 && config.alpha_entropy == 0)
    throw ConfigError("--alpha-entropy-epochs applies with --alpha-entropy > 0 and soft attention");
  run->task = caption::caption_task(*run->model, run->train, run->has_valid ? &run->valid : nullptr, run->vocab,
                                    training);
  run->model_width = config.hidden;
  return run;
}

}  // namespace

int cmd_train(int argc, char** argv) {
  // clang-format off
  return cli::run_train_verb(kTool, argc, argv, {
      .about = "Trains a soft-attention captioner (Xu et al. 2015, Show, Attend and Tell) on a data set of attn-data\n"
               "mnist-strips or shapes: a convolutional encoder trained from scratch, an LSTM decoder that\n"
               "attends over the encoder's grid before every word, the doubly stochastic penalty. Validates on\n"
               "/valid after every epoch (loss, perplexity, token and sequence accuracy). Adam, batches of 32\n"
               "images, the gradient's norm clipped to 5.",
      .data_help = "image-captioning data set, HDF5 (attn-data mnist-strips, attn-data shapes)",
      .batching = {.max_tokens = 0, .batch_size = 32},
      .epochs = 20,
      .optimizer = {.kind = optim::OptimizerKind::adam, .lr = 1e-3},
      .clip_norm = 5.0,
      .add_options = add_options,
      .prepare = prepare,
      .test_scores = caption::caption_test_scores,
  });
  // clang-format on
}

}  // namespace attn::caption_tool

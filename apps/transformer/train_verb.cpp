// attn-transformer train: options -> models::TransformerConfig and train::TrainConfig, then
// train::fit over the token data set (attn/train/trainer.hpp, transformer_run.hpp).
#include <algorithm>
#include <cmath>

#include "attn/train/transformer_run.hpp"
#include "common/options.hpp"
#include "common/training.hpp"
#include "verbs.hpp"

namespace attn::transformer_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;
using models::TransformerArch;

void add_options(cli::Options& opts) {
  opts.data("token data set, HDF5 (attn-data reverse, sort, multi30k, parallel)")
      .model("the trained model to write (HDF5); checkpoints go next to it as NAME.stepN.h5");
  opts.add()
      ("arch", po::value<std::string>()->default_value("encdec")
                   ->notifier(cli::one_of("arch", {"encdec", "lm", "mlm"})),
       "encdec (translation), lm (decoder-only on the targets), mlm (masked LM on the sources)")
      ("d-model", int_value(128)->notifier(cli::positive<int64_t>("d-model")), "model width D")
      ("heads", int_value(4)->notifier(cli::positive<int64_t>("heads")), "attention heads (divide D)")
      ("d-ff", int_value(512)->notifier(cli::positive<int64_t>("d-ff")), "feed-forward inner width")
      ("layers", int_value(2)->notifier(cli::at_least<int64_t>("layers", 0)), "encoder and decoder layers")
      ("enc-layers", po::value<int64_t>()->value_name("N")->notifier(cli::at_least<int64_t>("enc-layers", 0)),
       "encoder layers (default: --layers)")
      ("dec-layers", po::value<int64_t>()->value_name("N")->notifier(cli::at_least<int64_t>("dec-layers", 0)),
       "decoder layers (default: --layers)")
      ("dropout", po::value<double>()->value_name("P")->default_value(0.1, "0.1")
                      ->notifier(cli::in_range<double>("dropout", 0.0, 0.99)), "dropout probability")
      ("pos-encoding", po::value<std::string>()->default_value("sinusoidal")
                           ->notifier(cli::one_of("pos-encoding", {"sinusoidal", "learned"})),
       "positional encoding")
      ("norm", po::value<std::string>()->default_value("post")->notifier(cli::one_of("norm", {"post", "pre"})),
       "post: LayerNorm(x + sublayer(x)) as in the paper; pre: x + sublayer(LayerNorm(x))")
      ("tie-embeddings", po::value<std::string>()->default_value("output")
                             ->notifier(cli::one_of("tie-embeddings", {"none", "output", "all"})),
       "none; output: the output projection is the target embedding; all: also one table for "
       "source and target (needs one vocabulary, paper sec. 3.4)")
      ("attn-window", int_value(-1)->notifier(cli::at_least<int64_t>("attn-window", -1)),
       "self-attention radius (-1: unrestricted; paper sec. 4, restricted self-attention)")
      ("label-smoothing", po::value<double>()->value_name("EPS")->default_value(0.1, "0.1")
                              ->notifier(cli::in_range<double>("label-smoothing", 0.0, 0.99)),
       "label smoothing of the loss (paper sec. 5.4)");
  cli::add_batch_options(opts, /*default_max_tokens=*/4096, /*default_epochs=*/10);
  opts.add()
      ("lr", po::value<double>()->value_name("X")->default_value(0.0, "0")->notifier(cli::at_least<double>("lr", 0.0)),
       "peak learning rate, reached at step --warmup (0: the paper's (d_model * warmup)^-0.5)")
      ("warmup", int_value(4000)->notifier(cli::positive<int64_t>("warmup")),
       "warm-up steps of the inverse-square-root schedule (paper eq. 3)");
  cli::add_run_options(opts, /*default_clip=*/0.0);
}

models::TransformerConfig config_from_options(const cli::Options& opts, const train::Vocabs& vocabs) {
  models::TransformerConfig c;
  c.arch = models::arch_from_string(opts.get<std::string>("arch"));
  c.src_vocab = c.arch == TransformerArch::encdec ? vocabs.src.size() : 0;
  c.tgt_vocab = vocabs.tgt.size();
  const std::string tie = opts.get<std::string>("tie-embeddings");
  c.tie_output = tie != "none";
  c.shared_vocab = tie == "all" && c.arch == TransformerArch::encdec;
  if (c.shared_vocab && vocabs.src.tokens() != vocabs.tgt.tokens())
    throw ConfigError("--tie-embeddings all needs one vocabulary for source and target; the data set's "
                      "/vocab/src and /vocab/tgt differ (use --tie-embeddings output)");
  c.d_model = opts.get<int64_t>("d-model");
  c.heads = opts.get<int64_t>("heads");
  c.d_ff = opts.get<int64_t>("d-ff");
  const int64_t layers = opts.get<int64_t>("layers");
  c.enc_layers = opts.has("enc-layers") ? opts.get<int64_t>("enc-layers") : layers;
  c.dec_layers = opts.has("dec-layers") ? opts.get<int64_t>("dec-layers") : layers;
  c.dropout = static_cast<float>(opts.get<double>("dropout"));
  c.pos_encoding = models::positional_from_string(opts.get<std::string>("pos-encoding"));
  c.norm = models::norm_from_string(opts.get<std::string>("norm"));
  c.attn_window = opts.get<int64_t>("attn-window");
  c.label_smoothing = static_cast<float>(opts.get<double>("label-smoothing"));
  return c;
}

// The longest example of a split, in positions (BOS or EOS included).
int64_t longest(const train::TokenSplit& s) {
  int64_t m = 0;
  for (const Tensor* t : {&s.src, &s.tgt})
    if (!t->empty()) m = std::max(m, t->dim(1));
  return m;
}

}  // namespace

int cmd_train(int argc, char** argv) {
  cli::Options opts(kTool, "--data FILE --model FILE [options]",
                    "Trains a Transformer with Adam (beta 0.9, 0.98, eps 1e-9), the warm-up and inverse-\n"
                    "square-root schedule and label smoothing of Vaswani et al. 2017, in batches of about\n"
                    "--max-tokens tokens of similar lengths; validates every epoch on /valid when present.\n" +
                        std::string(cli::kTrainFilesAbout));
  add_options(opts);
  if (!opts.parse(argc, argv)) return 0;

  // The data set and, when resuming, the architecture stored with the run.
  const cli::TrainInputs in = cli::open_train_inputs(opts);
  models::TransformerConfig config = in.resume.empty()
                                         ? config_from_options(opts, in.vocabs)
                                         : models::TransformerConfig::from_attrs(in.resumed_config("transformer"));
  const train::TrainingData splits = train::read_training_data(in.data, train::transformer_request(config));
  if (in.resume.empty())
    config.max_len =
        std::max<int64_t>(256, std::max(longest(splits.train), splits.valid ? longest(*splits.valid) : 0) + 2);

  train::TrainConfig tc = cli::train_config(opts, in.resume);
  Rng init_rng = Rng(tc.seed).fork(/*label=*/1);
  models::Transformer model(config, init_rng);
  train::TrainTask task =
      train::transformer_task(model, splits.train, splits.valid_or_null(), in.vocabs.src, in.vocabs.tgt);
  cli::describe_task(opts, task);
  const int64_t warmup = opts.get<int64_t>("warmup");
  const double lr = opts.get<double>("lr");   // peak = scale * (d_model * warmup)^-0.5
  tc.schedule = optim::WarmupInverseSqrt(config.d_model, warmup,
                                         lr > 0 ? lr * std::sqrt(double(config.d_model) * double(warmup)) : 1.0);
  cli::run_training(opts, task, tc);
  return 0;
}

}  // namespace attn::transformer_tool

// attn-transformer train: options -> models::TransformerConfig and train::TrainConfig, then
// train::fit over the token data set (lib/train/trainer.hpp, transformer_run.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>

#include "attn/data/vocab.hpp"
#include "attn/train/checkpoints.hpp"
#include "attn/train/transformer_run.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"
#include "common/progress.hpp"
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
       "label smoothing of the loss (paper sec. 5.4)")
      ("max-tokens", int_value(4096)->notifier(cli::positive<int64_t>("max-tokens")),
       "tokens per batch (B x longest length, padding included)");
  opts.epochs(10);
  opts.add()
      ("steps", int_value(0)->notifier(cli::at_least<int64_t>("steps", 0)),
       "stop after this many optimizer steps (0: no limit); alone, it replaces --epochs")
      ("lr", po::value<double>()->value_name("X")->default_value(0.0, "0")->notifier(cli::at_least<double>("lr", 0.0)),
       "peak learning rate, reached at step --warmup (0: the paper's (d_model * warmup)^-0.5)")
      ("warmup", int_value(4000)->notifier(cli::positive<int64_t>("warmup")),
       "warm-up steps of the inverse-square-root schedule (paper eq. 3)")
      ("clip", po::value<double>()->value_name("X")->default_value(0.0, "0")->notifier(cli::at_least<double>("clip", 0.0)),
       "clip the gradients' global norm to this (0: no clipping)")
      ("checkpoint-every", int_value(0)->notifier(cli::at_least<int64_t>("checkpoint-every", 0)),
       "write a checkpoint every N steps (0: only the final model)")
      ("keep-checkpoints", int_value(5)->notifier(cli::positive<int64_t>("keep-checkpoints")),
       "periodic checkpoints kept, the newest")
      ("resume", po::value<std::string>()->value_name("FILE")->implicit_value(""),
       "continue a run from FILE, or alone from the newest checkpoint of --model; the model's "
       "architecture comes from the file, the training options from this command line (give "
       "the same ones to continue bit for bit)");
  opts.seed(1).threads();
}

bool given(const cli::Options& opts, const std::string& name) {
  for (const cli::ConfigEntry& e : opts.config())
    if (e.name == name) return !e.defaulted;
  return false;
}

models::TransformerConfig config_from_options(const cli::Options& opts, const data::Vocab& src_vocab,
                                              const data::Vocab& tgt_vocab) {
  models::TransformerConfig c;
  c.arch = models::arch_from_string(opts.get<std::string>("arch"));
  c.src_vocab = c.arch == TransformerArch::encdec ? src_vocab.size() : 0;
  c.tgt_vocab = tgt_vocab.size();
  const std::string tie = opts.get<std::string>("tie-embeddings");
  c.tie_output = tie != "none";
  c.shared_vocab = tie == "all" && c.arch == TransformerArch::encdec;
  if (c.shared_vocab && src_vocab.tokens() != tgt_vocab.tokens())
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
                    "--max-tokens tokens of similar lengths; validates every epoch on /valid when present.\n"
                    "The model file holds /config, /params, /optimizer, /state, /metrics (loss curves) and\n"
                    "/vocab, and --resume continues from it to the same bits as an uninterrupted run.");
  add_options(opts);
  if (!opts.parse(argc, argv)) return 0;
  const std::string data_path = opts.get<std::string>("data"), model_path = opts.get<std::string>("model");

  // The data set and, when resuming, the architecture stored with the run.
  const io::File data = io::File::open_read(data_path);
  const data::Vocab tgt_vocab = data::read_vocab(data, "/vocab/tgt");
  const data::Vocab src_vocab = data.exists("/vocab/src") ? data::read_vocab(data, "/vocab/src") : tgt_vocab;
  std::string resume;
  models::TransformerConfig config;
  if (opts.has("resume")) {
    resume = opts.get<std::string>("resume");
    if (resume.empty()) resume = train::latest_checkpoint(model_path);
    config = models::TransformerConfig::from_attrs(io::load_checkpoint(resume, "transformer").config);
    if (config.tgt_vocab != tgt_vocab.size() ||
        (config.arch == TransformerArch::encdec && config.src_vocab != src_vocab.size()))
      throw FormatError(data.display_name() + ": the vocabularies (/vocab/src " + std::to_string(src_vocab.size()) +
                        ", /vocab/tgt " + std::to_string(tgt_vocab.size()) + " tokens) differ from those of " +
                        resume + " (" + std::to_string(config.src_vocab) + ", " + std::to_string(config.tgt_vocab) + ")");
  } else {
    config = config_from_options(opts, src_vocab, tgt_vocab);
  }
  const train::TokenSplitRequest request = train::transformer_request(config);
  const train::TokenSplit train_split = train::read_token_split(data, "train", request);
  std::optional<train::TokenSplit> valid_split;
  if (train::has_split(data, "valid")) valid_split = train::read_token_split(data, "valid", request);
  if (!opts.has("resume"))
    config.max_len = std::max<int64_t>(256, std::max(longest(train_split), valid_split ? longest(*valid_split) : 0) + 2);

  const uint64_t seed = static_cast<uint64_t>(opts.get<int64_t>("seed"));
  Rng init_rng = Rng(seed).fork(/*label=*/1);
  models::Transformer model(config, init_rng);
  train::TrainTask task = train::transformer_task(model, train_split, valid_split ? &*valid_split : nullptr,
                                                  src_vocab, tgt_vocab);
  std::map<std::string, io::AttrValue> stored;   // the options, then the model's own fields
  for (const cli::ConfigEntry& e : opts.config()) {
    std::string key = e.name;
    std::replace(key.begin(), key.end(), '-', '_');
    std::visit([&](const auto& v) { stored[key] = io::AttrValue(v); }, e.value);
  }
  for (auto& [key, value] : task.config) stored[key] = value;
  task.config = std::move(stored);
  task.created_by = std::string(kTool) + " " + cli::version();
  task.command = opts.command();

  train::TrainConfig tc;
  tc.max_steps = opts.get<int64_t>("steps");
  tc.epochs = (tc.max_steps > 0 && !given(opts, "epochs")) ? 0 : opts.get<int64_t>("epochs");
  tc.max_tokens = opts.get<int64_t>("max-tokens");
  tc.seed = seed;
  const int64_t warmup = opts.get<int64_t>("warmup");
  const double lr = opts.get<double>("lr");   // peak = scale * (d_model * warmup)^-0.5
  tc.schedule = optim::WarmupInverseSqrt(config.d_model, warmup,
                                         lr > 0 ? lr * std::sqrt(double(config.d_model) * double(warmup)) : 1.0);
  tc.clip_norm = opts.get<double>("clip");
  tc.model_path = model_path;
  tc.checkpoint_every = opts.get<int64_t>("checkpoint-every");
  tc.keep_checkpoints = opts.get<int64_t>("keep-checkpoints");
  tc.resume_from = resume;

  std::optional<cli::Progress> progress;
  train::TrainCallbacks callbacks;
  callbacks.on_step = [&](const train::StepReport& r) {
    if (!progress) {
      cli::ProgressOptions po;
      po.unit = "tok";
      po.quiet = opts.quiet();
      progress.emplace(r.total_steps, po);
    }
    progress->update(r.step, r.epoch_loss, r.tokens);
  };
  callbacks.on_epoch = [&](const train::EpochReport& r) {
    if (opts.quiet()) return;
    if (progress) progress->finish();
    char line[256];
    std::snprintf(line, sizeof line, "%s train: epoch %lld%s (step %lld): train loss %.4f", kTool,
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

  train::TrainResult result;
  try {
    result = train::fit(task, tc, callbacks);
  } catch (const IoError& e) {   // the inputs were read above: a failure now is in writing
    throw cli::OutputError(e.what());
  }
  progress.reset();

  char summary[512];
  if (result.last_valid.tokens > 0)
    std::snprintf(summary, sizeof summary,
                  "%s train: %lld steps, %lld epochs; valid loss %.4f, perplexity %.3f, token accuracy %.4f -> %s",
                  kTool, static_cast<long long>(result.step), static_cast<long long>(result.epoch),
                  result.last_valid.loss(), result.last_valid.perplexity(), result.last_valid.accuracy(),
                  model_path.c_str());
  else
    std::snprintf(summary, sizeof summary, "%s train: %lld steps, %lld epochs; train loss %.4f -> %s", kTool,
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
  return 0;
}

}  // namespace attn::transformer_tool

// attn-transformer train: options -> transformer::TransformerConfig and train::TrainConfig, then
// train::fit over the token data set (attn/train/trainer.hpp, transformer_run.hpp).
#include <memory>

#include "attn/families/transformer/run.hpp"
#include "common/decoding.hpp"
#include "common/options.hpp"
#include "common/training.hpp"
#include "verbs.hpp"

namespace attn::transformer_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;
using transformer::TransformerArch;

void add_model_options(cli::Options& opts) {
  // clang-format off
  opts.add_model()
      ("arch", cli::choice("arch", "encdec", {"encdec", "lm", "mlm", "cmlm"}),
       "encdec (translation), lm (decoder-only on the targets), mlm (masked LM on the sources), cmlm "
       "(non-autoregressive translation: conditional masked LM with a length predictor, decoded by "
       "mask-predict; Ghazvininejad et al. 2019)")
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
      ("pos-encoding", cli::choice("pos-encoding", "sinusoidal", {"sinusoidal", "learned"}), "positional encoding")
      ("norm", cli::choice("norm", "post", {"post", "pre"}),
       "post: LayerNorm(x + sublayer(x)) as in the paper; pre: x + sublayer(LayerNorm(x))")
      ("tie-embeddings", cli::choice("tie-embeddings", "output", {"none", "output", "all"}),
       "none; output: the output projection is the target embedding; all: also one table for "
       "source and target (needs one vocabulary, paper sec. 3.4)")
      ("attn-window", int_value(-1)->notifier(cli::at_least<int64_t>("attn-window", -1)),
       "self-attention radius (-1: unrestricted; paper sec. 4, restricted self-attention)")
      ("max-positions", po::value<int64_t>()->value_name("N")->notifier(cli::positive<int64_t>("max-positions")),
       "max_len, the longest sequence the model handles (default: the longest training example + 3, "
       "at least 256); a body pre-trained on short text needs more to be fine-tuned on long examples")
      ("label-smoothing", po::value<double>()->value_name("EPS")->default_value(0.1, "0.1")
                              ->notifier(cli::in_range<double>("label-smoothing", 0.0, 0.99)),
       "label smoothing of the loss (paper sec. 5.4)");
  // clang-format on
  cli::add_valid_bleu_option(opts);
  // clang-format off
  opts.add()
      ("mask-prob", po::value<double>()->value_name("P")->notifier(cli::in_range<double>("mask-prob", 0.01, 1.0)),
       "mlm: the probability that a token is masked (default: BERT's 0.15)")
      ("mask-words", po::value<std::string>()->value_name("FILE"),
       "mlm: mask only these words (a text file, white-space separated; selective masking)")
      ("length-loss-weight", po::value<double>()->value_name("W")
                                 ->notifier(cli::in_range<double>("length-loss-weight", 0.0, 1000.0)),
       "cmlm: weight of the length predictor's loss beside the masked tokens' (default: the paper's 0.1)")
      ("target-masking", po::value<std::string>()->value_name("KIND")
                             ->notifier(cli::one_of("target-masking", {"uniform", "all", "glancing"})),
       "cmlm: the targets masked in training: uniform (CMLM, decoded by mask-predict's iterations; the "
       "default), all (vanilla NAT with position queries, one pass; Gu et al. 2018), glancing (GLAT, one "
       "pass; Qian et al. 2021)")
      ("decoder-inputs", po::value<std::string>()->value_name("KIND")
                             ->notifier(cli::one_of("decoder-inputs", {"mask", "copy"})),
       "cmlm: what a [MASK]ed target position reads: mask, the [MASK] embedding (the default; position "
       "queries when every position is masked), or copy, the embedding of the source token copied "
       "uniformly to it (Gu et al. 2018)")
      ("length-rule", po::value<std::string>()->value_name("RULE")
                          ->notifier(cli::one_of("length-rule", {"predictor", "eos"})),
       "cmlm: how the output length is decided: predictor (a classifier over the offset from the "
       "source length; the default) or eos (fill |x| + --eos-margin positions, cut at </s>)")
      ("eos-margin", po::value<int64_t>()->value_name("K")->notifier(cli::at_least<int64_t>("eos-margin", 0)),
       "--length-rule eos: positions beyond the source length the decoder fills (default 10)")
      ("glancing-ratio", po::value<double>()->value_name("F")->notifier(cli::in_range<double>("glancing-ratio", 0.0, 1.0)),
       "glancing: the share of the first pass's wrong tokens revealed to the second (default: the paper's 0.5)");
  // clang-format on
}

// BERT's masking, with --mask-prob's selection probability and --mask-words' words; both refused
// for the other architectures, which mask nothing.
transformer::MaskingOptions masking_from_options(const cli::Options& opts, TransformerArch arch,
                                                 const data::Vocab& vocab) {
  transformer::MaskingOptions masking;
  if (arch != TransformerArch::mlm && (opts.has("mask-prob") || opts.has("mask-words")))
    throw ConfigError("--mask-prob and --mask-words need a masked LM (--arch mlm), this model is '" +
                      std::string(transformer::arch_name(arch)) + "'");
  if (opts.has("mask-prob")) masking.select = static_cast<float>(opts.get<double>("mask-prob"));
  if (opts.has("mask-words")) masking.only = transformer::read_mask_words(opts.get<std::string>("mask-words"), vocab);
  return masking;
}

transformer::TransformerConfig config_from_options(const cli::Options& opts, const train::Vocabs& vocabs) {
  transformer::TransformerConfig c;
  c.arch = transformer::arch_from_string(opts.get<std::string>("arch"));
  c.src_vocab = c.encoder_decoder() ? vocabs.src.size() : 0;
  c.tgt_vocab = vocabs.tgt.size();
  c.tie_embeddings = transformer::tie_embeddings_from_string(opts.get<std::string>("tie-embeddings"));
  if (c.shared_vocab() && vocabs.src.tokens() != vocabs.tgt.tokens())
    throw ConfigError("--tie-embeddings all needs one vocabulary for source and target; the data set's "
                      "/vocab/src and /vocab/tgt differ (use --tie-embeddings output)");
  c.d_model = opts.get<int64_t>("d-model");
  c.heads = opts.get<int64_t>("heads");
  c.d_ff = opts.get<int64_t>("d-ff");
  const int64_t layers = opts.get<int64_t>("layers");
  c.enc_layers = opts.has("enc-layers") ? opts.get<int64_t>("enc-layers") : layers;
  c.dec_layers = opts.has("dec-layers") ? opts.get<int64_t>("dec-layers") : layers;
  c.dropout = static_cast<float>(opts.get<double>("dropout"));
  c.pos_encoding = transformer::positional_from_string(opts.get<std::string>("pos-encoding"));
  c.norm = transformer::norm_from_string(opts.get<std::string>("norm"));
  c.attn_window = opts.get<int64_t>("attn-window");
  c.label_smoothing = static_cast<float>(opts.get<double>("label-smoothing"));
  if (opts.has("length-loss-weight")) {
    if (c.arch != TransformerArch::cmlm)
      throw ConfigError("--length-loss-weight needs a cmlm model (--arch cmlm), this model is '" +
                        std::string(transformer::arch_name(c.arch)) + "'");
    c.length_loss_weight = static_cast<float>(opts.get<double>("length-loss-weight"));
  }
  if (opts.has("target-masking")) {
    if (c.arch != TransformerArch::cmlm)
      throw ConfigError("--target-masking needs a non-autoregressive model (--arch cmlm), this model is '" +
                        std::string(transformer::arch_name(c.arch)) + "'");
    c.target_masking = transformer::target_masking_from_string(opts.get<std::string>("target-masking"));
  }
  if (opts.has("decoder-inputs")) {
    if (c.arch != TransformerArch::cmlm)
      throw ConfigError("--decoder-inputs needs a non-autoregressive model (--arch cmlm), this model is '" +
                        std::string(transformer::arch_name(c.arch)) + "'");
    c.decoder_inputs = transformer::decoder_inputs_from_string(opts.get<std::string>("decoder-inputs"));
  }
  if (opts.has("length-rule")) {
    if (c.arch != TransformerArch::cmlm)
      throw ConfigError("--length-rule needs a non-autoregressive model (--arch cmlm), this model is '" +
                        std::string(transformer::arch_name(c.arch)) + "'");
    c.length_rule = transformer::length_rule_from_string(opts.get<std::string>("length-rule"));
  }
  if (opts.has("eos-margin")) {
    if (c.length_rule != transformer::LengthRule::eos)
      throw ConfigError("--eos-margin needs the cut at </s> (--arch cmlm --length-rule eos)");
    c.eos_margin = opts.get<int64_t>("eos-margin");
  }
  if (opts.has("glancing-ratio")) {
    if (c.target_masking != transformer::TargetMasking::glancing)
      throw ConfigError("--glancing-ratio needs glancing training (--arch cmlm --target-masking glancing)");
    c.glancing_ratio = static_cast<float>(opts.get<double>("glancing-ratio"));
  }
  return c;
}

std::unique_ptr<cli::TrainRun> prepare(const cli::Options& opts, cli::TrainInputs& in) {
  auto run = std::make_unique<cli::TokenTrainRun<transformer::Transformer>>();
  // The architecture decides which side's vocabulary is the model's (an mlm reads /src).
  const train::Vocabs data_vocabs = train::read_data_vocabs(in.data);
  transformer::TransformerConfig config;
  if (in.resume.empty()) {
    run->vocabs = transformer::transformer_vocabs(transformer::arch_from_string(opts.get<std::string>("arch")),
                                                  data_vocabs);
    config = config_from_options(opts, run->vocabs);
  } else {
    const std::map<std::string, io::AttrValue> stored = in.resumed_config("transformer");
    config = transformer::TransformerConfig::from_attrs(stored, in.resume);
    run->vocabs = transformer::transformer_vocabs(config.arch, data_vocabs);
    train::check_resumed_vocabs(stored, in.resume, in.data, run->vocabs);
  }
  run->splits = train::read_training_data(in.data, transformer::transformer_request(config), in.keep_data);
  if (in.resume.empty())
    config.max_len = transformer::transformer_max_len(
        run->splits, opts.has("max-positions") ? opts.get<int64_t>("max-positions") : 0);
  run->model.emplace(config, in.init_rng);
  run->task = transformer::transformer_task(*run->model, run->splits.train, run->splits.valid_or_null(),
                                            run->vocabs.src, run->vocabs.tgt,
                                            masking_from_options(opts, config.arch, run->vocabs.src));
  run->model_width = config.d_model;
  if (!config.encoder_decoder() && opts.get<bool>("valid-bleu"))
    throw ConfigError("--valid-bleu needs an encoder-decoder model (--arch encdec or cmlm)");
  cli::add_valid_bleu(opts, run->task, run->splits.valid_or_null(),
                      [m = &*run->model](const data::TokenSplit& s) { return transformer::translate(*m, s, {}); });
  return run;
}

}  // namespace

int cmd_train(int argc, char** argv) {
  // clang-format off
  return cli::run_train_verb(kTool, argc, argv, {
      .about = "Trains a Transformer with Adam (beta 0.9, 0.98, eps 1e-9), the warm-up and inverse-square-root\n"
               "schedule and label smoothing of Vaswani et al. 2017, in batches of about --max-tokens tokens of\n"
               "similar lengths; validates every epoch on /valid when present.",
      .data_help = "token data set, HDF5 (attn-data reverse, sort, multi30k, parallel)",
      .batching = {.max_tokens = 4096},
      .optimizer = {.schedule = train::LrSchedule::inverse_sqrt,
                    .lr = 0.0,   // the paper's peak, (d_model * warmup)^-0.5
                    .adam = {.lr = 0.0f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f, .weight_decay = 0.0f}},
      .add_options = add_model_options,
      .prepare = prepare,
  });
  // clang-format on
}

}  // namespace attn::transformer_tool

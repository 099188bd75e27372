// attn-transformer eval | translate | generate | average: a trained model on data
// (attn/families/transformer/run.hpp, lib/decode).
#include <iostream>

#include "attn/data/batching.hpp"
#include "attn/data/tokenizer.hpp"
#include "attn/data/vocab.hpp"
#include "attn/families/transformer/classifier_run.hpp"
#include "attn/families/transformer/decode.hpp"
#include "attn/families/transformer/run.hpp"
#include "common/cli.hpp"
#include "common/decoding.hpp"
#include "common/options.hpp"
#include "verbs.hpp"

namespace attn::transformer_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;

// What a model reads of a data set (transformer_request), with its own vocabularies: an mlm's
// one vocabulary is the data set's source side (transformer::transformer_vocabs).
cli::ModelReads reads(const transformer::TransformerFile& m) {
  const transformer::TransformerArch arch = m.model.config().arch;
  if (arch == transformer::TransformerArch::mlm)
    return {&m.tgt_vocab, nullptr, transformer::transformer_request(m.model.config())};
  return {m.model.config().encoder_decoder() ? &m.src_vocab : nullptr, &m.tgt_vocab,
          transformer::transformer_request(m.model.config())};
}

}  // namespace

int cmd_eval(int argc, char** argv) {
  cli::Options opts(kTool, cli::kEvalSynopsis,
                    std::string(cli::kEvalAbout) +
                        "\nA fine-tuned classifier (attn-transformer finetune) on a labelled set: loss, accuracy, error.");
  cli::add_eval_options(opts);
  opts.batch_size(64);   // a fine-tuned classifier's batches
  if (!opts.parse(argc, argv)) return 0;
  // Standard input can be read once: a model piped in is taken for a Transformer.
  const std::string model = opts.get<std::string>("model");
  if (model != "-" && transformer::is_classifier_file(model)) return eval_classifier(opts);
  const transformer::TransformerFile m = transformer::load_transformer(opts.get<std::string>("model"));
  cli::run_eval(opts, reads(m), [&](const data::TokenSplit& s, int64_t max_tokens) {
    return transformer::evaluate_transformer(m.model, s, max_tokens);
  });
  return 0;
}

int cmd_translate(int argc, char** argv) {
  cli::Options opts(kTool, cli::kTranslateSynopsis,
                    "Decodes the sources of one split with greedy (--beam 1) or beam search and writes the\n"
                    "predictions (/predictions, /predictions_len, /predictions_text, /predictions_detok,\n"
                    "/scores, /vocab/*), with --dump-attention also every decoder layer's weights\n"
                    "/attention/self/layer<i> [N, H, T, T] and /attention/cross/layer<i> [N, H, T, S].\n"
                    "Needs an encoder-decoder model (--arch encdec or cmlm). A cmlm model decodes with\n"
                    "mask-predict (--iterations, --length-beam; not --beam) and also writes its refinement:\n"
                    "/iterations/tokens [N, I, L] (the output after each iteration) and /iterations/masked\n"
                    "[N, I, L] (1 where a position was re-masked and predicted again).\n"
                    "Score it with: attn-bleu --hyp OUT --ref DATA --split SPLIT");
  cli::add_translate_options(opts, /*default_length_penalty=*/0.6,
                             "GNMT length penalty alpha of beam search, log p / ((5 + |y|) / 6)^alpha (paper: 0.6)");
  // clang-format off
  opts.add()
      ("dump-attention", po::bool_switch(), "store the attention weights of every layer and head")
      ("iterations", po::value<int64_t>()->value_name("T")->notifier(cli::positive<int64_t>("iterations")),
       "cmlm: mask-predict iterations (default: 10 for a model trained with uniform masking, the paper's; "
       "1, one parallel pass, with all or glancing)")
      ("length-beam", po::value<int64_t>()->value_name("L")->notifier(cli::positive<int64_t>("length-beam")),
       "cmlm: target lengths decoded per sentence, the most likely first; the best mean log-probability "
       "is kept (default 1; at most the model's max_len + 1)");
  // clang-format on
  opts.threads();
  if (!opts.parse(argc, argv)) return 0;
  const transformer::TransformerFile m = transformer::load_transformer(opts.get<std::string>("model"));
  train::TranslateOptions to = cli::translate_options(opts);
  to.decode.want_attention = opts.get<bool>("dump-attention");
  const transformer::TransformerConfig& config = m.model.config();
  transformer::MaskPredictOptions nat;
  if (config.arch == transformer::TransformerArch::cmlm) {
    if (to.decode.beam > 1)
      throw ConfigError("--beam is autoregressive beam search; a cmlm model decodes with mask-predict: use "
                        "--length-beam to decode several lengths");
    if (opts.has("iterations")) nat.iterations = opts.get<int64_t>("iterations");
    if (opts.has("length-beam")) nat.length_beam = opts.get<int64_t>("length-beam");
    if (nat.length_beam > config.max_len + 1)
      throw ConfigError("--length-beam must be in [1, " + std::to_string(config.max_len + 1) +
                        "] (the target lengths 0.." + std::to_string(config.max_len) +
                        " of this model's max_len), got " + std::to_string(nat.length_beam));
  } else if (opts.has("iterations") || opts.has("length-beam")) {
    throw ConfigError("--iterations and --length-beam need a non-autoregressive model (train --arch cmlm); " +
                      opts.get<std::string>("model") + " is '" + transformer::arch_name(config.arch) + "'");
  }
  cli::run_translate(opts, reads(m), m.src_vocab, m.tgt_vocab,
                     [&](const data::TokenSplit& s) { return transformer::translate(m.model, s, to, nat); });
  return 0;
}

int cmd_generate(int argc, char** argv) {
  cli::Options opts(kTool, "--model FILE [--prompt TOKENS] [options]",
                    "Samples continuations of a prompt from a language model (--arch lm), one line each\n"
                    "on stdout: softmax(logits / temperature), among the --top-k most likely tokens.");
  opts.model("trained language model, HDF5 (--arch lm)");
  // clang-format off
  opts.add()
      ("prompt", po::value<std::string>()->value_name("TOKENS")->default_value(""),
       "the prompt, tokens separated by spaces (unknown ones become <unk>)")
      ("n", int_value(1)->notifier(cli::positive<int64_t>("n")), "samples to draw")
      ("max-len", int_value(50)->notifier(cli::positive<int64_t>("max-len")), "most tokens generated")
      ("temperature", po::value<double>()->value_name("T")->default_value(1.0, "1")
                          ->notifier(cli::at_least<double>("temperature", 0.0)),
       "softmax temperature (0: always the most likely token)")
      ("top-k", int_value(0)->notifier(cli::at_least<int64_t>("top-k", 0)), "sample among the k most likely (0: all)");
  // clang-format on
  opts.seed(1).threads();
  if (!opts.parse(argc, argv)) return 0;
  const transformer::TransformerFile m = transformer::load_transformer(opts.get<std::string>("model"));
  if (m.model.config().arch != transformer::TransformerArch::lm)
    throw ConfigError("generate needs a language model (train --arch lm); " + opts.get<std::string>("model") + " is '" +
                      transformer::arch_name(m.model.config().arch) + "' (use translate)");
  const std::vector<int32_t> prompt = m.tgt_vocab.encode(data::split_whitespace(opts.get<std::string>("prompt")));
  const auto n = opts.get<int64_t>("n");
  const data::PaddedBatch p = data::pad_sequences(std::vector<std::vector<int32_t>>(static_cast<size_t>(n), prompt));
  const decode::DecodeOptions options{.max_len = opts.get<int64_t>("max-len")};
  const decode::Sampling sampling{.temperature = static_cast<float>(opts.get<double>("temperature")),
                                  .top_k = opts.get<int64_t>("top-k")};
  Rng rng(static_cast<uint64_t>(opts.get<int64_t>("seed")));
  const decode::Decoded r = transformer::sample(m.model, p.tokens, p.lengths, options, sampling, rng);
  for (const auto& tokens : r.tokens) std::cout << data::join_tokens(m.tgt_vocab.decode(tokens)) << "\n";
  std::cout.flush();
  return 0;
}

int cmd_average(int argc, char** argv) {
  cli::Options opts(kTool, "--inputs FILE... --out FILE",
                    "Averages the parameters of model files (the last checkpoints of one run, e.g.\n"
                    "NAME.step*.h5) into one model, as Vaswani et al. 2017, sec. 6.1 (the last 5).");
  opts.add()("inputs", po::value<std::vector<std::string>>()->value_name("FILE")->multitoken()->required(),
             "model files of the same architecture");
  opts.out("the averaged model, HDF5");
  if (!opts.parse(argc, argv)) return 0;
  const auto inputs = opts.get<std::vector<std::string>>("inputs");
  io::File out = [&] {
    try {
      return io::File::create(opts.get<std::string>("out"));
    } catch (const IoError& e) {
      throw cli::OutputError(e.what());
    }
  }();
  transformer::average_transformers(inputs, out, std::string(kTool) + " " + cli::version(), opts.command());
  cli::commit_output(out);
  cli::print_summary(opts, std::string(kTool) + " average: " + std::to_string(inputs.size()) + " models -> " +
                               opts.get<std::string>("out"));
  return 0;
}

}  // namespace attn::transformer_tool

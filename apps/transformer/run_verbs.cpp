// attn-transformer eval | translate | generate | average: a trained model on data
// (lib/train/transformer_run.hpp, lib/decode).
#include <cstdio>
#include <iostream>

#include "attn/data/batching.hpp"
#include "attn/data/tokenizer.hpp"
#include "attn/data/vocab.hpp"
#include "attn/decode/decode.hpp"
#include "attn/train/transformer_run.hpp"
#include "common/cli.hpp"
#include "common/options.hpp"
#include "verbs.hpp"

namespace attn::transformer_tool {
namespace {

namespace po = boost::program_options;
using cli::int_value;

// The split of `data` that `model` reads, after checking that the data set uses the model's
// vocabularies (the ids would mean other words otherwise).
train::TokenSplit read_split(const io::File& data, const train::TransformerFile& m, const std::string& split) {
  const bool encdec = m.model.config().arch == models::TransformerArch::encdec;
  for (const auto& [name, vocab] : {std::pair{"/vocab/tgt", &m.tgt_vocab}, std::pair{"/vocab/src", &m.src_vocab}}) {
    if (!encdec && std::string(name) == "/vocab/src") continue;
    if (data::read_vocab(data, name).tokens() != vocab->tokens())
      throw FormatError(data.display_name() + ": dataset '" + name + "' differs from the model's vocabulary (" +
                        std::to_string(vocab->size()) + " tokens): the model was trained on another data set");
  }
  return train::read_token_split(data, split, train::transformer_request(m.model.config()));
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

int cmd_eval(int argc, char** argv) {
  cli::Options opts(kTool, "--model FILE --data FILE [options]",
                    "Teacher-forced evaluation on one split: loss, perplexity, token accuracy, and sequence\n"
                    "accuracy (every target token right, EOS included: exactly when greedy decoding\n"
                    "reproduces the target).");
  opts.model("trained model, HDF5").data("token data set, HDF5").split("test");
  opts.add()("max-tokens", int_value(4096)->notifier(cli::positive<int64_t>("max-tokens")), "tokens per batch");
  opts.threads();
  if (!opts.parse(argc, argv)) return 0;
  const train::TransformerFile m = train::load_transformer(opts.get<std::string>("model"));
  const io::File data = io::File::open_read(opts.get<std::string>("data"));
  const std::string split = opts.get<std::string>("split");
  const train::TokenSplit s = read_split(data, m, split);
  const train::EvalResult r = train::evaluate_transformer(m.model, s, opts.get<int64_t>("max-tokens"));
  std::string line = std::string(kTool) + " eval: " + split + ": loss " + fixed(r.stats.loss(), 4) + ", perplexity " +
                     fixed(r.stats.perplexity(), 3) + ", token accuracy " + fixed(r.stats.accuracy(), 4);
  if (r.accuracy.sequences > 0) line += ", sequence accuracy " + fixed(r.accuracy.sequence_accuracy(), 4);
  line += " (" + std::to_string(s.size()) + " sentences, " + std::to_string(r.stats.tokens) + " tokens)";
  cli::print_summary(opts, line);
  return 0;
}

int cmd_translate(int argc, char** argv) {
  cli::Options opts(kTool, "--model FILE --data FILE --out FILE [options]",
                    "Decodes the sources of one split with greedy (--beam 1) or beam search and writes the\n"
                    "predictions (/predictions, /predictions_len, /predictions_text, /predictions_detok,\n"
                    "/scores, /vocab/*), with --dump-attention also every decoder layer's weights\n"
                    "/attention/self/layer<i> [N, H, T, T] and /attention/cross/layer<i> [N, H, T, S].\n"
                    "Score it with: attn-bleu --hyp OUT --ref DATA --split SPLIT");
  opts.model("trained model, HDF5 (--arch encdec)").data("token data set, HDF5").split("test");
  opts.out("predictions, HDF5; - writes to stdout");
  opts.add()
      ("beam", int_value(1)->notifier(cli::positive<int64_t>("beam")), "beam size (1: greedy; paper: 4)")
      ("length-penalty", po::value<double>()->value_name("ALPHA")->default_value(0.6, "0.6")
                             ->notifier(cli::at_least<double>("length-penalty", 0.0)),
       "GNMT length penalty alpha of beam search (paper: 0.6)")
      ("max-len", int_value(0)->notifier(cli::at_least<int64_t>("max-len", 0)),
       "most tokens generated per sentence (0: the batch's longest source + 50, as the paper)")
      ("dump-attention", po::bool_switch(), "store the attention weights of every layer and head")
      ("max-tokens", int_value(4096)->notifier(cli::positive<int64_t>("max-tokens")), "source tokens per batch");
  opts.threads();
  if (!opts.parse(argc, argv)) return 0;
  const train::TransformerFile m = train::load_transformer(opts.get<std::string>("model"));
  const io::File data = io::File::open_read(opts.get<std::string>("data"));
  const std::string split = opts.get<std::string>("split");
  const train::TokenSplit s = read_split(data, m, split);
  train::TranslateOptions to;
  to.decode.max_len = opts.get<int64_t>("max-len");
  to.decode.beam = opts.get<int64_t>("beam");
  to.decode.length_penalty = static_cast<float>(opts.get<double>("length-penalty"));
  to.decode.want_attention = opts.get<bool>("dump-attention");
  to.max_tokens = opts.get<int64_t>("max-tokens");
  const train::Translation tr = train::translate(m.model, s, to);
  cli::write_output(opts, "attnlab/output", "translation",
                    [&](io::File& file) { train::write_translation(file, tr, s, m.src_vocab, m.tgt_vocab); });
  std::string line = std::string(kTool) + " translate: " + std::to_string(s.size()) + " sentences of " + split;
  if (tr.accuracy.sequences > 0)
    line += ": sequence accuracy " + fixed(tr.accuracy.sequence_accuracy(), 4) + ", token accuracy " +
            fixed(tr.accuracy.token_accuracy(), 4);
  line += " -> " + opts.get<std::string>("out");
  cli::print_summary(opts, line);
  return 0;
}

int cmd_generate(int argc, char** argv) {
  cli::Options opts(kTool, "--model FILE [--prompt TOKENS] [options]",
                    "Samples continuations of a prompt from a language model (--arch lm), one line each\n"
                    "on stdout: softmax(logits / temperature), among the --top-k most likely tokens.");
  opts.model("trained language model, HDF5 (--arch lm)");
  opts.add()
      ("prompt", po::value<std::string>()->value_name("TOKENS")->default_value(""),
       "the prompt, tokens separated by spaces (unknown ones become <unk>)")
      ("n", int_value(1)->notifier(cli::positive<int64_t>("n")), "samples to draw")
      ("max-len", int_value(50)->notifier(cli::positive<int64_t>("max-len")), "most tokens generated")
      ("temperature", po::value<double>()->value_name("T")->default_value(1.0, "1")
                          ->notifier(cli::at_least<double>("temperature", 0.0)),
       "softmax temperature (0: always the most likely token)")
      ("top-k", int_value(0)->notifier(cli::at_least<int64_t>("top-k", 0)), "sample among the k most likely (0: all)");
  opts.seed(1).threads();
  if (!opts.parse(argc, argv)) return 0;
  const train::TransformerFile m = train::load_transformer(opts.get<std::string>("model"));
  if (m.model.config().arch != models::TransformerArch::lm)
    throw ConfigError("generate needs a language model (train --arch lm); " + opts.get<std::string>("model") +
                      " is '" + models::arch_name(m.model.config().arch) + "' (use translate)");
  const std::vector<int32_t> prompt = m.tgt_vocab.encode(data::split_whitespace(opts.get<std::string>("prompt")));
  const auto n = opts.get<int64_t>("n");
  const data::PaddedBatch p = data::pad_sequences(std::vector<std::vector<int32_t>>(static_cast<size_t>(n), prompt));
  decode::SampleOptions so;
  so.max_len = opts.get<int64_t>("max-len");
  so.temperature = static_cast<float>(opts.get<double>("temperature"));
  so.top_k = opts.get<int64_t>("top-k");
  Rng rng(static_cast<uint64_t>(opts.get<int64_t>("seed")));
  const decode::DecodeResult r = decode::sample(m.model, p.tokens, p.lengths, so, rng);
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
  opts.out("the averaged model, HDF5; - writes to stdout");
  if (!opts.parse(argc, argv)) return 0;
  const auto inputs = opts.get<std::vector<std::string>>("inputs");
  io::File out = [&] {
    try {
      return io::File::create(opts.get<std::string>("out"));
    } catch (const IoError& e) {
      throw cli::OutputError(e.what());
    }
  }();
  train::average_transformers(inputs, out, std::string(kTool) + " " + cli::version(), opts.command());
  cli::commit_output(out);
  cli::print_summary(opts, std::string(kTool) + " average: " + std::to_string(inputs.size()) + " models -> " +
                               opts.get<std::string>("out"));
  return 0;
}

}  // namespace attn::transformer_tool

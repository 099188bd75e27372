// The eval and translate verbs' shared options, reading and summaries (decoding.hpp).
#include "common/decoding.hpp"

#include <cstdio>

namespace attn::cli {
namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// --split of --data as the model reads it.
data::TokenSplit read_split(const Options& opts, const io::File& data, const ModelReads& reads) {
  return train::read_model_split(data, opts.get<std::string>("split"), reads.request, reads.src_vocab,
                                 reads.tgt_vocab);
}

}  // namespace

void add_eval_options(Options& opts) {
  opts.model("trained model, HDF5").data("token data set, HDF5").split("test");
  opts.add()("max-tokens", int_value(4096)->notifier(positive<int64_t>("max-tokens")), "tokens per batch");
  opts.threads();
  opts.distributed();
}

void add_translate_options(Options& opts, double default_length_penalty, const std::string& length_penalty_help) {
  opts.model("trained model, HDF5").data("token data set, HDF5").split("test");
  opts.out("predictions, HDF5");
  // clang-format off
  opts.add()
      ("beam", int_value(1)->notifier(positive<int64_t>("beam")), "beam size (1: greedy)")
      ("length-penalty", po::value<double>()->value_name("ALPHA")
                             ->default_value(default_length_penalty, format_number(default_length_penalty))
                             ->notifier(at_least<double>("length-penalty", 0.0)),
       length_penalty_help.c_str())
      ("max-len", int_value(0)->notifier(at_least<int64_t>("max-len", 0)),
       "most tokens generated per sentence (0: the batch's longest source + 50)")
      ("max-tokens", int_value(4096)->notifier(positive<int64_t>("max-tokens")), "source tokens per batch");
  // clang-format on
  opts.distributed();
}

void run_eval(const Options& opts, const ModelReads& reads,
              const std::function<train::EvalResult(const data::TokenSplit&, int64_t max_tokens)>& evaluate) {
  const io::File data = io::open_dataset(opts.get<std::string>("data"));   // the split may read from it
  const data::TokenSplit s = read_split(opts, data, reads);
  const train::EvalResult r = evaluate(s, opts.get<int64_t>("max-tokens"));
  std::string line = opts.tool() + " eval: " + s.name + ": loss " + fixed(r.stats.loss(), 4) + ", perplexity " +
                     fixed(train::perplexity(r.stats), 3) + ", token accuracy " + fixed(train::token_accuracy(r.stats), 4);
  if (r.accuracy.sequences > 0) line += ", sequence accuracy " + fixed(r.accuracy.sequence_accuracy(), 4);
  print_summary(opts, line + " (" + std::to_string(s.size()) + " sentences, " + std::to_string(r.stats.units) +
                          " tokens)");
}

train::TranslateOptions translate_options(const Options& opts) {
  return {.decode = {.max_len = opts.get<int64_t>("max-len"),
                     .beam = opts.get<int64_t>("beam"),
                     .length_penalty = static_cast<float>(opts.get<double>("length-penalty"))},
          .max_tokens = opts.get<int64_t>("max-tokens")};
}

void run_translate(const Options& opts, const ModelReads& reads, const data::Vocab& src_vocab,
                   const data::Vocab& tgt_vocab,
                   const std::function<train::Translation(const data::TokenSplit&)>& translate) {
  const io::File data = io::open_dataset(opts.get<std::string>("data"));   // the split may read from it
  const data::TokenSplit s = read_split(opts, data, reads);
  const train::Translation tr = translate(s);
  write_output(opts, "attnlab/output", "translation",
               [&](io::File& file) { train::write_translation(file, tr, s, src_vocab, tgt_vocab); });
  std::string line = opts.tool() + " translate: " + std::to_string(tr.tokens.size()) + " sentences of " + s.name;
  if (tr.accuracy.sequences > 0)
    line += ": sequence accuracy " + fixed(tr.accuracy.sequence_accuracy(), 4) + ", token accuracy " +
            fixed(tr.accuracy.token_accuracy(), 4);
  print_summary(opts, line + " -> " + opts.get<std::string>("out"));
}

void add_valid_bleu_option(Options& opts) {
  opts.add()("valid-bleu", boost::program_options::bool_switch(),
             "after every epoch, translate /valid greedily and store its BLEU (on token ids) as the curve "
             "valid_bleu");
}

void add_valid_bleu(const Options& opts, train::TrainTask& task, const data::TokenSplit* valid,
                    std::function<train::Translation(const data::TokenSplit&)> translate) {
  if (!opts.get<bool>("valid-bleu")) return;
  if (!valid) throw ConfigError("--valid-bleu needs a validation split (/valid) in the data set");
  task.epoch_metrics.push_back(train::valid_bleu(*valid, std::move(translate)));
}

}  // namespace attn::cli

// What the `eval` and `translate` verbs of the sequence-model tools (attn-transformer,
// attn-seq2seq) share: their options, reading the split a model was trained for, and the
// one-line summaries (attn/train/token_run.hpp). A tool's eval verb is one call:
//
//   int cmd_eval(int argc, char** argv) {
//     return cli::run_eval_verb(kTool, argc, argv, seq2seq::load_seq2seq, reads, seq2seq::evaluate_seq2seq);
//   }
//
// its translate verb builds its options (translate_options), loads its model file and hands the
// rest to run_translate.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "attn/data/token_data.hpp"
#include "attn/data/vocab.hpp"
#include "attn/train/token_run.hpp"
#include "common/options.hpp"
#include "common/training.hpp"

namespace attn::cli {

inline constexpr const char* kEvalSynopsis = "--model FILE --data FILE [options]";
inline constexpr const char* kEvalAbout =
    "Teacher-forced evaluation on one split: loss, perplexity, token accuracy, and sequence\n"
    "accuracy (every target token right, EOS included: exactly when greedy decoding\n"
    "reproduces the target).";
inline constexpr const char* kTranslateSynopsis = "--model FILE --data FILE --out FILE [options]";

// --model, --data, --split (test), --max-tokens, --threads.
void add_eval_options(Options& opts);
// --model, --data, --split (test), --out, --beam, --length-penalty, --max-len, --max-tokens (the
// verb adds its own, then --threads). The length penalty's formula is the model's own, so its
// default and help come from the tool.
void add_translate_options(Options& opts, double default_length_penalty, const std::string& length_penalty_help);

// The translate verb's decoding options as the trainer's token layer takes them (the verb sets
// decode.want_attention itself).
train::TranslateOptions translate_options(const Options& opts);

// What a loaded model reads of --data: the datasets of `request`, from a data set whose
// vocabularies are the model's (a null one is not checked).
struct ModelReads {
  const data::Vocab* src_vocab = nullptr;
  const data::Vocab* tgt_vocab = nullptr;
  data::TokenSplitRequest request;
};

// The rest of an eval verb: reads --split of --data, evaluates it (max_tokens: --max-tokens)
// and prints the summary "<tool> eval: test: loss 0.1234, perplexity 1.131, token accuracy
// 0.9876, sequence accuracy 0.9000 (20 sentences, 140 tokens)".
void run_eval(const Options& opts, const ModelReads& reads,
              const std::function<train::EvalResult(const data::TokenSplit&, int64_t max_tokens)>& evaluate);

// A token family's whole eval verb: the options, the model file of --model through `load`, what
// it reads of --data (`reads`), `evaluate` and the summary. Returns the verb's exit code.
template <class ModelFile, class Model>
int run_eval_verb(const char* tool, int argc, char** argv, ModelFile (*load)(const std::string& path),
                  ModelReads (*reads)(const ModelFile&),
                  train::EvalResult (*evaluate)(const Model&, const data::TokenSplit&, int64_t max_tokens)) {
  Options opts(tool, kEvalSynopsis, kEvalAbout);
  add_eval_options(opts);
  if (!opts.parse(argc, argv)) return 0;
  const ModelFile m = load(opts.get<std::string>("model"));
  run_eval(opts, reads(m), [&](const data::TokenSplit& s, int64_t max_tokens) { return evaluate(m.model, s, max_tokens); });
  return 0;
}

// The rest of a translate verb: reads --split of --data, translates it, writes --out
// (train::write_translation, with the model's vocabularies) and prints
// "<tool> translate: 20 sentences of test: sequence accuracy 0.9000, token accuracy 0.9876 -> OUT".
void run_translate(const Options& opts, const ModelReads& reads, const data::Vocab& src_vocab,
                   const data::Vocab& tgt_vocab,
                   const std::function<train::Translation(const data::TokenSplit&)>& translate);

// What a translation tool's training run keeps alive: the data set's vocabularies and splits,
// and the model its task trains.
template <class Model>
struct TokenTrainRun : TrainRun {
  train::Vocabs vocabs;
  train::TrainingData splits;
  std::optional<Model> model;
};

// --valid-bleu, an option of the translation tools' train verbs.
void add_valid_bleu_option(Options& opts);
// With --valid-bleu: adds the epoch metric valid_bleu (train::valid_bleu of translate on the
// validation split) to `task`; ConfigError when there is no validation split.
void add_valid_bleu(const Options& opts, train::TrainTask& task, const data::TokenSplit* valid,
                    std::function<train::Translation(const data::TokenSplit&)> translate);

}  // namespace attn::cli

// What the `eval` and `translate` verbs of the sequence-model tools (attn-transformer,
// attn-seq2seq) share: their options, reading the split a model was trained for, and the
// one-line summaries (attn/train/token_run.hpp). A tool's verb builds its options, loads its
// model file and hands the rest over:
//
//   cli::Options opts(kTool, cli::kEvalSynopsis, cli::kEvalAbout);
//   cli::add_eval_options(opts);
//   if (!opts.parse(argc, argv)) return 0;
//   const train::Seq2SeqFile m = train::load_seq2seq(opts.get<std::string>("model"));
//   cli::run_eval(opts, {&m.src_vocab, &m.tgt_vocab, train::seq2seq_request(m.model.config())},
//                 [&](const data::TokenSplit& s, int64_t max_tokens) { return ...; });
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "attn/data/vocab.hpp"
#include "attn/data/token_data.hpp"
#include "attn/train/token_run.hpp"
#include "common/options.hpp"

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

struct DecodeChoice {
  int64_t beam = 1;
  float length_penalty = 0;
  int64_t max_len = 0;      // 0: the batch's longest source + 50 (train::generation_limit)
  int64_t max_tokens = 0;   // source tokens per decoding batch
};

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

// The rest of a translate verb: reads --split of --data, translates it with the decoding
// options, writes --out (train::write_translation, with the model's vocabularies) and prints
// "<tool> translate: 20 sentences of test: sequence accuracy 0.9000, token accuracy 0.9876 -> OUT".
void run_translate(const Options& opts, const ModelReads& reads, const data::Vocab& src_vocab,
                   const data::Vocab& tgt_vocab,
                   const std::function<train::Translation(const data::TokenSplit&, const DecodeChoice&)>& translate);

}  // namespace attn::cli

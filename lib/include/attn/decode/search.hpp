// One search for every sequence model: greedy search, sampling and beam search over any model
// that can be run one token at a time (a Stepper). A model implements the Stepper over its own
// incremental decoder (the Transformer's KV cache, the RNN seq2seq's recurrent state, ...);
// the rules below are written once, here.
//
// Rows. A search starts with one row per sentence (row n is sentence n) and feeds BOS to
// every row, then each row's own last token. Rows that end, or lose their place in the beam,
// leave the batch through Stepper::keep, so the work per step shrinks as sentences end; beam
// search also multiplies a sentence's row into its hypotheses there (repeated parents).
//
// Rules (every search):
//   - PAD and BOS are never emitted: their logits are set to -inf before the log-softmax
//     (data::forbid_unproducible), so they are never chosen and take no probability mass.
//   - EOS ends a hypothesis. It is not among the tokens; its log-probability is in the score.
//   - A hypothesis that has max_len tokens, or whose model has no position left to feed its
//     last token (Stepper::capacity), ends there without EOS.
// Beam search (BW = beam) adds, per sentence and step:
//   - the candidates are the 2 BW best one-token extensions of the sentence's live hypotheses by
//     summed log-probability (double), ties broken by (row, token), so BW = 1 is greedy search;
//   - walking them best first until BW continue: a candidate that ends (EOS, or no room left)
//     is finished if it ranks among the best BW, i.e. if it would have been in the beam; the
//     others continue (Wu et al. 2016, fairseq). Only the last possible step has candidates
//     with no room, and then none continues;
//   - a sentence is done once BW hypotheses are finished (all of those finishing in that step
//     are kept) or none continues;
//   - the result is the finished hypothesis with the best score log P(Y) / lp(|Y|), |Y| counting
//     the EOS when there is one (the first of equal ones: earlier step, better rank).
// Greedy search and sampling score a sentence by its summed log-probability (float, in step
// order), without length penalty.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"

namespace attn::decode {

// How a row of logits x becomes log-probabilities x_v - log sum_u exp(x_u). Both are exact to
// float rounding but round differently; each model keeps the one its published results were
// made with, so that a search gives bit-identical results after moving here.
enum class LogSoftmax : uint8_t {
  vectorised,   // ops::log_softmax_rows_inplace: float, exp_approx (the Transformer)
  double_sum,   // the exponentials summed in double with std::exp (the RNN seq2seq)
};

// A model being decoded: B rows, each a prefix (hypothesis) of one sentence.
class Stepper {
 public:
  static constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

  virtual ~Stepper() = default;
  virtual int64_t vocab() const = 0;   // V
  // The most decoder positions a row can be fed, BOS (and any prompt) included.
  virtual int64_t capacity() const { return kUnlimited; }
  virtual LogSoftmax log_softmax() const { return LogSoftmax::vectorised; }
  // Feeds token fed[r] to row r (BOS on the first call) and returns the logits of every row's
  // next token [B, V]. The search overwrites them (a buffer the model reuses is fine).
  virtual Tensor step(const std::vector<int32_t>& fed) = 0;
  // Row i becomes the old row rows[i] (in that order; repeats allowed: beam parents); rows not
  // listed are dropped. Never called with all rows in place, nor with none.
  virtual void keep(const std::vector<int64_t>& rows) = 0;
  // The attention weights of the last step, [B, S] (row r: the weights behind row r's next
  // token), or an empty tensor. Read only with SearchOptions::want_attention; the search keeps
  // the tensor, so the model must not write into it afterwards.
  virtual Tensor attention() const { return {}; }
};

// The length penalty lp(|Y|) that beam search divides a finished hypothesis's log P by.
enum class PenaltyKind : uint8_t {
  gnmt,    // ((5 + |Y|) / 6)^alpha (Wu et al. 2016, eq. 14): the Transformer's
  power,   // |Y|^alpha (length normalisation): the RNN seq2seq's
};
struct LengthPenalty {
  PenaltyKind kind = PenaltyKind::gnmt;
  float alpha = 0.0f;   // >= 0; 0 compares raw log-probabilities
  double operator()(int64_t length) const;
};

struct SearchOptions {
  int64_t max_len = 100;          // >= 1 generated tokens at most (EOS excluded)
  int64_t beam = 1;               // BW >= 1 (beam_search)
  LengthPenalty length_penalty;   // beam_search
  bool want_attention = false;    // collect Stepper::attention() behind every token
};
// Throws ConfigError naming `what` and the field: max_len < 1, beam < 1, alpha < 0 (every
// search checks its options so; a caller that may return before searching can too).
void check_search_options(const SearchOptions& options, const std::string& what);

// Tokens fed after BOS before anything is generated (a language model's prompt): sentence n's
// are tokens[n, 0 .. lengths[n]). They are neither emitted nor scored.
struct Prompts {
  Tensor tokens;    // int32 [N, Tp]
  Tensor lengths;   // int32 [N]; undefined: no prompts
};

struct SearchResult {
  std::vector<std::vector<int32_t>> tokens;   // per sentence, ending before EOS
  // Greedy and sampling: summed log-probability (EOS included when produced); beam search:
  // divided by lp(|Y|).
  std::vector<float> scores;
  std::vector<uint8_t> ended;                 // 1: ended with EOS; 0: cut (max_len or capacity)
  // With want_attention and a model that gives it: [N, T, S], row t = the weights behind token
  // t; T is the longest output, rows past a sentence's tokens are zeros. Else undefined.
  Tensor attention;
};

// Greedy search: every row takes its first most likely token.
SearchResult greedy_search(Stepper& model, int64_t N, const SearchOptions& options, const Prompts& prompts = {});

struct Sampling {
  float temperature = 1.0f;   // > 0
  int64_t top_k = 0;          // > 0: sample among the k most likely tokens only (ties included); 0: all
};
// Ancestral sampling from softmax(log p / temperature), rows drawing from `rng` in order (the
// same draws at any thread count; a forced prompt token draws nothing).
SearchResult sample_search(Stepper& model, int64_t N, const SearchOptions& options, const Sampling& sampling,
                           Rng& rng, const Prompts& prompts = {});

// Beam search with BW = options.beam (rules above).
SearchResult beam_search(Stepper& model, int64_t N, const SearchOptions& options);

}  // namespace attn::decode

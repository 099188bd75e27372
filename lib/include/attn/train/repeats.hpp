// --repeats K of every train verb: K runs of one training with seeds s, s + 1, ..., s + K - 1,
// the run of the best final validation score kept as the model (Sukhbaatar et al. 2015's
// protocol: "the best of 10 runs by validation error"), every run's validation and test scores
// recorded, so that the median and the spread can be reported beside the best.
//
// Files, for --model M.h5: the runs M.run1.h5 ... M.run<K>.h5 (each the single run of its seed),
// M.h5 a copy of the kept run, and M.repeats.h5 (format "attnlab/output", kind "repeats"):
//   /seed                 int32 [K]     each run's --seed
//   /valid_<metric>       float32 [K]   its final validation <metric> (its training <metric>
//                                       without a validation set): the selection's score
//   /valid_loss           float32 [K]   likewise, the loss (ties)
//   /<test score>         float32 [K]   every score the tool reports on the test split (e.g.
//                                       test_error), NaN where there is no test split
//   root attributes       selected_by ("valid_<metric>"), kept_run (1-based), and per test
//                         score <name>_kept and <name>_median
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace attn::train {

struct RepeatRun {
  int64_t seed = 0;
  std::string path;                                    // its model file
  double valid_metric = 0;                             // lower is better; NaN never wins
  double valid_loss = 0;
  std::vector<std::pair<std::string, double>> test{};  // named test scores, the same names in every run
};

// "m.h5" -> "m.run2.h5" (k = 2), "m.repeats.h5".
std::string repeat_run_path(const std::string& model, int64_t k);
std::string repeats_summary_path(const std::string& model);

// The run's final valid_<metric> and valid_loss from its model file's /metrics (train_<metric>
// and train_loss when it was trained without validation); NaN when absent.
void read_final_scores(RepeatRun& run, const std::string& metric);

// The index of the run kept: the least valid_metric, on a tie the least valid_loss, the first
// of equals; a NaN score never beats a number.
size_t best_run(std::span<const RepeatRun> runs);

// Every test score over the runs: the kept run's value, the median (core/median.hpp) and the
// range, in the runs' order of names.
struct ScoreSpread {
  std::string name;
  double kept = 0, median = 0, min = 0, max = 0;
};
std::vector<ScoreSpread> test_spreads(std::span<const RepeatRun> runs, size_t kept);

// Copies the kept run's file to `model` atomically (a temporary file renamed over it) and writes
// the summary file (above). IoError naming the file when either cannot be written.
void keep_best(std::span<const RepeatRun> runs, size_t kept, const std::string& metric, const std::string& model,
               const std::string& created_by);

}  // namespace attn::train

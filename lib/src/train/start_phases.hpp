// Internal to the trainer: the running state of a task's start phases (trainer.hpp, StartPhase),
// what a checkpoint keeps of it, and the step the rate schedule is evaluated at.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "attn/io/hdf5_file.hpp"
#include "attn/train/trainer.hpp"

namespace attn::train::detail {

class StartPhases {
 public:
  // Every phase on, the model switched into it. ConfigError for a phase without a name or a
  // switch, a repeated name, or epochs < 0.
  explicit StartPhases(const std::vector<StartPhase>& phases);

  // After an epoch's validation: ends every phase whose epochs are done or whose loss stopped
  // improving (nothing for an unfinished epoch).
  void end_epoch(const EpochReport& r);
  // The step at which the rate schedule is evaluated for the trainer's step t.
  int64_t schedule_step(int64_t t) const;

  void write(io::File& file) const;
  // The state a file saved by write holds (a phase the file does not mention keeps its state), the
  // model switched accordingly.
  void read(const io::File& file);

 private:
  struct State {
    bool on = true;
    double best = std::numeric_limits<double>::infinity();   // the least loss of its epochs
    int64_t end = 0;                                         // the step it ended at
  };
  const std::vector<StartPhase>& phases_;
  std::vector<State> states_;
};

}  // namespace attn::train::detail

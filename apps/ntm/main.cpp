// attn-ntm: trains, evaluates and runs the neural Turing machine (Graves, Wayne & Danihelka
// 2014) on the algorithmic tasks of attn-data (copy, repeat-copy, assoc-recall, priority-sort).
#include "common/cli.hpp"
#include "verbs.hpp"

int main(int argc, char** argv) {
  using namespace attn::ntm_tool;
  return attn::cli::dispatch(kTool, argc, argv, {
      {"train", cmd_train, "train an NTM (or the LSTM baseline) on a task's data set (resumable, checkpointed)"},
      {"eval", cmd_eval, "cost in bits, bit errors and sequence accuracy of a model on a split"},
      {"run", cmd_run, "run a split and write every output and every head's weighting over time"},
  });
}

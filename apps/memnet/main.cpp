// attn-memnet: trains, evaluates and runs the end-to-end memory network (Sukhbaatar, Szlam,
// Weston & Fergus 2015) on the bAbI question-answering tasks of attn-data babi.
#include "common/cli.hpp"
#include "verbs.hpp"

int main(int argc, char** argv) {
  using namespace attn::memnet_tool;
  return attn::cli::dispatch(kTool, argc, argv, {
      {"train", cmd_train, "train a memory network on a bAbI data set (resumable, checkpointed)"},
      {"eval", cmd_eval, "accuracy and error of a model on a split, per task when it has several"},
      {"answer", cmd_answer, "answer a split's questions and write every hop's attention over the story"},
  });
}

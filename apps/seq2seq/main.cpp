// attn-seq2seq: trains, evaluates and runs the RNN encoder-decoder with attention (Cho et al.
// 2014, Sutskever et al. 2014, Bahdanau et al. 2015, Luong et al. 2015).
#include "common/cli.hpp"
#include "verbs.hpp"

int main(int argc, char** argv) {
  using namespace attn::seq2seq_tool;
  return attn::cli::dispatch(kTool, argc, argv, {
      {"train", cmd_train, "train a model on a token data set (resumable, checkpointed)"},
      {"eval", cmd_eval, "loss, perplexity, token and sequence accuracy of a model on a split"},
      {"translate", cmd_translate, "decode a split (greedy or beam search) with the alignment of every sentence"},
  });
}

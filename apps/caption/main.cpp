// attn-caption: trains, evaluates and runs the soft-attention image captioner of Show, Attend
// and Tell (Xu et al. 2015) on the captioning data sets of attn-data mnist-strips and shapes.
#include "common/cli.hpp"
#include "verbs.hpp"

int main(int argc, char** argv) {
  using namespace attn::caption_tool;
  return attn::cli::dispatch(kTool, argc, argv, {
      {"train", cmd_train, "train a captioner on an image-captioning data set (resumable, checkpointed)"},
      {"eval", cmd_eval, "loss, accuracy, BLEU-1..4 and attention correctness of a model on a split"},
      {"caption", cmd_caption, "caption a split's images and write the attention map behind every word"},
  });
}

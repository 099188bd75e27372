// attn-transformer: trains, evaluates and runs the Transformer (Vaswani et al. 2017) in its
// three shapes: encoder-decoder translation, decoder-only language model, masked language model.
#include "common/cli.hpp"
#include "verbs.hpp"

int main(int argc, char** argv) {
  using namespace attn::transformer_tool;
  return attn::cli::dispatch(kTool, argc, argv, {
      {"train", cmd_train, "train a model on a token data set (resumable, checkpointed)"},
      {"eval", cmd_eval, "loss, perplexity, token and sequence accuracy of a model on a split"},
      {"translate", cmd_translate, "decode a split (greedy or beam search), optionally with attention weights"},
      {"generate", cmd_generate, "sample continuations of a prompt from a language model (--arch lm)"},
      {"finetune", cmd_finetune, "fine-tune a pre-trained lm or mlm as a classifier on a labelled data set (GPT, BERT)"},
      {"classify", cmd_classify, "predicted classes and probabilities of a fine-tuned model, optionally with attention"},
      {"average", cmd_average, "average the parameters of checkpoints (Vaswani et al. 2017, sec. 6.1)"},
  });
}

// The seq2seq family's entry in the registry (attn/families/registry.hpp).
#include "attn/families/registry.hpp"
#include "attn/families/seq2seq/run.hpp"

namespace attn::seq2seq {

families::Family family() {
  return {.name = "seq2seq",
          .summary = "the RNN encoder-decoder with attention (additive, dot, general, location; global or local)",
          .model_kinds = {"seq2seq"},
          .load_model = [](const std::string& path) { (void)load_seq2seq(path); }};
}

}  // namespace attn::seq2seq

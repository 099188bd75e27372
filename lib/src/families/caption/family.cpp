// The caption family's entry in the registry (attn/families/registry.hpp).
#include "attn/families/caption/run.hpp"
#include "attn/families/registry.hpp"

namespace attn::caption {

families::Family family() {
  return {.name = "caption",
          .summary = "the soft-attention image captioner (Show, Attend and Tell)",
          .model_kinds = {"captioner"},
          .load_model = [](const std::string& path) { (void)load_captioner(path); }};
}

}  // namespace attn::caption

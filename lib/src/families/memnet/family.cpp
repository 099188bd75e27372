// The memnet family's entry in the registry (attn/families/registry.hpp).
#include "attn/families/memnet/run.hpp"
#include "attn/families/registry.hpp"

namespace attn::memnet {

families::Family family() {
  return {.name = "memnet",
          .summary = "the end-to-end memory network (bAbI question answering)",
          .model_kinds = {"memnet"},
          .load_model = [](const std::string& path) { (void)load_memnet(path); }};
}

}  // namespace attn::memnet

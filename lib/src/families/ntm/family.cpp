// The ntm family's entry in the registry (attn/families/registry.hpp).
#include "attn/families/ntm/run.hpp"
#include "attn/families/registry.hpp"

namespace attn::ntm {

families::Family family() {
  return {.name = "ntm",
          .summary = "the neural Turing machine and its LSTM baseline",
          .model_kinds = {"ntm"},
          .load_model = [](const std::string& path) { (void)load_ntm(path); }};
}

}  // namespace attn::ntm

// The transformer family's entry in the registry (attn/families/registry.hpp).
#include "attn/families/registry.hpp"
#include "attn/families/transformer/classifier_run.hpp"
#include "attn/families/transformer/run.hpp"

namespace attn::transformer {

families::Family family() {
  return {.name = "transformer",
          .summary = "the Transformer: encoder-decoder, decoder-only LM, encoder-only masked LM, and the "
                     "classifier fine-tuned on one of them",
          .model_kinds = {"transformer", "transformer-classifier"},
          .load_model = [](const std::string& path) {
            if (io::File::open_read(path).attr_string("/", "kind") == "transformer-classifier")
              (void)load_classifier(path);
            else
              (void)load_transformer(path);
          }};
}

}  // namespace attn::transformer

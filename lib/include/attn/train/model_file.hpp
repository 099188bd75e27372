// Loading a model file of any family: the checkpoint of its kind, the model built from its
// /config, its parameters restored and checked. What a family stores besides (vocabularies) it
// reads from the same open file.
//
//   const io::File file = io::File::open_read(path);
//   LoadedModel<ntm::Ntm> m = load_model<ntm::Ntm>(file, "ntm");
#pragma once
#include <string>
#include <type_traits>
#include <utility>

#include "attn/core/memory.hpp"
#include "attn/core/rng.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/nn/param.hpp"

namespace attn::train {

template <class Model>
struct LoadedModel {
  Model model;
  io::Checkpoint checkpoint;   // everything but the parameters (moved into the model) and the
                               // optimizer state (a loaded model is used, not trained on)
};

// The model of `kind` in `file`: built from Model's Config::from_attrs (FormatError naming the
// file and attribute), its parameters restored by io::restore_params (FormatError / ShapeError
// naming the file and parameter); io::read_checkpoint refuses non-finite values (DataError).
template <class Model>
LoadedModel<Model> load_model(const io::File& file, const std::string& kind) {
  using Config = std::decay_t<decltype(std::declval<const Model&>().config())>;
  io::Checkpoint ckpt = io::read_checkpoint(file, kind);
  Rng init = Rng::drawing_nothing();   // every value is overwritten by the file's
  const MemoryScope scope = MemoryScope::input("the model that " + file.display_name() + "'s /config describes");
  Model model(Config::from_attrs(ckpt.config, file.display_name()), init);
  io::restore_params(ckpt.params, model.params(), file.display_name());
  ckpt.params.clear();
  ckpt.optimizer.clear();
  return {std::move(model), std::move(ckpt)};
}

}  // namespace attn::train

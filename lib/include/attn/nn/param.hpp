// A trainable parameter: its value and the gradient that backward passes accumulate into.
// Layers own Params; models collect pointers to them (named by module path, such as
// "encoder/layer0/self_attn/w_q") for optimizers and checkpoints.
#pragma once
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"

namespace attn {

struct Param {
  std::string name;   // module path; the HDF5 dataset is /params/<name>
  Tensor value;
  Tensor grad;        // same shape as value; backward adds (+=), the optimizer's caller zeroes
  bool sparse_rows = false;   // [rows, width] to which only lookups of a few rows add (an embedding
                              // table's, nn/grad_ready.hpp): data-parallel training sends only those

  Param() = default;
  Param(std::string name_, Tensor value_)
      : name(std::move(name_)), value(std::move(value_)), grad(zeros_like(value)) {}
};

using ParamList = std::vector<Param*>;

inline void zero_grads(const ParamList& params) {
  for (Param* p : params) p->grad.zero();
}

}  // namespace attn

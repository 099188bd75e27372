// Loading model files: the finiteness check (model_file.hpp).
#include "attn/train/model_file.hpp"

#include <cmath>

#include "attn/core/error.hpp"

namespace attn::train {

void check_finite(const ParamList& params, const std::string& file) {
  for (const Param* p : params) {
    if (p->value.dtype() != DType::f32) continue;
    const float* v = p->value.data();
    for (int64_t i = 0; i < p->value.numel(); ++i)
      if (!std::isfinite(v[i]))
        throw DataError(file + ": parameter '/params/" + p->name + "' holds " + std::to_string(v[i]) +
                        " at element " + std::to_string(i) + "; a model with non-finite weights cannot be used");
  }
}

}  // namespace attn::train

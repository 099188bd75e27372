// Prints PE(1, 0) = sin(1) through the installed headers and library.
#include <cstdio>

#include "attn/nn/positional_encoding.hpp"

int main() {
  const attn::Tensor pe = attn::nn::sinusoidal_encoding(/*positions=*/2, /*d_model=*/4);
  std::printf("%.5f\n", pe.at(4));
  return 0;
}

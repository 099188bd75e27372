// Convolutions (ops/conv.hpp): conv2d forward and backward on a CIFAR-like block (B 32, C 64,
// 32 x 32, O 64, 3 x 3, padding 1) by im2col + GEMM and by Winograd's F(2 x 2, 3 x 3), and an
// ImageNet stem (B 16, C 3, 224 x 224, O 64, 7 x 7, stride 2, padding 3), and conv1d on a
// sequence layer (B 32, C 512, IW 256, O 512, kernel 3, dilation 1 and 2 with "same" padding),
// on 1 and 2 threads.
//
// Useful flops are the convolution's multiply-adds, i.e. the GEMMs of the im2col method with
// OH OW output positions per image and CKK = C KH KW: forward W [O, CKK] x col [CKK, B OH OW];
// backward dW += dY col^T (O, CKK, B OH OW) and dcol = W^T dY (CKK, B OH OW, O). For im2col,
// im2col and col2im are overhead: of_sgemm (against plain sgemm on those three shapes, each one
// GEMM over the whole batch; the op runs them chunk by chunk) shows what they cost. Winograd
// does 2.25 times fewer multiply-adds, so its of_sgemm can pass 1.
#include <benchmark/benchmark.h>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/ops/conv.hpp"
#include "bench_util.hpp"

namespace {

using attn::Shape;
using attn::Tensor;
using attn::bench::GemmList;
using attn::ops::ConvOptions;

// Arguments: B, C, I (the image side IH = IW, or conv1d's length IW), O, K (the kernel side
// KH = KW, or conv1d's K), stride, padding, dilation, threads, algorithm (1 im2col, 2 Winograd:
// ConvAlgorithm's values). `two_d` picks conv2d on IH x IW images or conv1d on length IW.
struct ConvCase {
  int64_t B, C, I, O, K, stride, padding, dilation;
  attn::ops::ConvAlgorithm algorithm;
  bool two_d;

  explicit ConvCase(const benchmark::State& s, bool two_d_)
      : B(s.range(0)), C(s.range(1)), I(s.range(2)), O(s.range(3)), K(s.range(4)), stride(s.range(5)),
        padding(s.range(6)), dilation(s.range(7)), algorithm(static_cast<attn::ops::ConvAlgorithm>(s.range(9))),
        two_d(two_d_) {}

  int64_t out_side() const { return (I + 2 * padding - dilation * (K - 1) - 1) / stride + 1; }
  int64_t positions() const { return two_d ? out_side() * out_side() : out_side(); }   // OH OW
  int64_t window() const { return two_d ? C * K * K : C * K; }                         // CKK
  ConvOptions options() const {
    ConvOptions o;
    o.stride = stride;
    o.padding = padding;
    o.dilation = dilation;
    o.algorithm = algorithm;
    return o;
  }
  Shape x_shape() const { return two_d ? Shape{B, C, I, I} : Shape{B, C, I}; }
  Shape w_shape() const { return two_d ? Shape{O, C, K, K} : Shape{O, C, K}; }
  Shape y_shape() const {
    return two_d ? Shape{B, O, out_side(), out_side()} : Shape{B, O, out_side()};
  }

  GemmList forward_gemms() const { return {{O, B * positions(), window()}}; }
  GemmList backward_gemms() const {
    return {{O, window(), B * positions()}, {window(), B * positions(), O}};   // dW, dcol
  }
};

Tensor conv_forward(const ConvCase& c, const Tensor& x, const Tensor& W, const Tensor& b,
                    attn::ops::ConvCache* cache) {
  return c.two_d ? attn::ops::conv2d_forward(x, W, b, c.options(), cache)
                 : attn::ops::conv1d_forward(x, W, b, c.options(), cache);
}

void BM_conv_forward(benchmark::State& state, bool two_d) {
  const ConvCase c(state, two_d);
  attn::bench::use_threads(state, /*arg=*/8);
  const GemmList gemms = c.forward_gemms();
  attn::Rng rng(1);
  const Tensor x = attn::randn(c.x_shape(), rng), W = attn::randn(c.w_shape(), rng, 0.05f);
  const Tensor b = attn::randn({c.O}, rng);
  auto run = [&] {
    Tensor y = conv_forward(c, x, W, b, nullptr);
    benchmark::DoNotOptimize(y.data());
  };
  attn::bench::time_op(state, gemms, run);
}

// Times the backward alone (dx, dW, db), from one forward's cache.
void BM_conv_backward(benchmark::State& state, bool two_d) {
  const ConvCase c(state, two_d);
  attn::bench::use_threads(state, /*arg=*/8);
  const GemmList gemms = c.backward_gemms();
  attn::Rng rng(1);
  const Tensor x = attn::randn(c.x_shape(), rng), W = attn::randn(c.w_shape(), rng, 0.05f);
  const Tensor b = attn::randn({c.O}, rng), dy = attn::randn(c.y_shape(), rng);
  attn::ops::ConvCache cache;
  conv_forward(c, x, W, b, &cache);
  Tensor dW = attn::zeros_like(W), db = attn::zeros_like(b);
  auto run = [&] {
    Tensor dx = c.two_d ? attn::ops::conv2d_backward(dy, W, cache, dW, db)
                        : attn::ops::conv1d_backward(dy, W, cache, dW, db);
    benchmark::DoNotOptimize(dx.data());
  };
  attn::bench::time_op(state, gemms, run);
}

constexpr const char* kArgNames[] = {"B", "C", "I", "O", "K", "stride", "pad", "dil", "threads", "algo"};
constexpr int64_t kIm2col = static_cast<int64_t>(attn::ops::ConvAlgorithm::kIm2col);
constexpr int64_t kWinograd = static_cast<int64_t>(attn::ops::ConvAlgorithm::kWinograd);

void conv2d_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({std::begin(kArgNames), std::end(kArgNames)});
  for (int threads : {1, 2}) {
    for (int64_t algo : {kIm2col, kWinograd})
      b->Args({32, 64, 32, 64, 3, 1, 1, 1, threads, algo});   // CIFAR-like 3 x 3 block
    b->Args({16, 3, 224, 64, 7, 2, 3, 1, threads, kIm2col});   // ImageNet stem, 7 x 7 stride 2
  }
}

void conv1d_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({std::begin(kArgNames), std::end(kArgNames)});
  for (int threads : {1, 2})
    for (int64_t dilation : {1, 2}) b->Args({32, 512, 256, 512, 3, 1, dilation, dilation, threads, kIm2col});
}

BENCHMARK_CAPTURE(BM_conv_forward, conv2d, /*two_d=*/true)
    ->Name("conv2d_forward")
    ->Apply(conv2d_shapes)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_conv_backward, conv2d, /*two_d=*/true)
    ->Name("conv2d_backward")
    ->Apply(conv2d_shapes)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_conv_forward, conv1d, /*two_d=*/false)
    ->Name("conv1d_forward")
    ->Apply(conv1d_shapes)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_conv_backward, conv1d, /*two_d=*/false)
    ->Name("conv1d_backward")
    ->Apply(conv1d_shapes)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

// conv2d through Winograd's F(2 x 2, 3 x 3): the same values and gradients as im2col + GEMM
// (itself checked against a direct convolution in test_conv.cpp, which also runs Winograd in
// chunks at 1 and 2 threads) on odd and even sizes at every padding it takes, finite-difference
// gradients, what kAuto picks, and the geometries it refuses.
#include "attn/core/flops.hpp"
#include "attn/ops/conv.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

struct Pass {
  Tensor y, dx, dW, db;
  bool winograd = false;   // the method forward chose
};

Pass run(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& dy, ops::ConvOptions o,
         ops::ConvAlgorithm algorithm) {
  o.algorithm = algorithm;
  ops::ConvCache cache;
  Pass p;
  p.y = ops::conv2d_forward(x, W, b, o, &cache);
  p.winograd = cache.geometry.winograd;
  p.dW = zeros_like(W), p.db = zeros_like(b);
  p.dx = ops::conv2d_backward(dy, W, cache, p.dW, p.db);
  Tensor dW_only = zeros_like(W), db_only = zeros_like(b);   // without the input gradient: the same
  CHECK_FALSE(ops::conv2d_backward(dy, W, cache, dW_only, db_only, /*input_grad=*/false).defined());
  CHECK_THAT(dW_only, test::close_to(p.dW, 0));
  CHECK_THAT(db_only, test::close_to(p.db, 0));
  return p;
}

void check_close(const Pass& got, const Pass& want, double tol) {
  CHECK_THAT(got.y, test::close_to(want.y, tol));
  CHECK_THAT(got.dx, test::close_to(want.dx, tol));
  CHECK_THAT(got.dW, test::close_to(want.dW, tol));
  CHECK_THAT(got.db, test::close_to(want.db, tol));
}

}  // namespace

TEST_CASE("conv2d: Winograd matches im2col, forward and backward, odd and even sizes, every padding",
          "[unit][conv]") {
  Rng rng(41);
  for (const ops::Size2 padding : {ops::Size2(0), ops::Size2(1), ops::Size2(2), ops::Size2(1, 0), ops::Size2(0, 2)})
    for (const Shape& shape : {Shape{3, 5, 7, 9}, Shape{2, 4, 6, 8}, Shape{1, 3, 3, 3}}) {
      INFO("x " << to_string(shape) << ", padding " << ops::to_string(padding));
      const Tensor x = randn(shape, rng), W = randn({6, shape[1], 3, 3}, rng), b = randn({6}, rng);
      const ops::ConvOptions o{.padding = padding};
      const Tensor dy = randn(ops::conv2d_forward(x, W, b, o, nullptr).shape(), rng);
      const Pass want = run(x, W, b, dy, o, ops::ConvAlgorithm::kIm2col);
      const Pass got = run(x, W, b, dy, o, ops::ConvAlgorithm::kWinograd);
      REQUIRE(got.winograd);
      check_close(got, want, 1e-5);
    }
}

TEST_CASE("conv2d through Winograd: backward matches finite differences", "[gradcheck][conv]") {
  Rng rng(42);
  Tensor x = randn({2, 3, 5, 4}, rng), W = randn({4, 3, 3, 3}, rng), b = randn({4}, rng);
  const ops::ConvOptions o{.padding = {1, 2}, .algorithm = ops::ConvAlgorithm::kWinograd};
  ops::ConvCache cache;
  const Tensor y = ops::conv2d_forward(x, W, b, o, &cache);
  REQUIRE(cache.geometry.winograd);
  const Tensor r = randn(y.shape(), rng);
  auto loss = [&] { return test::dot(r, ops::conv2d_forward(x, W, b, o, nullptr)); };
  Tensor dW = zeros_like(W), db = zeros_like(b);
  const Tensor dx = ops::conv2d_backward(r, W, cache, dW, db);
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x)));
  CHECK_THAT(dW, test::close_to(test::numeric_grad(loss, W)));
  CHECK_THAT(db, test::close_to(test::numeric_grad(loss, b)));
}

TEST_CASE("conv2d: kAuto takes Winograd for 3 x 3 at C, O >= 16, in chunks, with im2col's values", "[unit][conv]") {
  // 35 tile rows of 15 tiles: two chunks per image, 16 products [O, C] x [C, tiles] each.
  Rng rng(43);
  const Tensor x = randn({3, 16, 70, 30}, rng), W = randn({16, 16, 3, 3}, rng), b = randn({16}, rng);
  const ops::ConvOptions o{.padding = 1};
  const Tensor dy = randn({3, 16, 70, 30}, rng);
  flops::reset();
  const Pass got = run(x, W, b, dy, o, ops::ConvAlgorithm::kAuto);
  CHECK(got.winograd);
  flops::reset();
  ops::conv2d_forward(x, W, b, o, nullptr);
  CHECK(flops::count() == 3 * 16 * (16 * 16) * (35 * 15));   // im2col's would be 3 * 16 * 16 * 9 * 70 * 30

  // Sums of 144 products (y, of size ~12) and of 6,300 (dW, ~100): both methods round at ~1e-6 of that.
  const Pass want = run(x, W, b, dy, o, ops::ConvAlgorithm::kIm2col);
  CHECK_FALSE(want.winograd);
  check_close(got, want, 1e-4);

  // Narrower channels, other kernels and strides stay with im2col.
  for (const auto& [shape, options] : {std::pair{Shape{16, 8, 3, 3}, o}, std::pair{Shape{8, 16, 3, 3}, o},
                                       std::pair{Shape{16, 16, 5, 5}, o},
                                       std::pair{Shape{16, 16, 3, 3}, ops::ConvOptions{.stride = 2}}}) {
    const Tensor Wi = randn(shape, rng), xi = randn({1, shape[1], 8, 8}, rng);
    ops::ConvCache cache;
    ops::conv2d_forward(xi, Wi, Tensor(), options, &cache);
    CHECK_FALSE(cache.geometry.winograd);
  }
}

TEST_CASE("conv: Winograd where it does not apply is named in the message", "[unit][conv]") {
  const Tensor x({2, 2, 9, 9}), W({4, 2, 3, 3});
  const auto winograd = ops::ConvAlgorithm::kWinograd;
  REQUIRE_THROWS_AS(ops::conv2d_forward(x, W, Tensor(), {.stride = 2, .algorithm = winograd}, nullptr), ConfigError);
  REQUIRE_THROWS_WITH(ops::conv2d_forward(x, W, Tensor(), {.stride = 2, .algorithm = winograd}, nullptr),
                      Catch::Contains("conv2d: the Winograd algorithm takes a 3 x 3 kernel at stride 1, "
                                      "dilation 1 and padding <= 2, got kernel (3, 3), stride (2, 2), "
                                      "dilation (1, 1), padding (0, 0)"));
  REQUIRE_THROWS_WITH(ops::conv2d_forward(x, W, Tensor(), {.padding = 3, .algorithm = winograd}, nullptr),
                      Catch::Contains("padding (3, 3)"));
  REQUIRE_THROWS_WITH(ops::conv2d_forward(x, Tensor({4, 2, 5, 3}), Tensor(), {.algorithm = winograd}, nullptr),
                      Catch::Contains("got kernel (5, 3)"));
  REQUIRE_THROWS_WITH(ops::conv1d_forward(Tensor({2, 2, 9}), Tensor({4, 2, 3}), Tensor(), {.algorithm = winograd},
                                          nullptr),
                      Catch::Contains("conv1d: the Winograd algorithm takes a 3 x 3 kernel"));
}

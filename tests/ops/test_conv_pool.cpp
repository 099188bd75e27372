// conv2d_max_pool2: the direct fused method against conv2d then max_pool2d (bit for bit in
// integer arithmetic, where every order of the sums is exact), finite-difference gradients, the
// same bits at 1 and 2 threads, where it falls back to the two ops, and its messages.
#include "attn/ops/conv_pool.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

struct Pass {
  Tensor y, argmax, dx, dW, db;
};

// The fused op, forward and backward (with dy), and whether it ran the direct method.
Pass fused(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& dy, const ops::ConvOptions& o,
           bool* direct = nullptr) {
  ops::ConvPoolCache cache;
  Pass p;
  p.y = ops::conv2d_max_pool2_forward(x, W, b, o, &cache);
  p.argmax = cache.pool.argmax;
  if (direct) *direct = cache.direct;
  p.dW = zeros_like(W), p.db = zeros_like(b);
  p.dx = ops::conv2d_max_pool2_backward(dy, W, cache, p.dW, p.db);
  return p;
}

// conv2d (im2col) then max_pool2d, the reference.
Pass separate(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& dy, ops::ConvOptions o) {
  o.algorithm = ops::ConvAlgorithm::kIm2col;
  ops::ConvCache conv;
  ops::MaxPoolCache pool;
  Pass p;
  p.y = ops::max_pool2d_forward(ops::conv2d_forward(x, W, b, o, &conv), {.kernel = 2}, &pool);
  p.argmax = pool.argmax;
  p.dW = zeros_like(W), p.db = zeros_like(b);
  p.dx = ops::conv2d_backward(ops::max_pool2d_backward(dy, pool), W, conv, p.dW, p.db);
  return p;
}

void check_same(const Pass& got, const Pass& want, double tol) {
  CHECK_THAT(got.y, test::close_to(want.y, tol));
  const int32_t *a = got.argmax.idata(), *e = want.argmax.idata();
  CHECK(std::equal(a, a + got.argmax.numel(), e, e + want.argmax.numel()));
  CHECK_THAT(got.dx, test::close_to(want.dx, tol));
  CHECK_THAT(got.dW, test::close_to(want.dW, tol));
  CHECK_THAT(got.db, test::close_to(want.db, tol));
}

// Whole numbers in [-k, k]: sums of their products are exact in float, in any order.
Tensor small_integers(const Shape& shape, Rng& rng, int64_t k) {
  Tensor t(shape);
  for (float& v : t.values()) v = static_cast<float>(static_cast<int64_t>(rng.uniform_int(2 * k + 1)) - k);
  return t;
}

}  // namespace

TEST_CASE("conv2d_max_pool2 is max_pool2d of conv2d: the same bits in integer arithmetic, ties included",
          "[unit][conv]") {
  Rng rng(51);
  struct Case {
    Shape x;
    int64_t KH, KW;
    ops::Size2 padding;
  };
  // Odd and even sizes (an odd last row and column in no window), rows of one block of 8 windows
  // and of several with a shorter last, one to three input channels, odd and even O, square and flat
  // kernels.
  for (const Case& c : {Case{{2, 1, 7, 17}, 3, 3, 1}, Case{{3, 1, 6, 40}, 3, 3, 1}, Case{{2, 3, 10, 37}, 3, 3, 0},
                        Case{{1, 1, 9, 50}, 5, 5, 2}, Case{{2, 2, 5, 26}, 2, 2, 0},
                        Case{{2, 1, 8, 35}, 3, 1, {1, 0}}}) {
    INFO("x " << to_string(c.x) << ", kernel " << c.KH << " x " << c.KW << ", padding " << ops::to_string(c.padding));
    const int64_t O = c.x[1] == 2 ? 3 : 4;
    const Tensor x = small_integers(c.x, rng, 3), W = small_integers({O, c.x[1], c.KH, c.KW}, rng, 2);
    const Tensor b = small_integers({O}, rng, 2);
    const ops::ConvOptions o{.padding = c.padding};
    const Tensor dy = small_integers(ops::conv2d_max_pool2_forward(x, W, b, o, nullptr).shape(), rng, 3);
    bool direct = false;
    const Pass got = fused(x, W, b, dy, o, &direct);
    REQUIRE(direct);
    check_same(got, separate(x, W, b, dy, o), 0);

    // Without the input gradient: no dx, the same dW and db.
    ops::ConvPoolCache cache;
    ops::conv2d_max_pool2_forward(x, W, b, o, &cache);
    Tensor dW = zeros_like(W), db = zeros_like(b);
    CHECK_FALSE(ops::conv2d_max_pool2_backward(dy, W, cache, dW, db, /*input_grad=*/false).defined());
    CHECK_THAT(dW, test::close_to(got.dW, 0));
    CHECK_THAT(db, test::close_to(got.db, 0));
  }
}

TEST_CASE("conv2d_max_pool2's backward matches finite differences", "[gradcheck][conv]") {
  Rng rng(52);
  Tensor x = randn({2, 2, 6, 19}, rng), W = randn({3, 2, 3, 3}, rng), b = randn({3}, rng);   // 9 windows a row
  const ops::ConvOptions o{.padding = 1};
  // No window's two largest values within reach of the finite differences' steps (the maximum's
  // kink): the smallest gap, over a bound on how far a step of 1e-3 moves a convolution output.
  const Tensor conv = ops::conv2d_forward(x, W, b, o, nullptr);
  float gap = 1e9f;
  for (int64_t plane = 0; plane < 2 * 3; ++plane)
    for (int64_t i = 0; i + 1 < 6; i += 2)
      for (int64_t j = 0; j + 1 < 19; j += 2) {
        std::vector<float> v;
        for (const int64_t e : {i * 19 + j, i * 19 + j + 1, (i + 1) * 19 + j, (i + 1) * 19 + j + 1})
          v.push_back(conv.at(plane * 6 * 19 + e));
        std::sort(v.begin(), v.end());
        gap = std::min(gap, v[3] - v[2]);
      }
  float reach = 1.0f;   // b's step
  for (const float w : W.values()) reach = std::max(reach, std::fabs(w));
  for (const float v : x.values()) reach = std::max(reach, std::fabs(v));
  REQUIRE(gap > 2 * 1e-3f * reach);

  ops::ConvPoolCache cache;
  const Tensor y = ops::conv2d_max_pool2_forward(x, W, b, o, &cache);
  REQUIRE(cache.direct);
  const Tensor r = randn(y.shape(), rng);
  auto loss = [&] { return test::dot(r, ops::conv2d_max_pool2_forward(x, W, b, o, nullptr)); };
  Tensor dW = zeros_like(W), db = zeros_like(b);
  const Tensor dx = ops::conv2d_max_pool2_backward(r, W, cache, dW, db);
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x)));
  CHECK_THAT(dW, test::close_to(test::numeric_grad(loss, W)));
  CHECK_THAT(db, test::close_to(test::numeric_grad(loss, b)));
}

TEST_CASE("conv2d_max_pool2: the same bits at 1 and 2 threads, one image or several", "[unit][conv]") {
  Rng rng(53);
  for (const int64_t B : {1, 5}) {
    INFO("B = " << B);
    const Tensor x = randn({B, 1, 32, 80}, rng), W = randn({8, 1, 3, 3}, rng), b = randn({8}, rng);
    const Tensor dy = randn({B, 8, 16, 40}, rng);
    const ops::ConvOptions o{.padding = 1};
    const int before = num_threads();
    set_num_threads(1);
    const Pass one = fused(x, W, b, dy, o);
    set_num_threads(2);
    const Pass two = fused(x, W, b, dy, o);
    set_num_threads(before);
    check_same(two, one, 0);
    check_same(one, separate(x, W, b, dy, o), 1e-4);
  }
}

TEST_CASE("conv2d_max_pool2 runs conv2d then max_pool2d where the direct method does not apply", "[unit][conv]") {
  Rng rng(54);
  struct Case {
    int64_t C, W;
    ops::ConvOptions o;
  };
  // 144 taps (Winograd's), a stride of 2, a method named in the options, 7 windows a row (under a vector).
  for (const Case& c : {Case{16, 20, {.padding = 1}}, Case{1, 40, {.stride = 2, .padding = 1}},
                        Case{1, 20, {.padding = 1, .algorithm = ops::ConvAlgorithm::kIm2col}},
                        Case{1, 15, {.padding = 1}}}) {
    const Tensor x = randn({2, c.C, 8, c.W}, rng), W = randn({16, c.C, 3, 3}, rng), b = randn({16}, rng);
    const Tensor dy = randn(ops::conv2d_max_pool2_forward(x, W, b, c.o, nullptr).shape(), rng);
    bool direct = true;
    const Pass got = fused(x, W, b, dy, c.o, &direct);
    CHECK_FALSE(direct);
    ops::ConvCache conv;
    ops::MaxPoolCache pool;
    Pass want;
    want.y = ops::max_pool2d_forward(ops::conv2d_forward(x, W, b, c.o, &conv), {.kernel = 2}, &pool);
    want.argmax = pool.argmax;
    want.dW = zeros_like(W), want.db = zeros_like(b);
    want.dx = ops::conv2d_backward(ops::max_pool2d_backward(dy, pool), W, conv, want.dW, want.db);
    check_same(got, want, 0);
  }
}

TEST_CASE("conv2d_max_pool2: bad shapes are named in the message", "[unit][conv]") {
  Rng rng(55);
  const Tensor W = randn({2, 1, 3, 3}, rng), b = randn({2}, rng);
  CHECK_THROWS_WITH(ops::conv2d_max_pool2_forward(randn({1, 1, 1, 8}, rng), W, b, {.padding = 1}, nullptr),
                    Catch::Contains("conv2d_max_pool2") &&
                        Catch::Contains("does not fit the input height 1"));
  CHECK_THROWS_WITH(ops::conv2d_max_pool2_forward(randn({1, 2, 8, 8}, rng), W, b, {.padding = 1}, nullptr),
                    Catch::Contains("conv2d_max_pool2: W [O, C, KH, KW]"));
  ops::ConvPoolCache cache;
  ops::conv2d_max_pool2_forward(randn({1, 1, 8, 8}, rng), W, b, {.padding = 1}, &cache);
  Tensor dW = zeros_like(W), db = zeros_like(b);
  CHECK_THROWS_WITH(ops::conv2d_max_pool2_backward(randn({1, 2, 8, 8}, rng), W, cache, dW, db),
                    Catch::Contains("conv2d_max_pool2_backward: dy [B, O, OH / 2, OW / 2]"));
}

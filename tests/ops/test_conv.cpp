// conv1d/conv2d: small cases by hand, im2col + GEMM against a naive direct convolution at
// B > 1 with every option set, finite-difference gradients of x, W and b, bad shapes and options.
#include "attn/ops/conv.hpp"

#include "attn/core/flops.hpp"
#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

// The definition, in double: y[b, o, i, j] = bias[o] + Σ W[o, c, p, q] x[b, c, i sh - ph + p dh,
// j sw - pw + q dw] over in-range positions.
Tensor naive_conv2d(const Tensor& x, const Tensor& W, const Tensor& bias, const ops::ConvOptions& o) {
  const int64_t B = x.dim(0), C = x.dim(1), IH = x.dim(2), IW = x.dim(3);
  const int64_t O = W.dim(0), KH = W.dim(2), KW = W.dim(3);
  const int64_t OH = (IH + 2 * o.padding.h - o.dilation.h * (KH - 1) - 1) / o.stride.h + 1;
  const int64_t OW = (IW + 2 * o.padding.w - o.dilation.w * (KW - 1) - 1) / o.stride.w + 1;
  Tensor y({B, O, OH, OW});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double acc = bias.defined() ? bias.at(oc) : 0.0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t p = 0; p < KH; ++p)
              for (int64_t q = 0; q < KW; ++q) {
                const int64_t ih = i * o.stride.h - o.padding.h + p * o.dilation.h;
                const int64_t iw = j * o.stride.w - o.padding.w + q * o.dilation.w;
                if (ih < 0 || ih >= IH || iw < 0 || iw >= IW) continue;
                acc += static_cast<double>(W.at(((oc * C + c) * KH + p) * KW + q)) *
                       x.at(((b * C + c) * IH + ih) * IW + iw);
              }
          y.at(((b * O + oc) * OH + i) * OW + j) = static_cast<float>(acc);
        }
  return y;
}

}  // namespace

TEST_CASE("conv1d and conv2d by hand", "[unit][conv]") {
  // A difference kernel [1, 0, -1] with padding 1: y_i = x_{i-1} - x_{i+1} + 0.5.
  const Tensor x1 = Tensor::from({1, 1, 5}, {1, 2, 3, 4, 5});
  const Tensor W1 = Tensor::from({1, 1, 3}, {1, 0, -1}), b1 = Tensor::from({1}, {0.5f});
  CHECK_THAT(ops::conv1d_forward(x1, W1, b1, {.padding = 1}, nullptr),
             test::close_to(Tensor::from({1, 1, 5}, {-1.5f, -1.5f, -1.5f, -1.5f, 4.5f}), 1e-6));
  // Stride 2, dilation 2, no padding: y_i = x_{2i} - x_{2i+4}: only i = 0 fits.
  CHECK_THAT(ops::conv1d_forward(x1, W1, Tensor(), {.stride = 2, .dilation = 2}, nullptr),
             test::close_to(Tensor::from({1, 1, 1}, {-4.0f}), 1e-6));

  // The 2x2 identity-diagonal kernel adds each pixel to its lower-right neighbour.
  const Tensor x2 = Tensor::from({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor W2 = Tensor::from({1, 1, 2, 2}, {1, 0, 0, 1});
  CHECK_THAT(ops::conv2d_forward(x2, W2, Tensor(), {}, nullptr),
             test::close_to(Tensor::from({1, 1, 2, 2}, {6, 8, 12, 14}), 1e-6));
}

TEST_CASE("conv2d and conv1d match a direct convolution at B > 1", "[unit][conv]") {
  Rng rng(31);
  const Tensor x = randn({3, 2, 7, 6}, rng), W = randn({4, 2, 3, 2}, rng), b = randn({4}, rng);
  const ops::ConvOptions o{.stride = {2, 1}, .padding = {1, 2}, .dilation = {1, 2}};
  flops::reset();
  const Tensor y = ops::conv2d_forward(x, W, b, o, nullptr);
  CHECK_THAT(y, test::close_to(naive_conv2d(x, W, b, o), 1e-5));
  REQUIRE(y.shape() == Shape{3, 4, 4, 8});
  CHECK(flops::count() == 3 * 4 * 4 * 8 * (2 * 3 * 2));   // B*O*OH*OW multiply-adds of C*KH*KW

  const Tensor x1 = randn({3, 2, 9}, rng), W1 = randn({4, 2, 3}, rng);
  const ops::ConvOptions o1{.stride = 2, .padding = 1, .dilation = 2};
  const Tensor want = naive_conv2d(x1.reshape({3, 2, 1, 9}), W1.reshape({4, 2, 1, 3}), b,
                                   {.stride = {1, 2}, .padding = {0, 1}, .dilation = {1, 2}});
  CHECK_THAT(ops::conv1d_forward(x1, W1, b, o1, nullptr), test::close_to(want.reshape({3, 4, 4}), 1e-5));
}

TEST_CASE("conv2d: threaded sizes match the direct convolution, and backward is its adjoint",
          "[unit][conv]") {
  // Large enough for the chunks of im2col, GEMM and col2im to run on every thread.
  Rng rng(35);
  Tensor x = randn({4, 4, 16, 16}, rng), W = randn({5, 4, 3, 3}, rng);
  const Tensor b = randn({5}, rng);
  const ops::ConvOptions o{.padding = 1};
  ops::ConvCache cache;
  const Tensor y = ops::conv2d_forward(x, W, b, o, &cache);
  CHECK_THAT(y, test::close_to(naive_conv2d(x, W, b, o), 1e-4));
  // y - b is linear in x and in W, so <dy, y - b> = <dx, x> = <dW, W>.
  const Tensor dy = randn(y.shape(), rng);
  Tensor dW = zeros_like(W), db = zeros_like(b);
  const Tensor dx = ops::conv2d_backward(dy, W, cache, dW, db);
  const double y_dot = test::dot(dy, ops::conv2d_forward(x, W, Tensor(), o, nullptr));
  CHECK(test::dot(dx, x) == Approx(y_dot).epsilon(1e-4));
  CHECK(test::dot(dW, W) == Approx(y_dot).epsilon(1e-4));
  double db0 = 0;
  for (int64_t n = 0; n < 4; ++n)
    for (int64_t p = 0; p < 16 * 16; ++p) db0 += dy.at(n * 5 * 256 + p);
  CHECK(db.at(0) == Approx(db0).epsilon(1e-4));
}

TEST_CASE("conv2d: images split into several im2col or Winograd chunks, inside rows, at any thread count",
          "[unit][conv]") {
  // C*KH*KW = 72: a chunk holds about 1820 positions, so these images split into 3 to 5 chunks
  // whose boundaries fall inside output rows; the stride and dilation move the padded border.
  Rng rng(36);
  const Tensor x = randn({2, 8, 91, 95}, rng), W = randn({3, 8, 3, 3}, rng), b = randn({3}, rng);
  // The third runs as Winograd (test_conv_winograd.cpp): 46 tile rows in 2 chunks per image.
  for (const ops::ConvOptions& o : {ops::ConvOptions{.padding = {1, 2}, .dilation = {1, 2}},
                                    ops::ConvOptions{.stride = {1, 2}, .padding = {2, 1}, .dilation = {2, 1}},
                                    ops::ConvOptions{.padding = {1, 2}, .algorithm = ops::ConvAlgorithm::kWinograd}}) {
    ops::ConvCache cache;
    const int before = num_threads();
    set_num_threads(1);
    const Tensor y1 = ops::conv2d_forward(x, W, b, o, &cache);
    const Tensor dy = randn(y1.shape(), rng);
    Tensor dW1 = zeros_like(W), db1 = zeros_like(b);
    const Tensor dx1 = ops::conv2d_backward(dy, W, cache, dW1, db1);
    set_num_threads(2);
    const Tensor y2 = ops::conv2d_forward(x, W, b, o, &cache);
    Tensor dW2 = zeros_like(W), db2 = zeros_like(b);
    const Tensor dx2 = ops::conv2d_backward(dy, W, cache, dW2, db2);
    set_num_threads(before);

    CHECK_THAT(y1, test::close_to(naive_conv2d(x, W, b, o), 1e-4));
    // y - b is linear in x and in W, so <dy, y - b> = <dx, x> = <dW, W>.
    const double y_dot = test::dot(dy, ops::conv2d_forward(x, W, Tensor(), o, nullptr));
    CHECK(test::dot(dx1, x) == Approx(y_dot).epsilon(1e-4));
    CHECK(test::dot(dW1, W) == Approx(y_dot).epsilon(1e-4));
    CHECK_THAT(y2, test::close_to(y1, 0));   // bit-identical on 2 threads
    CHECK_THAT(dx2, test::close_to(dx1, 0));
    CHECK_THAT(dW2, test::close_to(dW1, 0));
    CHECK_THAT(db2, test::close_to(db1, 0));
  }
}

TEST_CASE("conv2d_backward matches finite differences", "[gradcheck][conv]") {
  Rng rng(32);
  Tensor x = randn({2, 2, 5, 4}, rng), W = randn({3, 2, 3, 2}, rng), b = randn({3}, rng);
  const ops::ConvOptions o{.stride = {2, 1}, .padding = {1, 1}, .dilation = {1, 2}};
  ops::ConvCache cache;
  const Tensor y = ops::conv2d_forward(x, W, b, o, &cache);
  const Tensor r = randn(y.shape(), rng);
  auto loss = [&] { return test::dot(r, ops::conv2d_forward(x, W, b, o, nullptr)); };
  Tensor dW = Tensor::full(W.shape(), 1.0f), db = Tensor::full(b.shape(), 1.0f);   // backward adds
  const Tensor dx = ops::conv2d_backward(r, W, cache, dW, db);
  Tensor want_dW = test::numeric_grad(loss, W), want_db = test::numeric_grad(loss, b);
  for (float& v : want_dW.values()) v += 1.0f;
  for (float& v : want_db.values()) v += 1.0f;
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x)));
  CHECK_THAT(dW, test::close_to(want_dW));
  CHECK_THAT(db, test::close_to(want_db));
}

TEST_CASE("conv1d_backward matches finite differences", "[gradcheck][conv]") {
  Rng rng(33);
  Tensor x = randn({3, 2, 8}, rng), W = randn({4, 2, 3}, rng), b = randn({4}, rng);
  const ops::ConvOptions o{.stride = 2, .padding = 2, .dilation = 2};
  ops::ConvCache cache;
  const Tensor y = ops::conv1d_forward(x, W, b, o, &cache);
  const Tensor r = randn(y.shape(), rng);
  auto loss = [&] { return test::dot(r, ops::conv1d_forward(x, W, b, o, nullptr)); };
  Tensor dW = zeros_like(W), db = zeros_like(b);
  const Tensor dx = ops::conv1d_backward(r, W, cache, dW, db);
  REQUIRE(dx.shape() == x.shape());
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x)));
  CHECK_THAT(dW, test::close_to(test::numeric_grad(loss, W)));
  CHECK_THAT(db, test::close_to(test::numeric_grad(loss, b)));
}

TEST_CASE("conv: without a bias, and with an undefined db", "[unit][conv]") {
  Rng rng(34);
  const Tensor x = randn({2, 3, 5, 5}, rng), W = randn({2, 3, 3, 3}, rng);
  ops::ConvCache cache;
  const Tensor y = ops::conv2d_forward(x, W, Tensor(), {.padding = 1}, &cache);
  CHECK_THAT(y, test::close_to(ops::conv2d_forward(x, W, Tensor::zeros({2}), {.padding = 1}, nullptr), 0));
  Tensor dW1 = zeros_like(W), dW2 = zeros_like(W), db_none, db = Tensor::zeros({2});
  const Tensor dy = randn(y.shape(), rng);
  const Tensor dx1 = ops::conv2d_backward(dy, W, cache, dW1, db_none);
  const Tensor dx2 = ops::conv2d_backward(dy, W, cache, dW2, db);
  CHECK_THAT(dx1, test::close_to(dx2, 0));
  CHECK_THAT(dW1, test::close_to(dW2, 0));
  CHECK_FALSE(db_none.defined());
}

TEST_CASE("conv2d_backward without the input gradient: the same dW and db, no dx, fewer flops", "[unit][conv]") {
  Rng rng(35);
  const Tensor x = randn({3, 2, 6, 7}, rng), W = randn({4, 2, 3, 3}, rng), b = randn({4}, rng);
  ops::ConvCache cache;
  const Tensor y = ops::conv2d_forward(x, W, b, {.padding = 1}, &cache);
  const Tensor dy = randn(y.shape(), rng);
  Tensor dW_all = zeros_like(W), db_all = Tensor::zeros({4}), dW = zeros_like(W), db = Tensor::zeros({4});
  flops::reset();
  const Tensor dx = ops::conv2d_backward(dy, W, cache, dW_all, db_all);
  const int64_t with_dx = flops::count();
  flops::reset();
  const Tensor none = ops::conv2d_backward(dy, W, cache, dW, db, /*input_grad=*/false);
  CHECK(dx.defined());
  CHECK_FALSE(none.defined());
  CHECK_THAT(dW, test::close_to(dW_all, 0));
  CHECK_THAT(db, test::close_to(db_all, 0));
  CHECK(flops::count() * 2 == with_dx);   // dW's product alone: half of dW's and dx's
}

TEST_CASE("conv: bad shapes and options are named in the message", "[unit][conv]") {
  const Tensor x({2, 2, 5, 5}), b({4});
  REQUIRE_THROWS_AS(ops::conv2d_forward(x, Tensor({4, 3, 3, 3}), b, {}, nullptr), ShapeError);
  REQUIRE_THROWS_WITH(ops::conv2d_forward(x, Tensor({4, 3, 3, 3}), b, {}, nullptr),
                      Catch::Contains("conv2d: W [O, C, KH, KW] has shape [4, 3, 3, 3], expected [*, 2, *, *]"));
  REQUIRE_THROWS_WITH(ops::conv2d_forward(x, Tensor({4, 2, 3, 3}), Tensor({3}), {}, nullptr),
                      Catch::Contains("conv2d: b [O] has shape [3], expected [4]"));
  REQUIRE_THROWS_AS(ops::conv2d_forward(x, Tensor({4, 2, 3, 3}), b, {.stride = {0, 1}}, nullptr),
                    ConfigError);
  REQUIRE_THROWS_WITH(ops::conv2d_forward(x, Tensor({4, 2, 3, 3}), b, {.stride = {0, 1}}, nullptr),
                      Catch::Contains("conv2d: stride must be >= 1, got (0, 1)"));
  REQUIRE_THROWS_WITH(ops::conv2d_forward(x, Tensor({4, 2, 3, 3}), b, {.dilation = 3}, nullptr),
                      Catch::Contains("conv2d: a kernel height of 3 (dilation 3) does not fit the "
                                      "input height 5 with padding 0"));
  REQUIRE_THROWS_WITH(ops::conv1d_forward(Tensor({2, 2, 5}), Tensor({4, 2, 3}), b,
                                          {.stride = {1, 2}}, nullptr),
                      Catch::Contains("conv1d: stride must be one value for a 1-D convolution, got (1, 2)"));
  REQUIRE_THROWS_WITH(ops::conv1d_forward(Tensor({2, 2, 5}), Tensor({4, 2, 3}), b, {.padding = -1}, nullptr),
                      Catch::Contains("conv1d: padding must be >= 0, got -1"));
  ops::ConvCache cache;
  ops::conv2d_forward(x, Tensor({4, 2, 3, 3}), b, {}, &cache);
  Tensor dW({4, 2, 3, 3}), db({4});
  REQUIRE_THROWS_WITH(ops::conv2d_backward(Tensor({2, 4, 3, 4}), Tensor({4, 2, 3, 3}), cache, dW, db),
                      Catch::Contains("conv2d_backward: dy [B, O, OH, OW] has shape [2, 4, 3, 4], expected [2, 4, 3, 3]"));
}

#include "attn/ops/softmax.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Softmax (or log-softmax) of each row of x over the entries where keep is true, in double.
Tensor reference(const Tensor& x, const std::vector<bool>& keep, bool log) {
  const int64_t L = x.dim(-1), rows = x.numel() / L;
  Tensor y(x.shape());
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < L; ++j)
      if (keep[r * L + j]) m = std::max(m, double(x.at(r * L + j)));
    for (int64_t j = 0; j < L; ++j)
      if (keep[r * L + j]) s += std::exp(x.at(r * L + j) - m);
    for (int64_t j = 0; j < L; ++j) {
      const double v = x.at(r * L + j) - m;
      y.at(r * L + j) = keep[r * L + j] ? float(log ? v - std::log(s) : std::exp(v) / s)
                                        : (log ? kNegInf : 0.0f);
    }
  }
  return y;
}

// Same shape and every element equal (-inf == -inf), for results that must match bit for bit.
bool identical(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (a.at(i) != b.at(i)) return false;
  return true;
}

// sum(r * y) over the finite entries of y (masked log-probabilities are -inf, constants).
double finite_dot(const Tensor& r, const Tensor& y) {
  double acc = 0;
  for (int64_t i = 0; i < y.numel(); ++i)
    if (std::isfinite(y.at(i))) acc += double(r.at(i)) * y.at(i);
  return acc;
}

}  // namespace

TEST_CASE("softmax: a hand-checked example, stable for huge logits", "[unit][softmax]") {
  // Row 2 would overflow exp without the max shift; it is row 1 shifted by 999.
  Tensor x = Tensor::from({3, 2}, {1, 1, 0, std::log(3.0f), 1000, 999});
  const float e = 1.0f / (1.0f + std::exp(-1.0f));   // e^1 / (e^1 + e^0)
  const Tensor y = ops::softmax_forward(x, nullptr);
  CHECK_THAT(y, test::close_to(Tensor::from({3, 2}, {0.5f, 0.5f, 0.25f, 0.75f, e, 1 - e}), 1e-6));
  const Tensor lp = ops::log_softmax_forward(x, nullptr);
  const float l2 = std::log(0.5f), l4 = std::log(0.25f), l34 = std::log(0.75f);
  CHECK_THAT(lp, test::close_to(Tensor::from({3, 2}, {l2, l2, l4, l34, std::log(e), std::log(1 - e)}), 1e-6));
}

TEST_CASE("softmax: rows sum to 1 and match a double reference, serial and parallel", "[unit][softmax]") {
  Rng rng(11);
  for (const Shape& shape : {Shape{3, 5}, Shape{2, 64, 1024}}) {   // the second runs in parallel
    const Tensor x = randn(shape, rng, 4.0f);
    const std::vector<bool> all(x.numel(), true);
    const Tensor y = ops::softmax_forward(x, nullptr);
    CHECK_THAT(y, test::close_to(reference(x, all, false), 1e-5));
    CHECK_THAT(ops::log_softmax_forward(x, nullptr), test::close_to(reference(x, all, true), 1e-5));
    const int64_t L = x.dim(-1);
    double worst = 0;
    for (int64_t r = 0; r < x.numel() / L; ++r) {
      double s = 0;
      for (int64_t j = 0; j < L; ++j) s += y.at(r * L + j);
      worst = std::max(worst, std::fabs(s - 1.0));
    }
    CHECK(worst < 1e-5);
    // The raw row kernels give the tensor op's results bit for bit.
    Tensor z = x.clone();
    ops::softmax_rows_inplace(z.data(), x.numel() / L, L);
    CHECK(identical(z, y));
  }
}

TEST_CASE("softmax: masked entries are exactly 0 and leave the normaliser", "[unit][softmax]") {
  Rng rng(5);
  const Tensor x = randn({2, 3, 4}, rng, 2.0f);
  // A float mask over the last dimension only, broadcast to every row.
  const Tensor keep_cols = Tensor::from({4}, {1, 0, 1, 1});
  std::vector<bool> keep(24);
  for (int64_t i = 0; i < 24; ++i) keep[i] = i % 4 != 1;
  const Tensor y = ops::softmax_forward(x, keep_cols, nullptr);
  CHECK_THAT(y, test::close_to(reference(x, keep, false), 1e-6));
  for (int64_t r = 0; r < 6; ++r) {
    CHECK(y.at(r * 4 + 1) == 0.0f);
    CHECK(std::fabs(y.at(r * 4) + y.at(r * 4 + 2) + y.at(r * 4 + 3) - 1.0f) < 1e-6f);
  }
  const Tensor lp = ops::log_softmax_forward(x, keep_cols, nullptr);
  CHECK(identical(ops::log_softmax_forward(x.reshape({6, 4}), Tensor::from_ints({4}, {1, 0, 1, 1}), nullptr),
                  lp.reshape({6, 4})));
  for (int64_t r = 0; r < 6; ++r) CHECK(lp.at(r * 4 + 1) == kNegInf);

  // An int32 mask [B, 1, S] (a padding mask) broadcast over the queries, same as its expansion.
  const Tensor pad = Tensor::from_ints({2, 1, 4}, {1, 1, 1, 0, 1, 1, 0, 0});
  Tensor expanded({2, 3, 4});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t s = 0; s < 4; ++s) expanded.at((b * 3 + t) * 4 + s) = float(pad.idata()[b * 4 + s]);
  CHECK(identical(ops::softmax_forward(x, pad, nullptr), ops::softmax_forward(x, expanded, nullptr)));
}

TEST_CASE("softmax: a fully masked row gives zeros and a zero gradient, never NaN", "[unit][softmax]") {
  const Tensor x = Tensor::from({3, 3}, {1, 2, 3, 4, 5, 6, kNegInf, kNegInf, kNegInf});
  const Tensor row_mask = Tensor::from_ints({3, 1}, {1, 0, 1});   // row 1 masked, row 2 all -inf
  ops::SoftmaxCache cache;
  const Tensor y = ops::softmax_forward(x, row_mask, &cache);
  for (int64_t i = 3; i < 9; ++i) CHECK(y.at(i) == 0.0f);
  CHECK(std::fabs(y.at(0) + y.at(1) + y.at(2) - 1.0f) < 1e-6f);
  const Tensor dx = ops::softmax_backward(Tensor::full({3, 3}, 1.5f), cache);
  for (int64_t i = 3; i < 9; ++i) CHECK(dx.at(i) == 0.0f);

  ops::LogSoftmaxCache lcache;
  const Tensor lp = ops::log_softmax_forward(x, row_mask, &lcache);
  for (int64_t i = 3; i < 9; ++i) CHECK(lp.at(i) == kNegInf);
  const Tensor ldx = ops::log_softmax_backward(Tensor::full({3, 3}, 1.5f), lcache);
  for (int64_t i = 0; i < 9; ++i) CHECK(std::isfinite(ldx.at(i)));
  for (int64_t i = 3; i < 9; ++i) CHECK(ldx.at(i) == 0.0f);
}

TEST_CASE("softmax: exp_approx is within 2 ulp of exp and saturates cleanly", "[unit][softmax]") {
  double worst = 0;
  for (float x = -87.0f; x < 88.0f; x += 0.00731f) {
    const double e = std::exp(double(x));
    worst = std::max(worst, std::fabs(ops::exp_approx(x) - e) / e);
  }
  CHECK(worst < 2 * 5.97e-8);   // 2^-24 is half an ulp at the bottom of a binade
  CHECK(ops::exp_approx(0.0f) == 1.0f);
  CHECK(ops::exp_approx(kNegInf) == 0.0f);
  CHECK(ops::exp_approx(-1000.0f) == 0.0f);
  CHECK(std::isfinite(ops::exp_approx(1000.0f)));
  CHECK(std::isnan(ops::exp_approx(std::nanf(""))));
}

TEST_CASE("softmax_backward matches finite differences, with and without a mask", "[gradcheck][softmax]") {
  Rng rng(7);
  Tensor x = randn({2, 3, 5}, rng);
  const Tensor r = randn({2, 3, 5}, rng);   // loss = sum(r * y), so dloss/dy = r
  const Tensor mask = Tensor::from_ints({3, 5}, {1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0});
  for (const Tensor* m : {static_cast<const Tensor*>(nullptr), &mask}) {
    auto forward = [&](ops::SoftmaxCache* c) {
      return m ? ops::softmax_forward(x, *m, c) : ops::softmax_forward(x, c);
    };
    auto loss = [&] { return test::dot(r, forward(nullptr)); };
    ops::SoftmaxCache cache;
    forward(&cache);
    CHECK_THAT(ops::softmax_backward(r, cache), test::close_to(test::numeric_grad(loss, x), 1e-2));
  }
  // The row kernel may write dx over dy.
  ops::SoftmaxCache cache;
  ops::softmax_forward(x, &cache);
  Tensor d = r.clone();
  ops::softmax_rows_backward(cache.y.data(), d.data(), d.data(), 6, 5);
  CHECK(identical(d, ops::softmax_backward(r, cache)));
}

TEST_CASE("log_softmax_backward matches finite differences, with and without a mask", "[gradcheck][softmax]") {
  Rng rng(8);
  Tensor x = randn({4, 6}, rng);
  const Tensor r = randn({4, 6}, rng);
  const Tensor mask = Tensor::from({4, 6}, {1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1,
                                            0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0});
  for (const Tensor* m : {static_cast<const Tensor*>(nullptr), &mask}) {
    auto forward = [&](ops::LogSoftmaxCache* c) {
      return m ? ops::log_softmax_forward(x, *m, c) : ops::log_softmax_forward(x, c);
    };
    auto loss = [&] { return finite_dot(r, forward(nullptr)); };
    ops::LogSoftmaxCache cache;
    forward(&cache);
    CHECK_THAT(ops::log_softmax_backward(r, cache), test::close_to(test::numeric_grad(loss, x), 1e-2));
  }
}

TEST_CASE("softmax: bad inputs name the operand and both shapes", "[unit][softmax]") {
  const Tensor x({2, 4});
  REQUIRE_THROWS_AS(ops::softmax_forward(x, Tensor({3}), nullptr), ShapeError);
  REQUIRE_THROWS_WITH(ops::softmax_forward(x, Tensor({3}), nullptr),
                      Catch::Contains("softmax: mask has shape [3], which does not broadcast to x "
                                      "[..., L] of shape [2, 4]"));
  REQUIRE_THROWS_WITH(ops::log_softmax_forward(x, Tensor({1, 2, 4}), nullptr),
                      Catch::Contains("log_softmax: mask has shape [1, 2, 4]"));
  REQUIRE_THROWS_WITH(ops::softmax_forward(Tensor::from_ints({2}, {1, 2}), nullptr),
                      Catch::Contains("softmax: x [..., L] has dtype int32, expected float32"));
  ops::SoftmaxCache cache;
  ops::softmax_forward(x, &cache);
  REQUIRE_THROWS_WITH(ops::softmax_backward(Tensor({2, 5}), cache),
                      Catch::Contains("softmax_backward: dy [..., L] has shape [2, 5], expected [2, 4]"));
  REQUIRE_THROWS_WITH(ops::log_softmax_backward(Tensor({2, 4}), ops::LogSoftmaxCache{}),
                      Catch::Contains("the cache is empty"));
}

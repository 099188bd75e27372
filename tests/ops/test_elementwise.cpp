#include "attn/ops/elementwise.hpp"

#include "test_support.hpp"

using namespace attn;

namespace {

// The naive twin of broadcasting: y[i] = f(a[ia(i)], b[ib(i)]) with the indices worked out
// one output element at a time.
template <class F>
Tensor naive_broadcast(const Tensor& a, const Tensor& b, F f) {
  const Shape out = ops::broadcast_shape(a.shape(), b.shape(), "naive");
  Tensor y(out);
  const int r = static_cast<int>(out.size());
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t rest = i, ia = 0, ib = 0, sa = 1, sb = 1;
    for (int d = r - 1; d >= 0; --d) {
      const int64_t j = rest % out[d];
      rest /= out[d];
      const int da = d - (r - a.rank()), db = d - (r - b.rank());
      if (da >= 0) { ia += (a.shape()[da] == 1 ? 0 : j) * sa; sa *= a.shape()[da]; }
      if (db >= 0) { ib += (b.shape()[db] == 1 ? 0 : j) * sb; sb *= b.shape()[db]; }
    }
    y.at(i) = f(a.at(ia), b.at(ib));
  }
  return y;
}

float plus(float u, float v) { return u + v; }
float times(float u, float v) { return u * v; }

}  // namespace

TEST_CASE("add and mul broadcast by hand", "[unit][elementwise]") {
  const Tensor a = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6}), b = Tensor::from({3}, {10, 20, 30});
  CHECK_THAT(ops::add_forward(a, b, nullptr),
             test::close_to(Tensor::from({2, 3}, {11, 22, 33, 14, 25, 36}), 0));
  // [B, T, D] * [B, 1, D]
  const Tensor x = Tensor::from({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor g = Tensor::from({2, 1, 2}, {1, 10, 100, 1000});
  CHECK_THAT(ops::mul_forward(x, g, nullptr),
             test::close_to(Tensor::from({2, 2, 2}, {1, 20, 3, 40, 500, 6000, 700, 8000}), 0));
  // Both operands broadcast: [2, 1] + [1, 3] -> [2, 3].
  const Tensor col = Tensor::from({2, 1}, {1, 2}), row = Tensor::from({1, 3}, {10, 20, 30});
  CHECK_THAT(ops::add_forward(col, row, nullptr),
             test::close_to(Tensor::from({2, 3}, {11, 21, 31, 12, 22, 32}), 0));
  CHECK_THAT(ops::scale_forward(a, -2.0f).reshape({6}),
             test::close_to(Tensor::from({6}, {-2, -4, -6, -8, -10, -12}), 0));
}

TEST_CASE("add and mul match the naive loops on every broadcast pattern", "[unit][elementwise]") {
  Rng rng(5);
  const std::pair<Shape, Shape> pairs[] = {
      {{4, 5}, {4, 5}},           {{2, 3, 4}, {4}},        {{2, 3, 4}, {2, 1, 4}},
      {{2, 1, 4}, {1, 3, 4}},     {{3, 1}, {1, 5}},        {{2, 3, 4}, {3, 1}},
      {{5}, {}},                  {{1, 1}, {2, 3}},        {{64, 33, 17}, {33, 1}},   // threaded
      {{70000}, {70000}},         {{40000}, {1}}};
  for (const auto& [sa, sb] : pairs) {
    INFO(to_string(sa) << " with " << to_string(sb));
    const Tensor a = randn(sa, rng), b = randn(sb, rng);
    CHECK_THAT(ops::add_forward(a, b, nullptr), test::close_to(naive_broadcast(a, b, plus), 0));
    CHECK_THAT(ops::mul_forward(a, b, nullptr), test::close_to(naive_broadcast(a, b, times), 0));
    CHECK_THAT(ops::add_forward(b, a, nullptr), test::close_to(naive_broadcast(b, a, plus), 0));
  }
}

TEST_CASE("sum_to reduces over the broadcast dimensions", "[unit][elementwise]") {
  const Tensor x = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THAT(ops::sum_to(x, {3}), test::close_to(Tensor::from({3}, {5, 7, 9}), 0));
  CHECK_THAT(ops::sum_to(x, {1, 3}), test::close_to(Tensor::from({1, 3}, {5, 7, 9}), 0));
  CHECK_THAT(ops::sum_to(x, {2, 1}), test::close_to(Tensor::from({2, 1}, {6, 15}), 0));
  CHECK_THAT(ops::sum_to(x, {}), test::close_to(Tensor::from({}, {21}), 0));
  const Tensor same = ops::sum_to(x, {2, 3});
  CHECK_THAT(same, test::close_to(x, 0));
  CHECK_FALSE(same.shares_storage_with(x));
  // [B, T, D] -> [B, 1, D] and a large [rows, D] -> [D] on the threaded path, against the sums
  // of broadcast copies: sum_to(x, s) == (dot with ones) per output element.
  Rng rng(9);
  for (const auto& [xs, ts] : {std::pair<Shape, Shape>{{3, 4, 5}, {3, 1, 5}},
                               {{3, 4, 5}, {4, 1}},
                               {{300, 130}, {130}},
                               {{300, 130}, {300, 1}},
                               {{2, 150, 120}, {2, 1, 120}}}) {
    INFO(to_string(xs) << " to " << to_string(ts));
    const Tensor v = randn(xs, rng);
    const Tensor got = ops::sum_to(v, ts);
    // Naive: every input element adds into its output element.
    Tensor want(ts);
    const int r = static_cast<int>(xs.size()), pad = r - static_cast<int>(ts.size());
    for (int64_t i = 0; i < v.numel(); ++i) {
      int64_t rest = i, o = 0, so = 1;
      for (int d = r - 1; d >= 0; --d) {
        const int64_t j = rest % xs[d];
        rest /= xs[d];
        if (d >= pad) { o += (ts[d - pad] == 1 ? 0 : j) * so; so *= ts[d - pad]; }
      }
      want.at(o) += v.at(i);
    }
    CHECK_THAT(got, test::close_to(want, 1e-4));
  }
}

TEST_CASE("add_backward and mul_backward match finite differences", "[gradcheck][elementwise]") {
  Rng rng(7);
  const std::pair<Shape, Shape> pairs[] = {{{2, 3}, {2, 3}},          {{2, 3, 4}, {4}},
                                           {{2, 3, 4}, {2, 1, 4}},    {{2, 1, 4}, {1, 3, 4}},
                                           {{3, 1}, {1, 4}},          {{3}, {2, 3, 1}}};
  for (const auto& [sa, sb] : pairs) {
    INFO(to_string(sa) << " with " << to_string(sb));
    Tensor a = randn(sa, rng), b = randn(sb, rng);
    const Tensor r = randn(ops::broadcast_shape(sa, sb, "test"), rng);
    {
      ops::AddCache cache;
      ops::add_forward(a, b, &cache);
      auto loss = [&] { return test::dot(r, ops::add_forward(a, b, nullptr)); };
      const ops::AddGrads g = ops::add_backward(r, cache);
      CHECK_THAT(g.da, test::close_to(test::numeric_grad(loss, a), 1e-2));
      CHECK_THAT(g.db, test::close_to(test::numeric_grad(loss, b), 1e-2));
    }
    {
      ops::MulCache cache;
      ops::mul_forward(a, b, &cache);
      auto loss = [&] { return test::dot(r, ops::mul_forward(a, b, nullptr)); };
      const ops::MulGrads g = ops::mul_backward(r, cache);
      CHECK_THAT(g.da, test::close_to(test::numeric_grad(loss, a), 1e-2));
      CHECK_THAT(g.db, test::close_to(test::numeric_grad(loss, b), 1e-2));
    }
  }
}

TEST_CASE("scale_backward matches finite differences", "[gradcheck][elementwise]") {
  Rng rng(3);
  Tensor x = randn({3, 4}, rng);
  const Tensor r = randn({3, 4}, rng);
  auto loss = [&] { return test::dot(r, ops::scale_forward(x, 0.75f)); };
  CHECK_THAT(ops::scale_backward(r, 0.75f), test::close_to(test::numeric_grad(loss, x), 1e-2));
}

TEST_CASE("add_backward returns fresh gradients, accumulate adds in place", "[unit][elementwise]") {
  const Tensor a = Tensor::from({2}, {1, 2}), b = Tensor::from({2}, {3, 4});
  ops::AddCache cache;
  ops::add_forward(a, b, &cache);
  const Tensor dy = Tensor::from({2}, {1, -1});
  ops::AddGrads g = ops::add_backward(dy, cache);
  CHECK_FALSE(g.da.shares_storage_with(dy));
  CHECK_FALSE(g.da.shares_storage_with(g.db));
  Tensor acc = Tensor::from({2}, {10, 20});
  ops::accumulate(acc, g.da, 2.0f);
  CHECK_THAT(acc, test::close_to(Tensor::from({2}, {12, 18}), 0));
}

TEST_CASE("elementwise: incompatible shapes are named in the message", "[unit][elementwise]") {
  REQUIRE_THROWS_WITH(ops::add_forward(Tensor({2, 3}), Tensor({4}), nullptr),
                      Catch::Equals("add: cannot broadcast a [2, 3] with b [4]: dimension -1 is 3 "
                                    "vs 4 (sizes must be equal or 1)"));
  REQUIRE_THROWS_WITH(ops::mul_forward(Tensor({2, 3, 4}), Tensor({3, 3, 4}), nullptr),
                      Catch::Contains("mul: cannot broadcast a [2, 3, 4] with b [3, 3, 4]: dimension -3"));
  REQUIRE_THROWS_WITH(ops::sum_to(Tensor({2, 3}), {2}),
                      Catch::Equals("sum_to: cannot sum x [2, 3] to [2] (the target must broadcast "
                                    "to x's shape)"));
  ops::MulCache cache;
  ops::mul_forward(Tensor({2, 3}), Tensor({3}), &cache);
  REQUIRE_THROWS_WITH(ops::mul_backward(Tensor({3}), cache),
                      Catch::Contains("dy [broadcast shape] has shape [3], expected [2, 3]"));
  Tensor dst({2, 2});
  REQUIRE_THROWS_WITH(ops::accumulate(dst, Tensor({4})),
                      Catch::Contains("accumulate: src has shape [4], expected [2, 2]"));
  REQUIRE_THROWS_WITH(ops::add_forward(Tensor({2}, DType::i32), Tensor({2}), nullptr),
                      Catch::Contains("add: a has dtype int32, expected float32"));
}

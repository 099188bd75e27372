#include "attn/ops/matmul.hpp"

#include "attn/core/flops.hpp"
#include "test_support.hpp"

using namespace attn;
using ops::MatmulOptions;

namespace {

const MatmulOptions kAllOptions[] = {{false, false}, {false, true}, {true, false}, {true, true}};

std::string describe(const MatmulOptions& o) {
  return std::string("transpose_a=") + (o.transpose_a ? "1" : "0") +
         " transpose_b=" + (o.transpose_b ? "1" : "0");
}

// Stored shape of a [M, K] operand (or [K, M] when transposed; BLAS's M, N, K), with optional
// batch dims.
Shape stored(Shape lead, int64_t rows, int64_t cols, bool transpose) {
  lead.push_back(transpose ? cols : rows);
  lead.push_back(transpose ? rows : cols);
  return lead;
}

// The naive twin: y[b] = op(a[b]) op(b[b]) by triple loops in double; a 2-D operand is
// shared by every batch item.
Tensor naive_matmul(const Tensor& a, const Tensor& b, const MatmulOptions& o) {
  const int64_t M = a.dim(o.transpose_a ? -1 : -2), K = a.dim(o.transpose_a ? -2 : -1);
  const int64_t N = b.dim(o.transpose_b ? -2 : -1);
  const Tensor& batched = a.rank() > 2 ? a : b;
  Shape ys(batched.shape().begin(), batched.shape().end() - 2);
  const int64_t batch = numel(ys);
  ys.push_back(M);
  ys.push_back(N);
  Tensor y(ys);
  const int64_t sa = a.rank() > 2 ? M * K : 0, sb = b.rank() > 2 ? K * N : 0;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const float av = a.at(n * sa + (o.transpose_a ? k * M + i : i * K + k));
          const float bv = b.at(n * sb + (o.transpose_b ? j * K + k : k * N + j));
          acc += static_cast<double>(av) * bv;
        }
        y.at(n * M * N + i * N + j) = static_cast<float>(acc);
      }
  return y;
}

}  // namespace

TEST_CASE("matmul: 2x2 products by hand, with each transpose", "[unit][matmul]") {
  const Tensor a = Tensor::from({2, 2}, {1, 2, 3, 4}), b = Tensor::from({2, 2}, {5, 6, 7, 8});
  CHECK_THAT(ops::matmul_forward(a, b, {}, nullptr),
             test::close_to(Tensor::from({2, 2}, {19, 22, 43, 50}), 1e-6));
  CHECK_THAT(ops::matmul_forward(a, b, {.transpose_b = true}, nullptr),
             test::close_to(Tensor::from({2, 2}, {17, 23, 39, 53}), 1e-6));
  CHECK_THAT(ops::matmul_forward(a, b, {.transpose_a = true}, nullptr),
             test::close_to(Tensor::from({2, 2}, {26, 30, 38, 44}), 1e-6));
  // A non-square case: [1, 3] x [3, 2].
  const Tensor row = Tensor::from({1, 3}, {1, 0, -1}), m = Tensor::from({3, 2}, {1, 2, 3, 4, 5, 6});
  CHECK_THAT(ops::matmul_forward(row, m, {}, nullptr), test::close_to(Tensor::from({1, 2}, {-4, -4}), 1e-6));
}

TEST_CASE("matmul: batched, shared-b and shared-a products match the naive loops", "[unit][matmul]") {
  Rng rng(11);
  const int64_t B = 3, M = 4, K = 5, N = 6;
  for (const MatmulOptions& o : kAllOptions) {
    INFO(describe(o));
    const Tensor a3 = randn(stored({B}, M, K, o.transpose_a), rng);
    const Tensor b3 = randn(stored({B}, K, N, o.transpose_b), rng);
    const Tensor a2 = randn(stored({}, M, K, o.transpose_a), rng);
    const Tensor b2 = randn(stored({}, K, N, o.transpose_b), rng);
    CHECK_THAT(ops::matmul_forward(a3, b3, o, nullptr), test::close_to(naive_matmul(a3, b3, o), 1e-5));
    CHECK_THAT(ops::matmul_forward(a3, b2, o, nullptr), test::close_to(naive_matmul(a3, b2, o), 1e-5));
    CHECK_THAT(ops::matmul_forward(a2, b3, o, nullptr), test::close_to(naive_matmul(a2, b3, o), 1e-5));
    CHECK_THAT(ops::matmul_forward(a2, b2, o, nullptr), test::close_to(naive_matmul(a2, b2, o), 1e-5));
  }
  // Several leading dimensions ([B, NH, T, HD] x [B, NH, HD, S]) flatten into one batch.
  const Tensor q = randn({2, 3, 4, 5}, rng), k = randn({2, 3, 6, 5}, rng);
  const Tensor s = ops::matmul_forward(q, k, {.transpose_b = true}, nullptr);
  CHECK(s.shape() == Shape{2, 3, 4, 6});
  CHECK_THAT(s.reshape({6, 4, 6}), test::close_to(naive_matmul(q.reshape({6, 4, 5}),
                                                               k.reshape({6, 6, 5}), {false, true}), 1e-5));
}

TEST_CASE("matmul: x[B, T, D] @ W counts exactly B*T*D*N multiply-adds", "[unit][matmul]") {
  Rng rng(2);
  const Tensor x = randn({2, 3, 4}, rng), W = randn({4, 5}, rng);
  flops::reset();
  const Tensor y = ops::matmul_forward(x, W, {}, nullptr);
  CHECK(flops::count() == 2 * 3 * 4 * 5);
  CHECK_THAT(y, test::close_to(naive_matmul(x, W, {}), 1e-5));
}

TEST_CASE("matmul_backward matches finite differences for every layout and flag", "[gradcheck][matmul]") {
  Rng rng(7);
  const int64_t B = 2, M = 3, K = 4, N = 2;
  struct Case { const char* name; bool batched_a, batched_b; };
  const Case cases[] = {{"2-D", false, false}, {"batched", true, true},
                        {"shared b", true, false}, {"shared a", false, true}};
  for (const Case& c : cases)
    for (const MatmulOptions& o : kAllOptions) {
      INFO(c.name << ", " << describe(o));
      Tensor a = randn(stored(c.batched_a ? Shape{B} : Shape{}, M, K, o.transpose_a), rng);
      Tensor b = randn(stored(c.batched_b ? Shape{B} : Shape{}, K, N, o.transpose_b), rng);
      ops::MatmulCache cache;
      const Tensor y = ops::matmul_forward(a, b, o, &cache);
      const Tensor r = randn(y.shape(), rng);   // loss = sum(r * y)
      auto loss = [&] { return test::dot(r, ops::matmul_forward(a, b, o, nullptr)); };
      const ops::MatmulGrads g = ops::matmul_backward(r, cache);
      CHECK_THAT(g.da, test::close_to(test::numeric_grad(loss, a), 1e-2));
      CHECK_THAT(g.db, test::close_to(test::numeric_grad(loss, b), 1e-2));
    }
}

TEST_CASE("matmul: bad shapes name the operand and both shapes", "[unit][matmul]") {
  const Tensor a({2, 3, 4});
  REQUIRE_THROWS_WITH(ops::matmul_forward(a, Tensor({5, 6}), {}, nullptr),
                      Catch::Equals("matmul: b [K, N] has shape [5, 6], expected [4, *]"));
  REQUIRE_THROWS_WITH(ops::matmul_forward(a, Tensor({3, 4, 6}), {}, nullptr),
                      Catch::Equals("matmul: b [..., K, N] has shape [3, 4, 6], expected [2, 4, *]"));
  REQUIRE_THROWS_WITH(ops::matmul_forward(a, Tensor({2, 6, 3}), {.transpose_b = true}, nullptr),
                      Catch::Contains("b [..., N, K] has shape [2, 6, 3], expected [2, *, 4]"));
  REQUIRE_THROWS_WITH(ops::matmul_forward(Tensor({4}), Tensor({4, 2}), {}, nullptr),
                      Catch::Equals("matmul: a [..., M, K] has shape [4], expected at least 2 dimensions"));
  ops::MatmulCache cache;
  ops::matmul_forward(a, Tensor({4, 6}), {}, &cache);
  REQUIRE_THROWS_WITH(ops::matmul_backward(Tensor({2, 3, 5}), cache),
                      Catch::Contains("dy [..., M, N] has shape [2, 3, 5], expected [2, 3, 6]"));
}

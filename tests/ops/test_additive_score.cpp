// Additive attention scores (ops/additive_score.hpp): a pair by hand, the naive loops at B > 1
// (the cloned kernels at A = 64 and at odd widths), finite-difference gradients of all three
// inputs, masked keys skipped, B = 1 and S = 1, the same bits on one thread and on two.
#include "attn/ops/additive_score.hpp"

#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

struct Scores {
  Tensor hidden, e;
};

Scores run_scores(const Tensor& uk, const Tensor& wq, const Tensor& v) {
  const int64_t B = uk.dim(0), S = uk.dim(1), A = uk.dim(2);
  Scores out{Tensor({B, S, A}), Tensor({B, S})};
  ops::additive_scores(uk.data(), wq.data(), v.data(), B, S, A, out.hidden.data(), out.e.data());
  return out;
}

// The definition in double with std::tanh.
Scores naive_scores(const Tensor& uk, const Tensor& wq, const Tensor& v) {
  const int64_t B = uk.dim(0), S = uk.dim(1), A = uk.dim(2);
  Scores out{Tensor({B, S, A}), Tensor({B, S})};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      double e = 0.0;
      for (int64_t a = 0; a < A; ++a) {
        const double h = std::tanh(static_cast<double>(uk.at((b * S + s) * A + a)) + wq.at(b * A + a));
        out.hidden.at((b * S + s) * A + a) = static_cast<float>(h);
        e += h * v.at(a);
      }
      out.e.at(b * S + s) = static_cast<float>(e);
    }
  return out;
}

// The backward's three gradients, duk and dv added to what `duk0`, `dv0` hold.
struct Grads {
  Tensor duk, dwq, dv;
};

Grads run_backward(const Scores& f, const Tensor& de, const Tensor& v, const Tensor& duk0, const Tensor& dv0) {
  const int64_t B = f.hidden.dim(0), S = f.hidden.dim(1), A = f.hidden.dim(2);
  Grads g{duk0.clone(), Tensor::full({B, A}, 7.0f), dv0.clone()};   // dwq is written over
  ops::additive_scores_backward(f.hidden.data(), de.data(), v.data(), B, S, A, g.duk.data(), g.dwq.data(), g.dv.data());
  return g;
}

}  // namespace

TEST_CASE("additive_scores: one pair by hand", "[unit][additive_score]") {
  // uk + wq = (0.5, -1), v = (2, 3): hidden = (tanh 0.5, -tanh 1), e = 2 tanh 0.5 - 3 tanh 1.
  const Tensor uk = Tensor::from({1, 1, 2}, {0.25f, -2.0f}), wq = Tensor::from({1, 2}, {0.25f, 1.0f});
  const Tensor v = Tensor::from({2}, {2.0f, 3.0f});
  const Scores f = run_scores(uk, wq, v);
  CHECK(f.hidden.at(0) == Approx(std::tanh(0.5)).epsilon(1e-6));
  CHECK(f.hidden.at(1) == Approx(-std::tanh(1.0)).epsilon(1e-6));
  CHECK(f.e.at(0) == Approx(2 * std::tanh(0.5) - 3 * std::tanh(1.0)).epsilon(1e-6));
  // de = 1: dpre = v (1 - hidden^2); duk and dwq get it, dv gets hidden.
  const Grads g = run_backward(f, Tensor::from({1, 1}, {1.0f}), v, Tensor({1, 1, 2}), Tensor({2}));
  const double t5 = std::tanh(0.5), t1 = std::tanh(1.0);
  CHECK(g.duk.at(0) == Approx(2 * (1 - t5 * t5)).epsilon(1e-5));
  CHECK(g.duk.at(1) == Approx(3 * (1 - t1 * t1)).epsilon(1e-5));
  CHECK_THAT(g.dwq, test::close_to(g.duk.reshape({1, 2}), 0));
  CHECK(g.dv.at(0) == Approx(t5).epsilon(1e-6));
  CHECK(g.dv.at(1) == Approx(-t1).epsilon(1e-6));
}

TEST_CASE("additive_scores: matches the naive loops at B > 1", "[unit][additive_score]") {
  Rng rng(4);
  for (int64_t A : {1, 3, 8, 13, 64}) {   // vector widths, tails, the captioner's A
    INFO("A " << A);
    const int64_t B = 3, S = 5;
    const Tensor uk = randn({B, S, A}, rng), wq = randn({B, A}, rng), v = randn({A}, rng);
    const Scores f = run_scores(uk, wq, v), want = naive_scores(uk, wq, v);
    CHECK_THAT(f.hidden, test::close_to(want.hidden, 1e-6));   // tanh_fast: within 7 ulp
    CHECK_THAT(f.e, test::close_to(want.e, 1e-5));

    // The backward against the same formulas in double, from the kernel's own hidden.
    const Tensor de = randn({B, S}, rng), duk0 = randn({B, S, A}, rng), dv0 = randn({A}, rng);
    const Grads g = run_backward(f, de, v, duk0, dv0);
    Tensor duk = duk0.clone(), dwq({B, A}), dv = dv0.clone();
    std::vector<double> dv_sum(static_cast<size_t>(A), 0.0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t a = 0; a < A; ++a) {
        double dw = 0.0;
        for (int64_t s = 0; s < S; ++s) {
          const double h = f.hidden.at((b * S + s) * A + a), d = de.at(b * S + s);
          const double dpre = d * v.at(a) * (1.0 - h * h);
          duk.at((b * S + s) * A + a) += static_cast<float>(dpre);
          dw += dpre;
          dv_sum[static_cast<size_t>(a)] += d * h;
        }
        dwq.at(b * A + a) = static_cast<float>(dw);
      }
    for (int64_t a = 0; a < A; ++a) dv.at(a) += static_cast<float>(dv_sum[static_cast<size_t>(a)]);
    CHECK_THAT(g.duk, test::close_to(duk, 1e-5));
    CHECK_THAT(g.dwq, test::close_to(dwq, 1e-5));
    CHECK_THAT(g.dv, test::close_to(dv, 1e-5));
  }
}

TEST_CASE("additive_scores_backward matches finite differences", "[gradcheck][additive_score]") {
  Rng rng(6);
  for (const auto& [B_, S_, A_] : {std::tuple<int64_t, int64_t, int64_t>{2, 4, 5}, {1, 1, 9}}) {   // B = 1, S = 1
    const int64_t B = B_, S = S_, A = A_;
    INFO("B " << B << ", S " << S << ", A " << A);
    Tensor uk = randn({B, S, A}, rng), wq = randn({B, A}, rng), v = randn({A}, rng);
    const Tensor r = randn({B, S}, rng);   // loss = sum(r * e)
    auto loss = [&] { return test::dot(r, run_scores(uk, wq, v).e); };
    const Grads g = run_backward(run_scores(uk, wq, v), r, v, Tensor({B, S, A}), Tensor({A}));
    CHECK_THAT(g.duk, test::close_to(test::numeric_grad(loss, uk), 1e-2));
    CHECK_THAT(g.dwq, test::close_to(test::numeric_grad(loss, wq), 1e-2));
    CHECK_THAT(g.dv, test::close_to(test::numeric_grad(loss, v), 1e-2));
  }
}

TEST_CASE("additive_scores_backward skips masked keys (de = 0)", "[unit][additive_score]") {
  // Key 1 of row 0 is masked: its hidden row may hold anything (here NaN) and adds nothing to
  // duk, dwq or dv; the other pairs are as without it.
  Rng rng(2);
  const int64_t B = 2, S = 3, A = 6;
  const Tensor uk = randn({B, S, A}, rng), wq = randn({B, A}, rng), v = randn({A}, rng);
  Scores f = run_scores(uk, wq, v);
  Tensor de = randn({B, S}, rng);
  const Grads clean = [&] {
    Tensor masked = de.clone();
    masked.at(1) = 0.0f;
    return run_backward(f, masked, v, Tensor({B, S, A}), Tensor({A}));
  }();
  de.at(1) = 0.0f;
  for (int64_t a = 0; a < A; ++a) f.hidden.at(A + a) = std::numeric_limits<float>::quiet_NaN();
  const Grads g = run_backward(f, de, v, Tensor({B, S, A}), Tensor({A}));
  for (int64_t a = 0; a < A; ++a) CHECK(g.duk.at(A + a) == 0.0f);
  CHECK_THAT(g.dwq, test::close_to(clean.dwq, 0));
  CHECK_THAT(g.dv, test::close_to(clean.dv, 0));
}

TEST_CASE("additive_scores: the same bits on one thread and on two", "[unit][additive_score]") {
  // B S A = 32 x 40 x 64, above kParallelMinElements: the batch rows split over the threads, and
  // v's gradient adds the rows' parts in order.
  Rng rng(10);
  const int64_t B = 32, S = 40, A = 64;
  const Tensor uk = randn({B, S, A}, rng), wq = randn({B, A}, rng), v = randn({A}, rng), de = randn({B, S}, rng);
  const Tensor duk0 = randn({B, S, A}, rng), dv0 = randn({A}, rng);
  auto run = [&](int threads) {
    set_num_threads(threads);
    const Scores f = run_scores(uk, wq, v);
    const Grads g = run_backward(f, de, v, duk0, dv0);
    set_num_threads(1);
    return std::vector<Tensor>{f.hidden, f.e, g.duk, g.dwq, g.dv};
  };
  const std::vector<Tensor> one = run(1), two = run(2);
  for (size_t i = 0; i < one.size(); ++i) CHECK_THAT(two[i], test::close_to(one[i], 0));
}

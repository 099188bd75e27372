// The single-query attention context's backward (ops/attention_context.hpp): by hand, the
// naive loops at B > 1 (the cloned kernel at odd widths), finite differences of the context
// c[b] = Σ_s alpha[b, s] values[b, s, :], accumulation, B = 1 and S = 1, the same bits on one
// thread and on two.
#include "attn/ops/attention_context.hpp"

#include <tuple>
#include <vector>

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

// The forward the backward belongs to: c[b] = Σ_s alpha[b, s] values[b, s, :], in double.
Tensor context(const Tensor& values, const Tensor& alpha) {
  const int64_t B = values.dim(0), S = values.dim(1), Dv = values.dim(2);
  Tensor c({B, Dv});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t d = 0; d < Dv; ++d) {
      double sum = 0.0;
      for (int64_t s = 0; s < S; ++s) sum += static_cast<double>(alpha.at(b * S + s)) * values.at((b * S + s) * Dv + d);
      c.at(b * Dv + d) = static_cast<float>(sum);
    }
  return c;
}

struct Grads {
  Tensor dalpha, dvalues;
};

// The op, adding into copies of dalpha0 and dvalues0.
Grads run_backward(const Tensor& values, const Tensor& alpha, const Tensor& dctx, const Tensor& dalpha0,
                   const Tensor& dvalues0) {
  const int64_t B = values.dim(0), S = values.dim(1), Dv = values.dim(2);
  Grads g{dalpha0.clone(), dvalues0.clone()};
  ops::attention_context_backward(values.data(), alpha.data(), dctx.data(), B, S, Dv, g.dalpha.data(),
                                  g.dvalues.data());
  return g;
}

}  // namespace

TEST_CASE("attention_context_backward: one row by hand", "[unit][attention_context]") {
  // values rows (1, 2) and (3, 4), alpha (0.25, 0.75), dctx (10, 100):
  // dalpha = (1*10 + 2*100, 3*10 + 4*100) = (210, 430); dvalues = alpha_s dctx.
  const Tensor values = Tensor::from({1, 2, 2}, {1, 2, 3, 4}), alpha = Tensor::from({1, 2}, {0.25f, 0.75f});
  const Tensor dctx = Tensor::from({1, 2}, {10, 100});
  const Grads g = run_backward(values, alpha, dctx, Tensor::from({1, 2}, {1, 1}), Tensor({1, 2, 2}));
  CHECK_THAT(g.dalpha, test::close_to(Tensor::from({1, 2}, {211, 431}), 0));   // added to the 1s
  CHECK_THAT(g.dvalues, test::close_to(Tensor::from({1, 2, 2}, {2.5f, 25, 7.5f, 75}), 0));
}

TEST_CASE("attention_context_backward: matches the naive loops at B > 1", "[unit][attention_context]") {
  Rng rng(3);
  for (int64_t Dv : {1, 5, 8, 31, 64}) {
    INFO("Dv " << Dv);
    const int64_t B = 4, S = 7;
    const Tensor values = randn({B, S, Dv}, rng), alpha = randn({B, S}, rng), dctx = randn({B, Dv}, rng);
    const Tensor dalpha0 = randn({B, S}, rng), dvalues0 = randn({B, S, Dv}, rng);
    const Grads g = run_backward(values, alpha, dctx, dalpha0, dvalues0);
    Tensor dalpha = dalpha0.clone(), dvalues = dvalues0.clone();
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) {
        double dot = 0.0;
        for (int64_t d = 0; d < Dv; ++d) {
          dot += static_cast<double>(values.at((b * S + s) * Dv + d)) * dctx.at(b * Dv + d);
          dvalues.at((b * S + s) * Dv + d) += alpha.at(b * S + s) * dctx.at(b * Dv + d);
        }
        dalpha.at(b * S + s) += static_cast<float>(dot);
      }
    CHECK_THAT(g.dalpha, test::close_to(dalpha, 1e-5));
    CHECK_THAT(g.dvalues, test::close_to(dvalues, 1e-6));
  }
}

TEST_CASE("attention_context_backward matches finite differences of the context", "[gradcheck][attention_context]") {
  Rng rng(8);
  for (const auto& [B_, S_, Dv_] : {std::tuple<int64_t, int64_t, int64_t>{3, 5, 6}, {1, 1, 4}}) {   // B = 1, S = 1
    const int64_t B = B_, S = S_, Dv = Dv_;
    INFO("B " << B << ", S " << S << ", Dv " << Dv);
    Tensor values = randn({B, S, Dv}, rng), alpha = randn({B, S}, rng);
    const Tensor r = randn({B, Dv}, rng);   // loss = sum(r * c): dctx = r
    auto loss = [&] { return test::dot(r, context(values, alpha)); };
    const Grads g = run_backward(values, alpha, r, Tensor({B, S}), Tensor({B, S, Dv}));
    CHECK_THAT(g.dalpha, test::close_to(test::numeric_grad(loss, alpha), 1e-2));
    CHECK_THAT(g.dvalues, test::close_to(test::numeric_grad(loss, values), 1e-2));
  }
}

TEST_CASE("attention_context_backward: masked keys (alpha = 0) get no value gradient", "[unit][attention_context]") {
  Rng rng(1);
  const int64_t B = 2, S = 3, Dv = 4;
  const Tensor values = randn({B, S, Dv}, rng), dctx = randn({B, Dv}, rng);
  Tensor alpha = randn({B, S}, rng);
  alpha.at(2) = 0.0f;   // row 0, key 2
  const Grads g = run_backward(values, alpha, dctx, Tensor({B, S}), Tensor({B, S, Dv}));
  for (int64_t d = 0; d < Dv; ++d) CHECK(g.dvalues.at(2 * Dv + d) == 0.0f);
  CHECK(g.dalpha.at(2) != 0.0f);   // its weight still has a gradient (the softmax's backward masks it)
}

TEST_CASE("attention_context_backward: the same bits on one thread and on two", "[unit][attention_context]") {
  // B S Dv = 32 x 320 x 64 (the captioner's step), above kParallelMinElements: one batch row per task.
  Rng rng(9);
  const int64_t B = 32, S = 320, Dv = 64;
  const Tensor values = randn({B, S, Dv}, rng), alpha = randn({B, S}, rng), dctx = randn({B, Dv}, rng);
  const Tensor dalpha0 = randn({B, S}, rng), dvalues0 = randn({B, S, Dv}, rng);
  auto run = [&](int threads) {
    set_num_threads(threads);
    const Grads g = run_backward(values, alpha, dctx, dalpha0, dvalues0);
    set_num_threads(1);
    return g;
  };
  const Grads one = run(1), two = run(2);
  CHECK_THAT(two.dalpha, test::close_to(one.dalpha, 0));
  CHECK_THAT(two.dvalues, test::close_to(one.dvalues, 0));
}

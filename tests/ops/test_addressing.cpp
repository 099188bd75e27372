// NTM addressing (Graves et al. 2014, eq. 6, 8, 9): cases by hand, finite-difference gradients
// of every input, the multiply-add counts, bad inputs; the fused head against the ops composed.
#include "attn/ops/addressing.hpp"

#include <cmath>
#include <utility>

#include "attn/core/flops.hpp"
#include "attn/ops/softmax.hpp"
#include "test_support.hpp"

using namespace attn;

TEST_CASE("cosine_similarity by hand", "[unit][addressing]") {
  // k = [1, 0] against rows at 0°, 90°, 180°, 45° and a zero row (0, not NaN, thanks to eps).
  const Tensor k = Tensor::from({1, 2}, {1, 0});
  const Tensor mem = Tensor::from({1, 5, 2}, {1, 0, 0, 2, -3, 0, 1, 1, 0, 0});
  flops::reset();
  const Tensor K = ops::cosine_similarity_forward(k, mem, nullptr);
  CHECK_THAT(K, test::close_to(Tensor::from({1, 5}, {1, 0, -1, static_cast<float>(1 / std::sqrt(2.0)), 0}), 1e-6));
  CHECK(flops::count() == 2 + 2 * 5 * 2);   // ||k|| once, then dot and norm per row
}

TEST_CASE("cosine_similarity_backward matches finite differences", "[gradcheck][addressing]") {
  Rng rng(51);
  Tensor k = randn({2, 4}, rng), mem = randn({2, 5, 4}, rng);
  const Tensor r = randn({2, 5}, rng);
  auto loss = [&] { return test::dot(r, ops::cosine_similarity_forward(k, mem, nullptr)); };
  ops::CosineSimilarityCache cache;
  ops::cosine_similarity_forward(k, mem, &cache);
  const ops::CosineSimilarityGrads g = ops::cosine_similarity_backward(r, cache);
  CHECK_THAT(g.dk, test::close_to(test::numeric_grad(loss, k)));
  CHECK_THAT(g.dmem, test::close_to(test::numeric_grad(loss, mem)));
}

TEST_CASE("circular_conv by hand: shifts move the weighting and wrap around", "[unit][addressing]") {
  const Tensor w = Tensor::from({3, 5}, {1, 0, 0, 0, 0,    //
                                        1, 0, 0, 0, 0,    //
                                        0, 0.5f, 0, 0, 0.5f});
  // Shifts -1, 0, +1: all on +1; all on -1 (wraps to row 4); half 0, half +1.
  const Tensor s = Tensor::from({3, 3}, {0, 0, 1, 1, 0, 0, 0, 0.5f, 0.5f});
  flops::reset();
  CHECK_THAT(ops::circular_conv_forward(w, s, nullptr),
             test::close_to(Tensor::from({3, 5}, {0, 1, 0, 0, 0,    //
                                                 0, 0, 0, 0, 1,    //
                                                 0.25f, 0.25f, 0.25f, 0, 0.25f}), 1e-6));
  CHECK(flops::count() == 3 * 5 * 3);
  // More shifts than rows wrap around more than once: on Nm = 2, shift +2 is no shift.
  CHECK_THAT(ops::circular_conv_forward(Tensor::from({1, 2}, {0.25f, 0.75f}),
                                        Tensor::from({1, 5}, {0, 0, 0, 0, 1}), nullptr),
             test::close_to(Tensor::from({1, 2}, {0.25f, 0.75f}), 1e-6));
}

TEST_CASE("circular_conv_backward matches finite differences", "[gradcheck][addressing]") {
  Rng rng(52);
  Tensor w = randn({2, 6}, rng), s = randn({2, 3}, rng);
  const Tensor r = randn({2, 6}, rng);
  auto loss = [&] { return test::dot(r, ops::circular_conv_forward(w, s, nullptr)); };
  ops::CircularConvCache cache;
  ops::circular_conv_forward(w, s, &cache);
  const ops::CircularConvGrads g = ops::circular_conv_backward(r, cache);
  CHECK_THAT(g.dw, test::close_to(test::numeric_grad(loss, w)));
  CHECK_THAT(g.ds, test::close_to(test::numeric_grad(loss, s)));
}

TEST_CASE("sharpen by hand, stable for large gamma and zero weights", "[unit][addressing]") {
  // [1/2, 1/4, 1/4]^2 = [1/4, 1/16, 1/16], normalised: [2/3, 1/6, 1/6].
  const Tensor w = Tensor::from({2, 3}, {0.5f, 0.25f, 0.25f, 0.2f, 0.3f, 0.5f});
  const Tensor y = ops::sharpen_forward(w, Tensor::from({2}, {2.0f, 1.0f}), nullptr);
  CHECK_THAT(y, test::close_to(Tensor::from({2, 3}, {2.0f / 3, 1.0f / 6, 1.0f / 6, 0.2f, 0.3f, 0.5f}), 1e-6));

  // w^γ underflows float for every entry here (1e-3^200), yet the ratio is exact: [2^-200, 1].
  const Tensor big = ops::sharpen_forward(Tensor::from({1, 2}, {1e-3f, 2e-3f}), Tensor::from({1}, {200.0f}), nullptr);
  CHECK(big.at(1) == Approx(1.0));
  CHECK(big.at(0) == Approx(0.0).margin(1e-30));

  // A zero weight stays zero, and its gradient is finite: 1/Σw at γ = 1, 0 for γ > 1.
  ops::SharpenCache cache;
  ops::sharpen_forward(Tensor::from({2, 2}, {0, 0.5f, 0, 0.5f}), Tensor::from({2}, {1.0f, 2.0f}), &cache);
  const ops::SharpenGrads g = ops::sharpen_backward(Tensor::from({2, 2}, {1, 0, 1, 0}), cache);
  CHECK_THAT(g.dw, test::close_to(Tensor::from({2, 2}, {2, 0, 0, 0}), 1e-6));
  CHECK(std::isfinite(g.dgamma.at(0)));
  CHECK(std::isfinite(g.dgamma.at(1)));
}

TEST_CASE("sharpen_backward matches finite differences", "[gradcheck][addressing]") {
  Rng rng(53);
  Tensor w = rand_uniform({3, 5}, rng, 0.1f, 1.0f), gamma = rand_uniform({3}, rng, 1.5f, 3.0f);
  const Tensor r = randn({3, 5}, rng);
  auto loss = [&] { return test::dot(r, ops::sharpen_forward(w, gamma, nullptr)); };
  ops::SharpenCache cache;
  ops::sharpen_forward(w, gamma, &cache);
  const ops::SharpenGrads g = ops::sharpen_backward(r, cache);
  CHECK_THAT(g.dw, test::close_to(test::numeric_grad(loss, w)));
  CHECK_THAT(g.dgamma, test::close_to(test::numeric_grad(loss, gamma)));
}

TEST_CASE("addressing: bad inputs are named in the message", "[unit][addressing]") {
  REQUIRE_THROWS_AS(ops::cosine_similarity_forward(Tensor({2, 3}), Tensor({2, 5, 4}), nullptr), ShapeError);
  REQUIRE_THROWS_WITH(ops::cosine_similarity_forward(Tensor({2, 3}), Tensor({2, 5, 4}), nullptr),
                      Catch::Contains("cosine_similarity: k [B, M] has shape [2, 3], expected [2, 4]"));
  REQUIRE_THROWS_WITH(ops::circular_conv_forward(Tensor({2, 5}), Tensor({2, 4}), nullptr),
                      Catch::Contains("circular_conv: s [B, S] has 4 shifts, expected an odd number"));
  REQUIRE_THROWS_AS(ops::sharpen_forward(Tensor::full({1, 3}, 0.3f), Tensor::from({1}, {0.5f}), nullptr),
                    DataError);
  REQUIRE_THROWS_WITH(ops::sharpen_forward(Tensor::full({1, 3}, 0.3f), Tensor::from({1}, {0.5f}), nullptr),
                      Catch::Contains("sharpen: gamma[0] = 0.500000, expected a finite value >= 1"));
  REQUIRE_THROWS_WITH(ops::sharpen_forward(Tensor::from({1, 2}, {0.5f, -0.25f}), Tensor::from({1}, {2.0f}), nullptr),
                      Catch::Contains("sharpen: w[0, 1] = -0.250000, expected a finite weight >= 0"));
  REQUIRE_THROWS_WITH(ops::sharpen_forward(Tensor({2, 2}), Tensor::full({2}, 2.0f), nullptr),
                      Catch::Contains("sharpen: row 0 of w is all zero"));
}

// ---- the fused head ----------------------------------------------------------------------------

namespace {

// Inputs of one fused-head case: B rows, Nm memory rows (N) of width M, Ns shifts (S).
struct HeadCase {
  Tensor k, beta, g, s, gamma, w_prev, mem;
};

HeadCase random_head_case(int64_t B, int64_t N, int64_t M, int64_t S, Rng& rng) {
  HeadCase c{randn({B, M}, rng),
             rand_uniform({B}, rng, 0.5f, 3.0f),
             rand_uniform({B}, rng, 0.1f, 0.9f),
             rand_uniform({B, S}, rng, 0.1f, 1.0f),
             rand_uniform({B}, rng, 1.5f, 3.0f),
             rand_uniform({B, N}, rng, 0.05f, 1.0f),
             randn({B, N, M}, rng)};
  return c;
}

// The chain of eq. 5-9 from the separate ops, forward and backward, for comparison.
struct Composed {
  Tensor w;
  ops::HeadAddressGrads grads;
};
Composed composed_head(const HeadCase& c, const Tensor& dw) {
  const int64_t B = c.mem.dim(0), N = c.mem.dim(1);
  ops::CosineSimilarityCache cos_cache;
  const Tensor K = ops::cosine_similarity_forward(c.k, c.mem, &cos_cache);
  Tensor z({B, N});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i) z.at(b * N + i) = c.beta.at(b) * K.at(b * N + i);
  ops::SoftmaxCache sm_cache;
  const Tensor wc = ops::softmax_forward(z, &sm_cache);
  Tensor wg({B, N});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i)
      wg.at(b * N + i) = c.g.at(b) * wc.at(b * N + i) + (1.0f - c.g.at(b)) * c.w_prev.at(b * N + i);
  ops::CircularConvCache conv_cache;
  const Tensor wt = ops::circular_conv_forward(wg, c.s, &conv_cache);
  ops::SharpenCache sharp_cache;
  Composed out;
  out.w = ops::sharpen_forward(wt, c.gamma, &sharp_cache);
  if (!dw.defined()) return out;

  const ops::SharpenGrads sg = ops::sharpen_backward(dw, sharp_cache);
  const ops::CircularConvGrads cg = ops::circular_conv_backward(sg.dw, conv_cache);
  ops::HeadAddressGrads& g = out.grads;
  g.dgamma = sg.dgamma;
  g.ds = cg.ds;
  g.dg = Tensor({B});
  g.dw_prev = Tensor({B, N});
  Tensor dwc({B, N});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i) {
      const int64_t j = b * N + i;
      g.dg.at(b) += cg.dw.at(j) * (wc.at(j) - c.w_prev.at(j));
      dwc.at(j) = c.g.at(b) * cg.dw.at(j);
      g.dw_prev.at(j) = (1.0f - c.g.at(b)) * cg.dw.at(j);
    }
  const Tensor dz = ops::softmax_backward(dwc, sm_cache);
  g.dbeta = Tensor({B});
  Tensor dK({B, N});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i) {
      g.dbeta.at(b) += dz.at(b * N + i) * K.at(b * N + i);
      dK.at(b * N + i) = c.beta.at(b) * dz.at(b * N + i);
    }
  const ops::CosineSimilarityGrads kg = ops::cosine_similarity_backward(dK, cos_cache);
  g.dk = kg.dk;
  g.dmem = kg.dmem;
  return out;
}

void check_same_grads(const ops::HeadAddressGrads& a, const ops::HeadAddressGrads& e, double tol) {
  CHECK_THAT(a.dk, test::close_to(e.dk, tol));
  CHECK_THAT(a.dbeta, test::close_to(e.dbeta, tol));
  CHECK_THAT(a.dg, test::close_to(e.dg, tol));
  CHECK_THAT(a.ds, test::close_to(e.ds, tol));
  CHECK_THAT(a.dgamma, test::close_to(e.dgamma, tol));
  CHECK_THAT(a.dw_prev, test::close_to(e.dw_prev, tol));
  CHECK_THAT(a.dmem, test::close_to(e.dmem, tol));
}

}  // namespace

TEST_CASE("head_address equals cosine, softmax, interpolation, shift and sharpening composed",
          "[unit][addressing]") {
  Rng rng(54);
  // Ns < Nm, Ns = Nm and Ns > Nm (shifts wrap around more than once).
  for (const auto& [N, S] : {std::pair<int64_t, int64_t>{7, 3}, {5, 5}, {2, 5}}) {
    INFO("N = " << N << ", S = " << S);
    const HeadCase c = random_head_case(3, N, 4, S, rng);
    const Tensor dw = randn({3, N}, rng);
    ops::HeadAddressCache cache;
    flops::reset();
    const Tensor w = ops::head_address_forward(c.k, c.beta, c.g, c.s, c.gamma, c.w_prev, c.mem, &cache);
    CHECK(flops::count() == 3 * (4 + 2 * N * 4 + N * S + 3 * N));
    const Composed want = composed_head(c, dw);
    CHECK_THAT(w, test::close_to(want.w, 1e-5));
    check_same_grads(ops::head_address_backward(dw, cache), want.grads, 1e-4);
  }
}

TEST_CASE("head_address_backward matches finite differences", "[gradcheck][addressing]") {
  Rng rng(55);
  HeadCase c = random_head_case(2, 6, 3, 3, rng);
  const Tensor r = randn({2, 6}, rng);
  auto loss = [&] {
    return test::dot(r, ops::head_address_forward(c.k, c.beta, c.g, c.s, c.gamma, c.w_prev, c.mem, nullptr));
  };
  ops::HeadAddressCache cache;
  ops::head_address_forward(c.k, c.beta, c.g, c.s, c.gamma, c.w_prev, c.mem, &cache);
  const ops::HeadAddressGrads g = ops::head_address_backward(r, cache);
  CHECK_THAT(g.dk, test::close_to(test::numeric_grad(loss, c.k)));
  CHECK_THAT(g.dbeta, test::close_to(test::numeric_grad(loss, c.beta)));
  CHECK_THAT(g.dg, test::close_to(test::numeric_grad(loss, c.g)));
  CHECK_THAT(g.ds, test::close_to(test::numeric_grad(loss, c.s)));
  CHECK_THAT(g.dgamma, test::close_to(test::numeric_grad(loss, c.gamma)));
  CHECK_THAT(g.dw_prev, test::close_to(test::numeric_grad(loss, c.w_prev)));
  CHECK_THAT(g.dmem, test::close_to(test::numeric_grad(loss, c.mem)));
}

TEST_CASE("head_address at γ = 1, with zero weights and with a huge γ", "[unit][addressing]") {
  // g = 0 and a one-hot shift make w~ a rotation of w_prev, zeros included: at γ = 1 those
  // entries still get a gradient (w^0 = 1), at γ > 1 they get none (sharpen_backward agrees).
  Rng rng(56);
  HeadCase c = random_head_case(2, 5, 3, 3, rng);
  c.g = Tensor({2});
  c.s = Tensor::from({2, 3}, {0, 0, 1, 1, 0, 0});
  c.w_prev = Tensor::from({2, 5}, {0.5f, 0, 0.25f, 0, 0.25f, 0, 0.6f, 0.4f, 0, 0});
  c.gamma = Tensor::from({2}, {1.0f, 2.5f});
  const Tensor dw = randn({2, 5}, rng);
  ops::HeadAddressCache cache;
  const Tensor w = ops::head_address_forward(c.k, c.beta, c.g, c.s, c.gamma, c.w_prev, c.mem, &cache);
  CHECK_THAT(w.reshape({10}).rows(0, 5), test::close_to(Tensor::from({5}, {0.25f, 0.5f, 0, 0.25f, 0}), 1e-6));
  const Composed want = composed_head(c, dw);
  check_same_grads(ops::head_address_backward(dw, cache), want.grads, 1e-5);

  // γ = 1e4: (w~ / max)^γ underflows everywhere but at the maximum of w~ (the argmax of the
  // γ = 1 result): exactly one-hot, with finite gradients.
  HeadCase h = random_head_case(2, 6, 3, 3, rng);
  h.gamma = Tensor::full({2}, 1.0f);
  const Tensor plain = ops::head_address_forward(h.k, h.beta, h.g, h.s, h.gamma, h.w_prev, h.mem, nullptr);
  h.gamma = Tensor::full({2}, 1e4f);
  ops::HeadAddressCache hc;
  const Tensor sharp = ops::head_address_forward(h.k, h.beta, h.g, h.s, h.gamma, h.w_prev, h.mem, &hc);
  for (int64_t b = 0; b < 2; ++b) {
    int64_t arg = 0;
    for (int64_t i = 1; i < 6; ++i)
      if (plain.at(b * 6 + i) > plain.at(b * 6 + arg)) arg = i;
    for (int64_t i = 0; i < 6; ++i) CHECK(sharp.at(b * 6 + i) == (i == arg ? 1.0f : 0.0f));
  }
  const ops::HeadAddressGrads hg = ops::head_address_backward(randn({2, 6}, rng), hc);
  for (const Tensor* t : {&hg.dk, &hg.dbeta, &hg.dg, &hg.ds, &hg.dgamma, &hg.dw_prev, &hg.dmem})
    for (float v : t->values()) CHECK(std::isfinite(v));
}

TEST_CASE("head_address: bad inputs are named in the message", "[unit][addressing]") {
  Rng rng(57);
  const HeadCase c = random_head_case(2, 5, 4, 3, rng);
  auto call = [&](const HeadCase& x) {
    return ops::head_address_forward(x.k, x.beta, x.g, x.s, x.gamma, x.w_prev, x.mem, nullptr);
  };
  HeadCase bad = c;
  bad.k = Tensor({2, 3});
  REQUIRE_THROWS_AS(call(bad), ShapeError);
  REQUIRE_THROWS_WITH(call(bad), Catch::Contains("head_address: k [B, M] has shape [2, 3], expected [2, 4]"));
  bad = c;
  bad.s = Tensor::full({2, 4}, 0.25f);
  REQUIRE_THROWS_WITH(call(bad), Catch::Contains("head_address: s [B, S] has 4 shifts, expected an odd number"));
  bad = c;
  bad.gamma = Tensor::from({2}, {2.0f, 0.5f});
  REQUIRE_THROWS_AS(call(bad), DataError);
  REQUIRE_THROWS_WITH(call(bad), Catch::Contains("head_address: gamma[1] = 0.500000, expected a finite value >= 1"));
  bad = c;
  bad.g = Tensor::from({2}, {1.5f, 0.5f});
  REQUIRE_THROWS_WITH(call(bad), Catch::Contains("head_address: g[0] = 1.500000, expected a value in [0, 1]"));
  bad = c;
  bad.w_prev.at(7) = -1.0f;
  REQUIRE_THROWS_WITH(call(bad), Catch::Contains("head_address: w_prev[1, 2] = -1.000000, expected a finite weight >= 0"));
  bad = c;
  bad.g = Tensor({2});
  bad.w_prev = Tensor({2, 5});
  REQUIRE_THROWS_WITH(call(bad), Catch::Contains("head_address: row 0 of the shifted weighting is all zero"));
}

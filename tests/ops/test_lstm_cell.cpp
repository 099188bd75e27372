// LSTM cell and layer: a step by hand, a naive-loop reference at B > 1, finite-difference
// gradients of every input and parameter, the layer against stepping the cell, bad shapes.
#include "attn/ops/lstm_cell.hpp"

#include <cmath>
#include <utility>
#include <vector>

#include "attn/blas/blas.hpp"
#include "attn/core/threading.hpp"
#include "attn/ops/linear.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// One step in double with plain loops: the definition the fused kernel must match.
ops::LstmState naive_step(const Tensor& gx, const Tensor& h, const Tensor& c, const Tensor& W) {
  const int64_t B = h.dim(0), H = h.dim(1);
  ops::LstmState out{Tensor({B, H}), Tensor({B, H})};
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> pre(4 * H);
    const float* hb = h.data() + b * H;
    for (int64_t r = 0; r < 4 * H; ++r) {
      const float* w = W.data() + r * H;
      pre[r] = gx.at(b * 4 * H + r);
      for (int64_t k = 0; k < H; ++k) pre[r] += static_cast<double>(hb[k]) * w[k];
    }
    for (int64_t j = 0; j < H; ++j) {
      const double i = sigmoid(pre[j]), f = sigmoid(pre[H + j]), g = std::tanh(pre[2 * H + j]),
                   o = sigmoid(pre[3 * H + j]);
      const double cn = f * c.at(b * H + j) + i * g;
      out.c.at(b * H + j) = static_cast<float>(cn);
      out.h.at(b * H + j) = static_cast<float>(o * std::tanh(cn));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("lstm_cell: one step by hand", "[unit][lstm]") {
  // Zero pre-activations: i = f = o = 1/2, g = 0, so c' = c / 2 and h' = tanh(c / 2) / 2.
  const Tensor gx = Tensor::zeros({1, 4}), h = Tensor::from({1, 1}, {0.3f});
  const Tensor c = Tensor::from({1, 1}, {2.0f}), W = Tensor::zeros({4, 1});
  const ops::LstmState s = ops::lstm_cell_forward(gx, h, c, W, nullptr);
  CHECK(s.c.at(0) == Approx(1.0));
  CHECK(s.h.at(0) == Approx(0.5 * std::tanh(1.0)));

  // With W_hh: pre-activations [1, -1, 0.5, 2] * h = 0.5 -> [0.5, -0.5, 0.25, 1].
  const Tensor W2 = Tensor::from({4, 1}, {1, -1, 0.5f, 2}), h2 = Tensor::from({1, 1}, {0.5f});
  const ops::LstmState s2 = ops::lstm_cell_forward(gx, h2, c, W2, nullptr);
  const double c2 = sigmoid(-0.5) * 2.0 + sigmoid(0.5) * std::tanh(0.25);
  CHECK(s2.c.at(0) == Approx(c2));
  CHECK(s2.h.at(0) == Approx(sigmoid(1.0) * std::tanh(c2)));
}

TEST_CASE("lstm_cell: matches the naive loops at B > 1", "[unit][lstm]") {
  Rng rng(11);
  // The second size is large enough for the fused pass to run on every thread.
  for (auto [B, H] : {std::pair<int64_t, int64_t>{3, 5}, {64, 256}}) {
    const Tensor gx = randn({B, 4 * H}, rng), h = randn({B, H}, rng), c = randn({B, H}, rng);
    const Tensor W = randn({4 * H, H}, rng, 0.1f);
    const ops::LstmState got = ops::lstm_cell_forward(gx, h, c, W, nullptr);
    const ops::LstmState want = naive_step(gx, h, c, W);
    CHECK_THAT(got.h, test::close_to(want.h, 1e-5));
    CHECK_THAT(got.c, test::close_to(want.c, 1e-5));
  }
}

TEST_CASE("lstm_cell_backward matches finite differences", "[gradcheck][lstm]") {
  Rng rng(7);
  const int64_t B = 3, H = 4;
  Tensor gx = randn({B, 4 * H}, rng), h = randn({B, H}, rng), c = randn({B, H}, rng);
  Tensor W = randn({4 * H, H}, rng, 0.5f);
  const Tensor rh = randn({B, H}, rng), rc = randn({B, H}, rng);
  auto loss = [&] {
    const ops::LstmState s = ops::lstm_cell_forward(gx, h, c, W, nullptr);
    return test::dot(rh, s.h) + test::dot(rc, s.c);
  };
  ops::LstmCellCache cache;
  ops::lstm_cell_forward(gx, h, c, W, &cache);
  Tensor dW = Tensor::full(W.shape(), 0.25f);   // backward adds to what is there
  const ops::LstmCellGrads g = ops::lstm_cell_backward(rh, rc, W, cache, dW);
  CHECK_THAT(g.dgates_x, test::close_to(test::numeric_grad(loss, gx)));
  CHECK_THAT(g.dh, test::close_to(test::numeric_grad(loss, h)));
  CHECK_THAT(g.dc, test::close_to(test::numeric_grad(loss, c)));
  Tensor want_dW = test::numeric_grad(loss, W);
  for (float& v : want_dW.values()) v += 0.25f;
  CHECK_THAT(dW, test::close_to(want_dW));
}

TEST_CASE("lstm_cell: the same step, forward and backward, on one thread and on two", "[unit][lstm]") {
  // 32 x 128 (the captioner's decoder cell) is large enough for the products and the elementwise
  // passes to split over two threads.
  Rng rng(12);
  const int64_t B = 32, H = 128;
  const Tensor gx = randn({B, 4 * H}, rng), h = randn({B, H}, rng), c = randn({B, H}, rng);
  const Tensor W = randn({4 * H, H}, rng, 0.1f), dh = randn({B, H}, rng), dc = randn({B, H}, rng);
  const int before = num_threads();
  const auto step = [&](int parts, int running) {
    set_num_threads(parts);
    set_running_threads(running);
    ops::LstmCellCache cache;
    const ops::LstmState s = ops::lstm_cell_forward(gx, h, c, W, &cache);
    Tensor dW = zeros_like(W);
    const ops::LstmCellGrads g = ops::lstm_cell_backward(dh, dc, W, cache, dW);
    return std::vector<Tensor>{s.h, s.c, g.dgates_x, g.dh, g.dc, dW};
  };
  // Two parts on one running thread (the thread governor's case): the thread runs both parts of
  // each phase in turn, with the same bits as two threads.
  const std::vector<Tensor> one = step(1, 1), two = step(2, 2), held = step(2, 1);
  set_num_threads(before);
  for (size_t i = 0; i < one.size(); ++i) {
    CHECK_THAT(two[i], test::close_to(one[i], 1e-5));
    CHECK_THAT(held[i], test::close_to(two[i], 0));
  }
  const ops::LstmState want = naive_step(gx, h, c, W);
  CHECK_THAT(two[0], test::close_to(want.h, 1e-5));
}

TEST_CASE("lstm_cell_backward: an undefined gradient stands for zeros", "[unit][lstm]") {
  Rng rng(5);
  const int64_t B = 2, H = 3;
  const Tensor gx = randn({B, 4 * H}, rng), h = randn({B, H}, rng), c = randn({B, H}, rng);
  const Tensor W = randn({4 * H, H}, rng, 0.5f), dh = randn({B, H}, rng);
  ops::LstmCellCache cache;
  ops::lstm_cell_forward(gx, h, c, W, &cache);
  Tensor dW1 = zeros_like(W), dW2 = zeros_like(W);
  const ops::LstmCellGrads a = ops::lstm_cell_backward(dh, Tensor(), W, cache, dW1);
  const ops::LstmCellGrads b = ops::lstm_cell_backward(dh, Tensor::zeros({B, H}), W, cache, dW2);
  CHECK_THAT(a.dgates_x, test::close_to(b.dgates_x, 0));
  CHECK_THAT(a.dc, test::close_to(b.dc, 0));
  CHECK_THAT(dW1, test::close_to(dW2, 0));
}

TEST_CASE("lstm_layer equals stepping the cell, forward and backward", "[unit][lstm]") {
  Rng rng(21);
  const int64_t T = 4, B = 3, I = 5, H = 4;
  const Tensor x = randn({T, B, I}, rng), h0 = randn({B, H}, rng), c0 = randn({B, H}, rng);
  const Tensor W_ih = randn({4 * H, I}, rng, 0.5f), W_hh = randn({4 * H, H}, rng, 0.5f);
  const Tensor b = randn({4 * H}, rng), dy = randn({T, B, H}, rng), dc_T = randn({B, H}, rng);

  ops::LstmLayerCache lc;
  const ops::LstmLayerOutput out = ops::lstm_layer_forward(x, h0, c0, W_ih, W_hh, b, &lc);
  Tensor dW_ih = zeros_like(W_ih), dW_hh = zeros_like(W_hh), db = zeros_like(b);
  const ops::LstmLayerGrads lg =
      ops::lstm_layer_backward(dy, Tensor(), dc_T, W_ih, W_hh, lc, dW_ih, dW_hh, db);

  // The same computation step by step, the input projection done per step with the seam.
  std::vector<ops::LstmCellCache> caches(T);
  std::vector<Tensor> xs(T);
  ops::LstmState s{h0, c0};
  for (int64_t t = 0; t < T; ++t) {
    Tensor gx({B, 4 * H});
    for (int64_t r = 0; r < B; ++r)
      for (int64_t j = 0; j < 4 * H; ++j) gx.at(r * 4 * H + j) = b.at(j);
    xs[t] = x[t];
    blas::gemm(blas::Trans::N, blas::Trans::T, B, 4 * H, I, 1.0f, xs[t].data(), I, W_ih.data(), I,
               1.0f, gx.data(), 4 * H);
    s = ops::lstm_cell_forward(gx, s.h, s.c, W_hh, &caches[t]);
    CHECK_THAT(s.h, test::close_to(out.y[t], 1e-6));
  }
  CHECK_THAT(s.h, test::close_to(out.h, 1e-6));
  CHECK_THAT(s.c, test::close_to(out.c, 1e-6));

  Tensor cW_ih = zeros_like(W_ih), cW_hh = zeros_like(W_hh), cb = zeros_like(b);
  Tensor dh = Tensor::zeros({B, H}), dc = dc_T;
  for (int64_t t = T - 1; t >= 0; --t) {
    Tensor dh_t = dy[t].clone();
    for (int64_t k = 0; k < B * H; ++k) dh_t.at(k) += dh.at(k);
    const ops::LstmCellGrads g = ops::lstm_cell_backward(dh_t, dc, W_hh, caches[t], cW_hh);
    blas::gemm(blas::Trans::T, blas::Trans::N, 4 * H, I, B, 1.0f, g.dgates_x.data(), 4 * H,
               xs[t].data(), I, 1.0f, cW_ih.data(), I);
    for (int64_t r = 0; r < B; ++r)
      for (int64_t j = 0; j < 4 * H; ++j) cb.at(j) += g.dgates_x.at(r * 4 * H + j);
    dh = g.dh;
    dc = g.dc;
  }
  CHECK_THAT(lg.dh0, test::close_to(dh, 1e-5));
  CHECK_THAT(lg.dc0, test::close_to(dc, 1e-5));
  CHECK_THAT(dW_ih, test::close_to(cW_ih, 1e-5));
  CHECK_THAT(dW_hh, test::close_to(cW_hh, 1e-5));
  CHECK_THAT(db, test::close_to(cb, 1e-5));
}

TEST_CASE("lstm_layer_backward matches finite differences", "[gradcheck][lstm]") {
  Rng rng(8);
  const int64_t T = 3, B = 2, I = 3, H = 3;
  Tensor x = randn({T, B, I}, rng), h0 = randn({B, H}, rng), c0 = randn({B, H}, rng);
  Tensor W_ih = randn({4 * H, I}, rng, 0.5f), W_hh = randn({4 * H, H}, rng, 0.5f);
  Tensor b = randn({4 * H}, rng, 0.5f);
  const Tensor ry = randn({T, B, H}, rng), rh = randn({B, H}, rng), rc = randn({B, H}, rng);
  auto loss = [&] {
    const ops::LstmLayerOutput o = ops::lstm_layer_forward(x, h0, c0, W_ih, W_hh, b, nullptr);
    return test::dot(ry, o.y) + test::dot(rh, o.h) + test::dot(rc, o.c);
  };
  ops::LstmLayerCache cache;
  ops::lstm_layer_forward(x, h0, c0, W_ih, W_hh, b, &cache);
  Tensor dW_ih = zeros_like(W_ih), dW_hh = zeros_like(W_hh), db = zeros_like(b);
  const ops::LstmLayerGrads g =
      ops::lstm_layer_backward(ry, rh, rc, W_ih, W_hh, cache, dW_ih, dW_hh, db);
  CHECK_THAT(g.dx, test::close_to(test::numeric_grad(loss, x)));
  CHECK_THAT(g.dh0, test::close_to(test::numeric_grad(loss, h0)));
  CHECK_THAT(g.dc0, test::close_to(test::numeric_grad(loss, c0)));
  CHECK_THAT(dW_ih, test::close_to(test::numeric_grad(loss, W_ih)));
  CHECK_THAT(dW_hh, test::close_to(test::numeric_grad(loss, W_hh)));
  CHECK_THAT(db, test::close_to(test::numeric_grad(loss, b)));
}

TEST_CASE("lstm: bad shapes name the tensor and both shapes", "[unit][lstm]") {
  const Tensor h({2, 2}), c({2, 2}), W({8, 2});
  REQUIRE_THROWS_AS(ops::lstm_cell_forward(Tensor({2, 7}), h, c, W, nullptr), ShapeError);
  REQUIRE_THROWS_WITH(ops::lstm_cell_forward(Tensor({2, 7}), h, c, W, nullptr),
                      Catch::Contains("lstm_cell: gates_x [B, 4H] has shape [2, 7], expected [2, 8]"));
  REQUIRE_THROWS_WITH(ops::lstm_cell_forward(Tensor({2, 8}), h, c, Tensor({8, 3}), nullptr),
                      Catch::Contains("lstm_cell: W_hh [4H, H] has shape [8, 3], expected [8, 2]"));
  REQUIRE_THROWS_WITH(
      ops::lstm_layer_forward(Tensor({3, 2, 5}), h, c, Tensor({8, 4}), W, Tensor({8}), nullptr),
      Catch::Contains("lstm_layer: W_ih [4H, I] has shape [8, 4], expected [8, 5]"));
  ops::LstmCellCache cache;
  ops::lstm_cell_forward(Tensor({2, 8}), h, c, W, &cache);
  Tensor dW({8, 2});
  REQUIRE_THROWS_WITH(ops::lstm_cell_backward(Tensor({3, 2}), Tensor(), W, cache, dW),
                      Catch::Contains("lstm_cell_backward: dh_next [B, H] has shape [3, 2], expected [2, 2]"));
}

// ---- on raw rows ------------------------------------------------------------------------------

TEST_CASE("lstm_rows equal the cell, forward and backward, at 1 row (gemv) and 3", "[unit][lstm]") {
  const int64_t H = 4;
  for (int64_t B : {1, 3}) {
    Rng rng(60 + static_cast<uint64_t>(B));
    const Tensor gx = randn({B, 4 * H}, rng), h = randn({B, H}, rng), c = randn({B, H}, rng);
    const Tensor W = randn({4 * H, H}, rng, 0.5f);
    const Tensor dh_a = randn({B, H}, rng), dh_b = randn({B, H}, rng), dc_next = randn({B, H}, rng);
    ops::LstmCellCache cache;
    const ops::LstmState want = ops::lstm_cell_forward(gx, h, c, W, &cache);
    Tensor dW_want = zeros_like(W);
    Tensor dh_sum = dh_a.clone();
    for (int64_t i = 0; i < B * H; ++i) dh_sum.at(i) += dh_b.at(i);
    const ops::LstmCellGrads gw = ops::lstm_cell_backward(dh_sum, dc_next, W, cache, dW_want);

    Tensor gates = gx.clone(), c_next({B, H}), h_next({B, H});
    ops::lstm_rows_forward(B, H, h.data(), W, gates.data(), c.data(), c_next.data(), h_next.data());
    CHECK_THAT(h_next, test::close_to(want.h, 1e-6));
    CHECK_THAT(c_next, test::close_to(want.c, 1e-6));
    CHECK_THAT(gates, test::close_to(cache.gates, 1e-6));   // activated in place, as the cell caches them

    // dh_prev aliases dh_b and dc is updated in place, as a step loop uses them.
    Tensor dgates({B, 4 * H}), dh = dh_b.clone(), dc = dc_next.clone();
    ops::lstm_rows_backward(B, H, gates.data(), c.data(), c_next.data(), dh_a.data(), dh.data(), dc.data(),
                            dgates.data(), W, dh.data());
    CHECK_THAT(dgates, test::close_to(gw.dgates_x, 1e-6));
    CHECK_THAT(dh, test::close_to(gw.dh, 1e-6));
    CHECK_THAT(dc, test::close_to(gw.dc, 1e-6));
    // W_hh's gradient is the caller's, once over all rows: the recurrent product's linear one.
    Tensor dW = zeros_like(W);
    ops::linear_rows_backward_params(dgates.data(), 4 * H, B, h.data(), H, /*col=*/0, H, dW, /*db=*/nullptr);
    CHECK_THAT(dW, test::close_to(dW_want, 1e-6));
  }
}

TEST_CASE("lstm_rows: a null h_prev is the zero state, a null dh_prev passes nothing back", "[unit][lstm]") {
  Rng rng(63);
  const int64_t B = 2, H = 3;
  const Tensor gx = randn({B, 4 * H}, rng), W = randn({4 * H, H}, rng, 0.5f), zeros({B, H});
  const Tensor dh_a = randn({B, H}, rng), dc_next = randn({B, H}, rng);
  ops::LstmCellCache cache;
  const ops::LstmState want = ops::lstm_cell_forward(gx, zeros, zeros, W, &cache);
  Tensor dW = zeros_like(W);
  const ops::LstmCellGrads gw = ops::lstm_cell_backward(dh_a, dc_next, W, cache, dW);
  Tensor gates = gx.clone(), c_next({B, H}), h_next({B, H});
  ops::lstm_rows_forward(B, H, /*h_prev=*/nullptr, W, gates.data(), zeros.data(), c_next.data(), h_next.data());
  CHECK_THAT(h_next, test::close_to(want.h, 1e-6));
  CHECK_THAT(c_next, test::close_to(want.c, 1e-6));
  Tensor dgates({B, 4 * H}), dc = dc_next.clone();
  ops::lstm_rows_backward(B, H, gates.data(), zeros.data(), c_next.data(), dh_a.data(), zeros.data(), dc.data(),
                          dgates.data(), W, /*dh_prev=*/nullptr);
  CHECK_THAT(dgates, test::close_to(gw.dgates_x, 1e-6));
  CHECK_THAT(dc, test::close_to(gw.dc, 1e-6));
}

TEST_CASE("lstm_rows backward matches finite differences", "[gradcheck][lstm]") {
  Rng rng(64);
  const int64_t B = 3, H = 3;
  Tensor gx = randn({B, 4 * H}, rng), h = randn({B, H}, rng), c = randn({B, H}, rng);
  Tensor W = randn({4 * H, H}, rng, 0.5f);
  const Tensor rh = randn({B, H}, rng), rc = randn({B, H}, rng), zeros({B, H});
  auto step = [&](Tensor& gates, Tensor& c_next, Tensor& h_next) {
    gates = gx.clone();
    c_next = Tensor({B, H});
    h_next = Tensor({B, H});
    ops::lstm_rows_forward(B, H, h.data(), W, gates.data(), c.data(), c_next.data(), h_next.data());
  };
  auto loss = [&] {
    Tensor gates, c_next, h_next;
    step(gates, c_next, h_next);
    return test::dot(rh, h_next) + test::dot(rc, c_next);
  };
  Tensor gates, c_next, h_next;
  step(gates, c_next, h_next);
  Tensor dgates({B, 4 * H}), dh_prev({B, H}), dc = rc.clone(), dW = zeros_like(W);
  ops::lstm_rows_backward(B, H, gates.data(), c.data(), c_next.data(), rh.data(), zeros.data(), dc.data(),
                          dgates.data(), W, dh_prev.data());
  ops::linear_rows_backward_params(dgates.data(), 4 * H, B, h.data(), H, /*col=*/0, H, dW, /*db=*/nullptr);
  CHECK_THAT(dgates, test::close_to(test::numeric_grad(loss, gx)));
  CHECK_THAT(dh_prev, test::close_to(test::numeric_grad(loss, h)));
  CHECK_THAT(dc, test::close_to(test::numeric_grad(loss, c)));
  CHECK_THAT(dW, test::close_to(test::numeric_grad(loss, W)));
}

TEST_CASE("lstm_rows: a W_hh of the wrong shape is named", "[unit][lstm]") {
  Tensor gates({2, 8}), c({2, 2}), out({2, 2}), dgates({2, 8});
  REQUIRE_THROWS_WITH(
      ops::lstm_rows_forward(2, 2, nullptr, Tensor({8, 3}), gates.data(), c.data(), out.data(), out.data()),
      Catch::Equals("lstm_rows_forward: W_hh [4H, H] has shape [8, 3], expected [8, 2]"));
  REQUIRE_THROWS_WITH(ops::lstm_rows_backward(2, 2, gates.data(), c.data(), c.data(), c.data(), c.data(), out.data(),
                                              dgates.data(), Tensor({4, 2}), nullptr),
                      Catch::Equals("lstm_rows_backward: W_hh [4H, H] has shape [4, 2], expected [8, 2]"));
}

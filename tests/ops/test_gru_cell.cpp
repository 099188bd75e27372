// GRU cell and layer: a step by hand, a naive-loop reference at B > 1, finite-difference
// gradients of every input and parameter, the layer against stepping the cell, bad shapes.
#include "attn/ops/gru_cell.hpp"

#include <cmath>
#include <utility>
#include <vector>

#include "attn/blas/blas.hpp"
#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// One step in double with plain loops, straight from the PyTorch equations.
Tensor naive_step(const Tensor& gx, const Tensor& h, const Tensor& W, const Tensor& bh) {
  const int64_t B = h.dim(0), H = h.dim(1);
  Tensor out({B, H});
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> gh(3 * H);
    const float* hb = h.data() + b * H;
    for (int64_t r = 0; r < 3 * H; ++r) {
      const float* w = W.data() + r * H;
      gh[r] = bh.at(r);
      for (int64_t k = 0; k < H; ++k) gh[r] += static_cast<double>(hb[k]) * w[k];
    }
    for (int64_t j = 0; j < H; ++j) {
      const double r = sigmoid(gx.at(b * 3 * H + j) + gh[j]);
      const double z = sigmoid(gx.at(b * 3 * H + H + j) + gh[H + j]);
      const double n = std::tanh(gx.at(b * 3 * H + 2 * H + j) + r * gh[2 * H + j]);
      out.at(b * H + j) = static_cast<float>((1 - z) * n + z * h.at(b * H + j));
    }
  }
  return out;
}

}  // namespace

TEST_CASE("gru_cell: one step by hand", "[unit][gru]") {
  // W_hh = 0, b_hh = [0, 0, 2], gates_x = [0, 0, -1]: r = z = 1/2, n = tanh(-1 + 2/2) = 0,
  // so h' = z h = h / 2.
  const Tensor gx = Tensor::from({1, 3}, {0, 0, -1}), h = Tensor::from({1, 1}, {0.8f});
  const Tensor W = Tensor::zeros({3, 1}), bh = Tensor::from({3}, {0, 0, 2});
  CHECK(ops::gru_cell_forward(gx, h, W, bh, nullptr).at(0) == Approx(0.4));

  // W_hh = [1, -1, 1], h = 1, b_hh = 0, gates_x = 0: r = σ(1), z = σ(-1), n = tanh(σ(1)).
  const Tensor W2 = Tensor::from({3, 1}, {1, -1, 1}), h2 = Tensor::from({1, 1}, {1.0f});
  const double r = sigmoid(1), z = sigmoid(-1), n = std::tanh(r);
  CHECK(ops::gru_cell_forward(Tensor::zeros({1, 3}), h2, W2, Tensor::zeros({3}), nullptr).at(0) ==
        Approx((1 - z) * n + z));
}

TEST_CASE("gru_cell: matches the naive loops at B > 1", "[unit][gru]") {
  Rng rng(12);
  // The second size is large enough for the fused pass to run on every thread.
  for (auto [B, H] : {std::pair<int64_t, int64_t>{3, 5}, {64, 256}}) {
    const Tensor gx = randn({B, 3 * H}, rng), h = randn({B, H}, rng);
    const Tensor W = randn({3 * H, H}, rng, 0.1f), bh = randn({3 * H}, rng);
    CHECK_THAT(ops::gru_cell_forward(gx, h, W, bh, nullptr),
               test::close_to(naive_step(gx, h, W, bh), 1e-5));
  }
}

TEST_CASE("gru_cell: the same step, forward and backward, on one thread and on two", "[unit][gru]") {
  // 32 x 128 is large enough for the products and the elementwise passes to split over two
  // threads; two parts on one running thread (the thread governor's case) give two threads' bits.
  Rng rng(13);
  const int64_t B = 32, H = 128;
  const Tensor gx = randn({B, 3 * H}, rng), h = randn({B, H}, rng), dh = randn({B, H}, rng);
  const Tensor W = randn({3 * H, H}, rng, 0.1f), bh = randn({3 * H}, rng);
  const int before = num_threads();
  const auto step = [&](int parts, int running) {
    set_num_threads(parts);
    set_running_threads(running);
    ops::GruCellCache cache;
    const Tensor next = ops::gru_cell_forward(gx, h, W, bh, &cache);
    Tensor dW = zeros_like(W), db = zeros_like(bh);
    const ops::GruCellGrads g = ops::gru_cell_backward(dh, W, cache, dW, db);
    return std::vector<Tensor>{next, g.dgates_x, g.dh, dW, db};
  };
  const std::vector<Tensor> one = step(1, 1), two = step(2, 2), held = step(2, 1);
  set_num_threads(before);
  for (size_t i = 0; i < one.size(); ++i) {
    CHECK_THAT(two[i], test::close_to(one[i], 1e-5));
    CHECK_THAT(held[i], test::close_to(two[i], 0));
  }
  CHECK_THAT(two[0], test::close_to(naive_step(gx, h, W, bh), 1e-5));
}

TEST_CASE("gru_cell_backward matches finite differences", "[gradcheck][gru]") {
  Rng rng(9);
  const int64_t B = 3, H = 4;
  Tensor gx = randn({B, 3 * H}, rng), h = randn({B, H}, rng);
  Tensor W = randn({3 * H, H}, rng, 0.5f), bh = randn({3 * H}, rng);
  const Tensor r = randn({B, H}, rng);
  auto loss = [&] { return test::dot(r, ops::gru_cell_forward(gx, h, W, bh, nullptr)); };
  ops::GruCellCache cache;
  ops::gru_cell_forward(gx, h, W, bh, &cache);
  Tensor dW = Tensor::full(W.shape(), 0.5f), db = zeros_like(bh);   // backward adds
  const ops::GruCellGrads g = ops::gru_cell_backward(r, W, cache, dW, db);
  CHECK_THAT(g.dgates_x, test::close_to(test::numeric_grad(loss, gx)));
  CHECK_THAT(g.dh, test::close_to(test::numeric_grad(loss, h)));
  CHECK_THAT(db, test::close_to(test::numeric_grad(loss, bh)));
  Tensor want_dW = test::numeric_grad(loss, W);
  for (float& v : want_dW.values()) v += 0.5f;
  CHECK_THAT(dW, test::close_to(want_dW));
}

TEST_CASE("gru_layer equals stepping the cell, forward and backward", "[unit][gru]") {
  Rng rng(22);
  const int64_t T = 4, B = 3, I = 5, H = 4;
  const Tensor x = randn({T, B, I}, rng), h0 = randn({B, H}, rng);
  const Tensor W_ih = randn({3 * H, I}, rng, 0.5f), W_hh = randn({3 * H, H}, rng, 0.5f);
  const Tensor b_ih = randn({3 * H}, rng), b_hh = randn({3 * H}, rng);
  const Tensor dy = randn({T, B, H}, rng), dh_T = randn({B, H}, rng);

  ops::GruLayerCache lc;
  const ops::GruLayerOutput out = ops::gru_layer_forward(x, h0, W_ih, W_hh, b_ih, b_hh, &lc);
  Tensor dW_ih = zeros_like(W_ih), dW_hh = zeros_like(W_hh);
  Tensor db_ih = zeros_like(b_ih), db_hh = zeros_like(b_hh);
  const ops::GruLayerGrads lg =
      ops::gru_layer_backward(dy, dh_T, W_ih, W_hh, lc, dW_ih, dW_hh, db_ih, db_hh);

  std::vector<ops::GruCellCache> caches(T);
  std::vector<Tensor> xs(T);
  Tensor h = h0;
  for (int64_t t = 0; t < T; ++t) {
    Tensor gx({B, 3 * H});
    for (int64_t r = 0; r < B; ++r)
      for (int64_t j = 0; j < 3 * H; ++j) gx.at(r * 3 * H + j) = b_ih.at(j);
    xs[t] = x[t];
    blas::gemm(blas::Trans::N, blas::Trans::T, B, 3 * H, I, 1.0f, xs[t].data(), I, W_ih.data(), I,
               1.0f, gx.data(), 3 * H);
    h = ops::gru_cell_forward(gx, h, W_hh, b_hh, &caches[t]);
    CHECK_THAT(h, test::close_to(out.y[t], 1e-6));
  }
  CHECK_THAT(h, test::close_to(out.h, 1e-6));

  Tensor cW_ih = zeros_like(W_ih), cW_hh = zeros_like(W_hh);
  Tensor cb_ih = zeros_like(b_ih), cb_hh = zeros_like(b_hh);
  Tensor dh = dh_T;
  for (int64_t t = T - 1; t >= 0; --t) {
    Tensor dh_t = dy[t].clone();
    for (int64_t k = 0; k < B * H; ++k) dh_t.at(k) += dh.at(k);
    const ops::GruCellGrads g = ops::gru_cell_backward(dh_t, W_hh, caches[t], cW_hh, cb_hh);
    blas::gemm(blas::Trans::T, blas::Trans::N, 3 * H, I, B, 1.0f, g.dgates_x.data(), 3 * H,
               xs[t].data(), I, 1.0f, cW_ih.data(), I);
    for (int64_t r = 0; r < B; ++r)
      for (int64_t j = 0; j < 3 * H; ++j) cb_ih.at(j) += g.dgates_x.at(r * 3 * H + j);
    dh = g.dh;
  }
  CHECK_THAT(lg.dh0, test::close_to(dh, 1e-5));
  CHECK_THAT(dW_ih, test::close_to(cW_ih, 1e-5));
  CHECK_THAT(dW_hh, test::close_to(cW_hh, 1e-5));
  CHECK_THAT(db_ih, test::close_to(cb_ih, 1e-5));
  CHECK_THAT(db_hh, test::close_to(cb_hh, 1e-5));
}

TEST_CASE("gru_layer_backward matches finite differences", "[gradcheck][gru]") {
  Rng rng(10);
  const int64_t T = 3, B = 2, I = 3, H = 3;
  Tensor x = randn({T, B, I}, rng), h0 = randn({B, H}, rng);
  Tensor W_ih = randn({3 * H, I}, rng, 0.5f), W_hh = randn({3 * H, H}, rng, 0.5f);
  Tensor b_ih = randn({3 * H}, rng, 0.5f), b_hh = randn({3 * H}, rng, 0.5f);
  const Tensor ry = randn({T, B, H}, rng), rh = randn({B, H}, rng);
  auto loss = [&] {
    const ops::GruLayerOutput o = ops::gru_layer_forward(x, h0, W_ih, W_hh, b_ih, b_hh, nullptr);
    return test::dot(ry, o.y) + test::dot(rh, o.h);
  };
  ops::GruLayerCache cache;
  ops::gru_layer_forward(x, h0, W_ih, W_hh, b_ih, b_hh, &cache);
  Tensor dW_ih = zeros_like(W_ih), dW_hh = zeros_like(W_hh);
  Tensor db_ih = zeros_like(b_ih), db_hh = zeros_like(b_hh);
  const ops::GruLayerGrads g =
      ops::gru_layer_backward(ry, rh, W_ih, W_hh, cache, dW_ih, dW_hh, db_ih, db_hh);
  CHECK_THAT(g.dx, test::close_to(test::numeric_grad(loss, x)));
  CHECK_THAT(g.dh0, test::close_to(test::numeric_grad(loss, h0)));
  CHECK_THAT(dW_ih, test::close_to(test::numeric_grad(loss, W_ih)));
  CHECK_THAT(dW_hh, test::close_to(test::numeric_grad(loss, W_hh)));
  CHECK_THAT(db_ih, test::close_to(test::numeric_grad(loss, b_ih)));
  CHECK_THAT(db_hh, test::close_to(test::numeric_grad(loss, b_hh)));
}

TEST_CASE("gru: bad shapes name the tensor and both shapes", "[unit][gru]") {
  const Tensor h({2, 2}), W({6, 2}), b({6});
  REQUIRE_THROWS_AS(ops::gru_cell_forward(Tensor({2, 8}), h, W, b, nullptr), ShapeError);
  REQUIRE_THROWS_WITH(ops::gru_cell_forward(Tensor({2, 8}), h, W, b, nullptr),
                      Catch::Contains("gru_cell: gates_x [B, 3H] has shape [2, 8], expected [2, 6]"));
  REQUIRE_THROWS_WITH(ops::gru_cell_forward(Tensor({2, 6}), h, W, Tensor({4}), nullptr),
                      Catch::Contains("gru_cell: b_hh [3H] has shape [4], expected [6]"));
  REQUIRE_THROWS_WITH(ops::gru_layer_forward(Tensor({3, 4, 5}), h, Tensor({6, 5}), W, b, b, nullptr),
                      Catch::Contains("gru_layer: h0 [B, H] has shape [2, 2], expected [4, *]"));
}

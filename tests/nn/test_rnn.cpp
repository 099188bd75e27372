// nn::Rnn (a GRU or an LSTM chosen at run time): cell names, parameters, the input projection
// on column blocks and a step against the naive loops, finite-difference gradients of a step,
// of the projection and of a whole layer (T = 1, B = 1 included), the layer against projecting
// once and stepping, the same layer on one thread and on two.
#include "attn/nn/rnn.hpp"

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;
using nn::RnnCell;

namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

const char* name_of(RnnCell cell) { return cell == RnnCell::gru ? "gru" : "lstm"; }

// gx = x W_ih^T + b_ih over rows of x [N, I], in double.
Tensor naive_project(const nn::Rnn& rnn, const Tensor& x) {
  const int64_t N = x.dim(0), I = rnn.input(), G = rnn.gates();
  Tensor gx({N, G});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      double sum = rnn.b_ih.value.at(g);
      for (int64_t i = 0; i < I; ++i) sum += static_cast<double>(x.at(n * I + i)) * rnn.W_ih.value.at(g * I + i);
      gx.at(n * G + g) = static_cast<float>(sum);
    }
  return gx;
}

// One step in double, PyTorch's equations (ops/gru_cell.hpp, ops/lstm_cell.hpp).
nn::RnnState naive_step(const nn::Rnn& rnn, const Tensor& gx, const nn::RnnState& s) {
  const int64_t B = s.h.dim(0), H = rnn.hidden(), G = rnn.gates();
  nn::RnnState out{Tensor({B, H}), rnn.cell() == RnnCell::lstm ? Tensor({B, H}) : Tensor()};
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> hh(static_cast<size_t>(G));   // h W_hh^T (+ b_hh for a GRU)
    for (int64_t g = 0; g < G; ++g) {
      double sum = rnn.cell() == RnnCell::gru ? rnn.b_hh.value.at(g) : 0.0;
      for (int64_t k = 0; k < H; ++k) sum += static_cast<double>(s.h.at(b * H + k)) * rnn.W_hh.value.at(g * H + k);
      hh[static_cast<size_t>(g)] = sum;
    }
    auto x = [&](int64_t g) { return static_cast<double>(gx.at(b * G + g)); };
    for (int64_t j = 0; j < H; ++j) {
      const auto u = static_cast<size_t>(j);
      if (rnn.cell() == RnnCell::gru) {
        const double r = sigmoid(x(j) + hh[u]), z = sigmoid(x(H + j) + hh[u + H]);
        const double n = std::tanh(x(2 * H + j) + r * hh[u + 2 * H]);
        out.h.at(b * H + j) = static_cast<float>((1 - z) * n + z * s.h.at(b * H + j));
      } else {
        const double i = sigmoid(x(j) + hh[u]), f = sigmoid(x(H + j) + hh[u + H]);
        const double g = std::tanh(x(2 * H + j) + hh[u + 2 * H]), o = sigmoid(x(3 * H + j) + hh[u + 3 * H]);
        const double c = f * s.c.at(b * H + j) + i * g;
        out.c.at(b * H + j) = static_cast<float>(c);
        out.h.at(b * H + j) = static_cast<float>(o * std::tanh(c));
      }
    }
  }
  return out;
}

nn::RnnState random_state(const nn::Rnn& rnn, int64_t B, Rng& rng) {
  return {randn({B, rnn.hidden()}, rng), rnn.cell() == RnnCell::lstm ? randn({B, rnn.hidden()}, rng) : Tensor()};
}

}  // namespace

TEST_CASE("nn::Rnn: cell names, parameters and their shapes", "[unit][rnn]") {
  CHECK(nn::parse_rnn_cell("gru") == RnnCell::gru);
  CHECK(nn::parse_rnn_cell("lstm") == RnnCell::lstm);
  CHECK(std::string(nn::rnn_cell_name(RnnCell::lstm)) == "lstm");
  REQUIRE_THROWS_AS(nn::parse_rnn_cell("rnn"), ConfigError);
  REQUIRE_THROWS_WITH(nn::parse_rnn_cell("rnn"), Catch::Contains("gru") && Catch::Contains("lstm"));

  Rng rng(1);
  nn::Rnn gru(RnnCell::gru, 5, 4, "dec", rng);
  const ParamList gp = gru.params();
  REQUIRE(gp.size() == 4);
  CHECK(gp[0]->name == "dec/W_ih");
  CHECK(gp[0]->value.shape() == Shape{12, 5});
  CHECK(gp[1]->name == "dec/W_hh");
  CHECK(gp[1]->value.shape() == Shape{12, 4});
  CHECK(gp[2]->name == "dec/b_ih");
  CHECK(gp[3]->name == "dec/b_hh");
  CHECK(gp[3]->value.shape() == Shape{12});
  CHECK((gru.hidden() == 4 && gru.input() == 5 && gru.gates() == 12));
  for (const Param* p : gp)
    for (float v : p->value.values()) CHECK(std::fabs(v) <= 0.5f);   // U(-1/sqrt(H), 1/sqrt(H))
  CHECK_FALSE(gru.zero_state(3).c.defined());
  CHECK_THAT(gru.zero_state(3).h, test::close_to(Tensor({3, 4}), 0));

  nn::Rnn lstm(RnnCell::lstm, 5, 4, "enc", rng);
  const ParamList lp = lstm.params();
  REQUIRE(lp.size() == 3);
  CHECK(lp[2]->name == "enc/b");   // one bias (PyTorch's b_ih + b_hh)
  CHECK(lp[1]->value.shape() == Shape{16, 4});
  CHECK(lstm.zero_state(2).c.shape() == Shape{2, 4});
}

TEST_CASE("nn::Rnn: projection and step match the naive loops at B > 1 and B = 1", "[unit][rnn]") {
  for (RnnCell cell : {RnnCell::gru, RnnCell::lstm})
    for (int64_t B : {4, 1}) {
      INFO(name_of(cell) << ", B " << B);
      Rng rng(2);
      const int64_t I = 7, H = 6, E = 3;   // the input [e; c]: e the first E columns
      const nn::Rnn rnn(cell, I, H, "rnn", rng);
      const Tensor x = randn({B, I}, rng);
      // e's part with the bias (beta 0), then c's part added (beta 1) from a wider buffer.
      Tensor wide = randn({B, I + 2}, rng);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < I - E; ++i) wide.at(b * (I + 2) + 1 + i) = x.at(b * I + E + i);
      Tensor gx = Tensor::full({B, rnn.gates()}, 9.0f);
      rnn.project(x.data(), I, B, /*col=*/0, /*width=*/E, /*with_bias=*/true, /*beta=*/0.0f, gx.data());
      rnn.project(wide.data() + 1, I + 2, B, /*col=*/E, /*width=*/I - E, /*with_bias=*/false, /*beta=*/1.0f, gx.data());
      CHECK_THAT(gx, test::close_to(naive_project(rnn, x), 1e-5));
      // A zero-width part with beta 0 leaves the bias alone.
      Tensor bias_only = Tensor::full({B, rnn.gates()}, 9.0f);
      rnn.project(nullptr, 0, B, 0, 0, /*with_bias=*/true, 0.0f, bias_only.data());
      for (int64_t b = 0; b < B; ++b) CHECK_THAT(bias_only[b], test::close_to(rnn.b_ih.value, 0));

      const nn::RnnState s = random_state(rnn, B, rng);
      nn::RnnStepCache cache;
      const nn::RnnState next = rnn.step(gx, s, &cache);
      const nn::RnnState want = naive_step(rnn, gx, s);
      CHECK_THAT(next.h, test::close_to(want.h, 1e-5));
      if (cell == RnnCell::lstm) CHECK_THAT(next.c, test::close_to(want.c, 1e-5));
      CHECK_THAT(rnn.step(gx, s, nullptr).h, test::close_to(next.h, 0));   // inference: the same step
    }
}

TEST_CASE("nn::Rnn: step_backward matches finite differences", "[gradcheck][rnn]") {
  for (RnnCell cell : {RnnCell::gru, RnnCell::lstm}) {
    INFO(name_of(cell));
    Rng rng(3);
    const int64_t B = 3, H = 4;
    nn::Rnn rnn(cell, 5, H, "rnn", rng);
    Tensor gx = randn({B, rnn.gates()}, rng);
    nn::RnnState s = random_state(rnn, B, rng);
    const Tensor rh = randn({B, H}, rng), rc = randn({B, H}, rng);
    const bool lstm = cell == RnnCell::lstm;
    auto loss = [&] {
      const nn::RnnState n = rnn.step(gx, s, nullptr);
      return test::dot(rh, n.h) + (lstm ? test::dot(rc, n.c) : 0.0);
    };
    nn::RnnStepCache cache;
    rnn.step(gx, s, &cache);
    zero_grads(rnn.params());
    nn::RnnState dprev;
    const Tensor dgx = rnn.step_backward({rh, lstm ? rc : Tensor()}, cache, dprev);
    CHECK_THAT(dgx, test::close_to(test::numeric_grad(loss, gx), 1e-2));
    CHECK_THAT(dprev.h, test::close_to(test::numeric_grad(loss, s.h), 1e-2));
    if (lstm) CHECK_THAT(dprev.c, test::close_to(test::numeric_grad(loss, s.c), 1e-2));
    CHECK_THAT(rnn.W_hh.grad, test::close_to(test::numeric_grad(loss, rnn.W_hh.value), 1e-2));
    if (!lstm) CHECK_THAT(rnn.b_hh.grad, test::close_to(test::numeric_grad(loss, rnn.b_hh.value), 1e-2));
    // The input projection's parameters are the caller's: step_backward leaves them alone.
    CHECK_THAT(rnn.W_ih.grad, test::close_to(zeros_like(rnn.W_ih.value), 0));
    if (lstm) {   // an undefined dnext.c stands for zeros
      nn::RnnState dzero;
      const Tensor dgx0 = rnn.step_backward({rh, Tensor()}, cache, dzero);
      nn::RnnState dexplicit;
      const Tensor dgx1 = rnn.step_backward({rh, Tensor({B, H})}, cache, dexplicit);
      CHECK_THAT(dgx0, test::close_to(dgx1, 0));
      CHECK_THAT(dzero.c, test::close_to(dexplicit.c, 0));
    }
  }
}

TEST_CASE("nn::Rnn: project_backward matches finite differences on a column block", "[gradcheck][rnn]") {
  Rng rng(4);
  const int64_t N = 5, I = 6, col = 2, width = 3, ldx = 4;
  nn::Rnn rnn(RnnCell::gru, I, 3, "rnn", rng);
  Tensor x = randn({N, ldx}, rng);   // the block is columns 1 .. 3 of each row of 4
  const Tensor r = randn({N, rnn.gates()}, rng);
  auto project = [&] {
    Tensor gx({N, rnn.gates()});
    rnn.project(x.data() + 1, ldx, N, col, width, /*with_bias=*/true, 0.0f, gx.data());
    return gx;
  };
  auto loss = [&] { return test::dot(r, project()); };
  zero_grads(rnn.params());
  Tensor dx = Tensor::full({N, ldx}, 0.5f);
  rnn.project_backward(r.data(), N, x.data() + 1, ldx, col, width, /*with_bias=*/true, dx.data() + 1, ldx);
  Tensor want_dx = test::numeric_grad(loss, x);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < ldx; ++i) want_dx.at(n * ldx + i) += 0.5f;   // added to what was there
  CHECK_THAT(dx, test::close_to(want_dx, 1e-2));
  const Tensor dW = test::numeric_grad(loss, rnn.W_ih.value);   // zero outside columns 2 .. 4
  CHECK_THAT(rnn.W_ih.grad, test::close_to(dW, 1e-2));
  CHECK_THAT(rnn.b_ih.grad, test::close_to(test::numeric_grad(loss, rnn.b_ih.value), 1e-2));
}

TEST_CASE("nn::Rnn: a layer equals projecting once and stepping from a zero state", "[unit][rnn]") {
  for (RnnCell cell : {RnnCell::gru, RnnCell::lstm}) {
    INFO(name_of(cell));
    Rng rng(5);
    const int64_t T = 4, B = 3, I = 5, H = 6;
    const nn::Rnn rnn(cell, I, H, "rnn", rng);
    const Tensor x = randn({T, B, I}, rng);
    const Tensor y = rnn.layer(x, nullptr);
    REQUIRE(y.shape() == Shape{T, B, H});
    Tensor gx({T * B, rnn.gates()});
    rnn.project(x.data(), I, T * B, 0, I, /*with_bias=*/true, 0.0f, gx.data());
    nn::RnnState s = rnn.zero_state(B);
    for (int64_t t = 0; t < T; ++t) {
      s = rnn.step(gx.reshape({T, B, rnn.gates()})[t], s, nullptr);
      CHECK_THAT(y[t], test::close_to(s.h, 1e-6));
    }
  }
}

TEST_CASE("nn::Rnn: layer_backward matches finite differences, T = 1 and B = 1 included", "[gradcheck][rnn]") {
  for (RnnCell cell : {RnnCell::gru, RnnCell::lstm})
    for (const auto& [T_, B_] : {std::tuple<int64_t, int64_t>{3, 2}, {1, 1}}) {
      const int64_t T = T_, B = B_;
      INFO(name_of(cell) << ", T " << T << ", B " << B);
      Rng rng(6);
      nn::Rnn rnn(cell, 4, 3, "rnn", rng);
      Tensor x = randn({T, B, 4}, rng);
      const Tensor r = randn({T, B, 3}, rng);
      auto loss = [&] { return test::dot(r, rnn.layer(x, nullptr)); };
      nn::RnnLayerCache cache;
      rnn.layer(x, &cache);
      zero_grads(rnn.params());
      const Tensor dx = rnn.layer_backward(r, cache);
      CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
      for (Param* p : rnn.params()) {
        INFO(p->name);
        CHECK_THAT(p->grad, test::close_to(test::numeric_grad(loss, p->value), 1e-2));
      }
    }
}

TEST_CASE("nn::Rnn: the same layer, forward and backward, on one thread and on two", "[unit][rnn]") {
  // B 32 x H 128 (the captioner's decoder): the products and the cells' passes split into parts.
  // Parts fix the bits (a split GEMM may round differently from a whole one): one part against
  // two within float rounding, two parts on one running thread and on two bit for bit.
  for (RnnCell cell : {RnnCell::gru, RnnCell::lstm}) {
    INFO(name_of(cell));
    Rng rng(7);
    const int64_t T = 3, B = 32, I = 64, H = 128;
    nn::Rnn rnn(cell, I, H, "rnn", rng);
    const Tensor x = randn({T, B, I}, rng), dy = randn({T, B, H}, rng);
    auto run = [&](int parts, int running) {
      set_num_threads(parts);
      set_running_threads(running);
      nn::RnnLayerCache cache;
      std::vector<Tensor> out{rnn.layer(x, &cache)};
      zero_grads(rnn.params());
      out.push_back(rnn.layer_backward(dy, cache));
      for (Param* p : rnn.params()) out.push_back(p->grad.clone());
      set_num_threads(1);
      return out;
    };
    const std::vector<Tensor> one = run(1, 1), two = run(2, 2), held = run(2, 1);
    for (size_t i = 0; i < one.size(); ++i) {
      CHECK_THAT(two[i], test::close_to(one[i], 1e-4));
      CHECK_THAT(held[i], test::close_to(two[i], 0));
    }
  }
}

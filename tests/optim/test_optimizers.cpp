// Optimizers: the first two steps of each against the update rule worked by hand, convergence
// on a small quadratic, configuration errors, and checkpoint state that resumes bit for bit.
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>

#include "attn/core/threading.hpp"
#include "attn/optim/adam.hpp"
#include "attn/optim/rmsprop.hpp"
#include "attn/optim/sgd.hpp"
#include "test_support.hpp"

using namespace attn;
using optim::Optimizer;

namespace {

// Sets p's gradient to `g` and takes step t.
void step_with(Optimizer& opt, Param& p, std::vector<float> g, int64_t t) {
  p.grad = Tensor::from(p.value.shape(), std::move(g));
  opt.step({&p}, t);
}

Tensor vec(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from({n}, std::move(v));
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("sgd: two steps of heavy-ball and Nesterov momentum by hand", "[unit][optim]") {
  // lr 0.1, mu 0.9, w0 = [1, -2], g1 = [0.5, -1], g2 = [0.25, 2].
  const optim::SgdConfig heavy{/*lr=*/0.1f, /*momentum=*/0.9f, /*nesterov=*/false, /*weight_decay=*/0.0f};
  {
    optim::Sgd opt(heavy);
    Param p("w", vec({1.0f, -2.0f}));
    // b1 = g1 = [0.5, -1];  w1 = w0 - 0.1 b1 = [0.95, -1.9]
    step_with(opt, p, {0.5f, -1.0f}, 1);
    CHECK_THAT(p.value, test::close_to(vec({0.95f, -1.9f}), 1e-6));
    // b2 = 0.9 b1 + g2 = [0.7, 1.1];  w2 = w1 - 0.1 b2 = [0.88, -2.01]
    step_with(opt, p, {0.25f, 2.0f}, 2);
    CHECK_THAT(p.value, test::close_to(vec({0.88f, -2.01f}), 1e-6));
  }
  {
    optim::SgdConfig nesterov = heavy;
    nesterov.nesterov = true;
    optim::Sgd opt(nesterov);
    Param p("w", vec({1.0f, -2.0f}));
    // b1 = g1;  w1 = w0 - 0.1 (g1 + 0.9 b1) = w0 - 0.19 g1 = [0.905, -1.81]
    step_with(opt, p, {0.5f, -1.0f}, 1);
    CHECK_THAT(p.value, test::close_to(vec({0.905f, -1.81f}), 1e-6));
    // b2 = [0.7, 1.1];  w2 = w1 - 0.1 (g2 + 0.9 b2) = w1 - 0.1 [0.88, 2.99] = [0.817, -2.109]
    step_with(opt, p, {0.25f, 2.0f}, 2);
    CHECK_THAT(p.value, test::close_to(vec({0.817f, -2.109f}), 1e-6));
  }
  {
    optim::Sgd opt({/*lr=*/0.1f, /*momentum=*/0.0f, /*nesterov=*/false, /*weight_decay=*/0.1f});
    Param p("w", vec({2.0f}));
    // No momentum, L2 0.1: w1 = 2 - 0.1 (0.5 + 0.1 * 2) = 1.93;  w2 = 1.93 - 0.1 (0 + 0.193) = 1.9107
    step_with(opt, p, {0.5f}, 1);
    CHECK_THAT(p.value, test::close_to(vec({1.93f}), 1e-6));
    step_with(opt, p, {0.0f}, 2);
    CHECK_THAT(p.value, test::close_to(vec({1.9107f}), 1e-6));
    CHECK(opt.state().empty());   // plain SGD keeps no state
  }
}

TEST_CASE("rmsprop: two steps, plain and centred with momentum (Graves 2013 eq. 38-41), by hand",
          "[unit][optim]") {
  {
    // Plain: rho 0.9, lr 0.01, eps 1e-8, w0 = 1, g1 = 2, g2 = -1.
    optim::RmsPropConfig c;
    c.lr = 0.01f, c.rho = 0.9f, c.eps = 1e-8f;
    optim::RmsProp opt(c);
    Param p("w", vec({1.0f}));
    // n1 = 0.1 * 2^2 = 0.4;               w1 = 1 - 0.01 * 2 / sqrt(0.4 + 1e-8)   = 0.96837722
    step_with(opt, p, {2.0f}, 1);
    const double w1 = 1.0 - 0.01 * 2.0 / std::sqrt(0.4 + 1e-8);
    CHECK_THAT(p.value, test::close_to(vec({float(w1)}), 1e-6));
    // n2 = 0.9 * 0.4 + 0.1 * 1 = 0.46;    w2 = w1 + 0.01 * 1 / sqrt(0.46 + 1e-8) = 0.98312142
    step_with(opt, p, {-1.0f}, 2);
    CHECK_THAT(p.value, test::close_to(vec({float(w1 + 0.01 / std::sqrt(0.46 + 1e-8))}), 1e-6));
    CHECK(opt.state().size() == 1);
    CHECK(opt.state()[0].name == "rmsprop/sq/w");
  }
  {
    // Centred with momentum: rho 0.95, mu 0.9, lr 0.01, eps 1e-4, w0 = 0.5, g1 = 1, g2 = -0.5.
    optim::RmsPropConfig c = optim::RmsPropConfig::graves2013();
    c.lr = 0.01f;
    optim::RmsProp opt(c);
    Param p("w", vec({0.5f}));
    // n1 = 0.05 * 1 = 0.05;  c1 = 0.05 * 1 = 0.05
    // d1 = 0.01 * 1 / sqrt(0.05 - 0.05^2 + 1e-4) = 0.01 / sqrt(0.0476) = 0.04583492;  w1 = 0.5 - d1
    step_with(opt, p, {1.0f}, 1);
    const double d1 = 0.01 / std::sqrt(0.0476), w1 = 0.5 - d1;
    CHECK_THAT(p.value, test::close_to(vec({float(w1)}), 1e-6));
    // n2 = 0.95 * 0.05 + 0.05 * 0.25 = 0.06;  c2 = 0.95 * 0.05 + 0.05 * (-0.5) = 0.0225
    // d2 = 0.9 d1 + 0.01 * (-0.5) / sqrt(0.06 - 0.0225^2 + 1e-4) = 0.02076956;  w2 = w1 - d2 = 0.43339551
    step_with(opt, p, {-0.5f}, 2);
    const double d2 = 0.9 * d1 - 0.005 / std::sqrt(0.06 - 0.0225 * 0.0225 + 1e-4);
    CHECK_THAT(p.value, test::close_to(vec({float(w1 - d2)}), 1e-6));
    const auto state = opt.state();
    REQUIRE(state.size() == 3);
    CHECK(state[0].name == "rmsprop/sq/w");
    CHECK(state[1].name == "rmsprop/mean/w");
    CHECK(state[2].name == "rmsprop/momentum/w");
    CHECK_THAT(state[1].value, test::close_to(vec({0.0225f}), 1e-6));
  }
}

TEST_CASE("adam and adamw: two steps with bias correction, by hand", "[unit][optim]") {
  // lr 0.1, beta1 0.9, beta2 0.999, eps 1e-8; w0 = [1, -1], g1 = [0.5, -2], g2 = [-0.5, 1].
  const optim::AdamConfig config{/*lr=*/0.1f, /*beta1=*/0.9f, /*beta2=*/0.999f, /*eps=*/1e-8f,
                                 /*weight_decay=*/0.0f};
  optim::Adam adam(config);
  Param p("w", vec({1.0f, -1.0f}));
  // Step 1: m = 0.1 g1, v = 0.001 g1^2, so m / (1 - 0.9) = g1 and v / (1 - 0.999) = g1^2:
  //   w1 = w0 - 0.1 * g1 / (|g1| + 1e-8) = [0.9, -0.9] (to 1e-8)
  step_with(adam, p, {0.5f, -2.0f}, 1);
  CHECK_THAT(p.value, test::close_to(vec({0.9f, -0.9f}), 1e-6));
  // Step 2: bc1 = 1 - 0.9^2 = 0.19, bc2 = 1 - 0.999^2 = 0.001999.
  //   m2 = 0.9 * 0.1 g1 + 0.1 g2 = [-0.005, -0.08]
  //   v2 = 0.999 * 0.001 g1^2 + 0.001 g2^2 = [0.00049975, 0.004996]
  //   w2 = w1 - 0.1 (m2 / 0.19) / (sqrt(v2 / 0.001999) + 1e-8)
  //      = [0.9 + 0.1 * 0.02631579 / 0.5, -0.9 + 0.1 * 0.42105263 / 1.58090152] = [0.90526316, -0.87336630]
  step_with(adam, p, {-0.5f, 1.0f}, 2);
  CHECK_THAT(p.value, test::close_to(vec({0.90526316f, -0.87336630f}), 1e-6));
  const auto state = adam.state();
  REQUIRE(state.size() == 2);
  CHECK(state[0].name == "adam/m/w");
  CHECK(state[1].name == "adam/v/w");
  CHECK_THAT(state[0].value, test::close_to(vec({-0.005f, -0.08f}), 1e-6));
  CHECK_THAT(state[1].value, test::close_to(vec({0.00049975f, 0.004996f}), 1e-6));

  // AdamW, weight decay 0.1: the moments see the raw gradient, and w shrinks by 1 - 0.1 * 0.1 first:
  //   w1 = 0.99 w0 - 0.1 sign(g1) = [0.89, -0.89];  w2 = 0.99 w1 + (w2 - w1 of Adam above)
  //      = [0.8811 + 0.00526316, -0.8811 + 0.02663370] = [0.88636316, -0.85446630]
  optim::AdamConfig decay = config;
  decay.weight_decay = 0.1f;
  optim::AdamW adamw(decay);
  Param q("w", vec({1.0f, -1.0f}));
  step_with(adamw, q, {0.5f, -2.0f}, 1);
  CHECK_THAT(q.value, test::close_to(vec({0.89f, -0.89f}), 1e-6));
  step_with(adamw, q, {-0.5f, 1.0f}, 2);
  CHECK_THAT(q.value, test::close_to(vec({0.88636316f, -0.85446630f}), 1e-6));
  CHECK(adamw.state()[0].name == "adamw/m/w");

  // Adam's weight decay is L2 in the gradient instead. With lr 0.1, weight decay 0.5, w0 = 2 and
  // a zero loss gradient: g1 = 0.5 * 2 = 1, w1 = 2 - 0.1 * 1 / 1 = 1.9; g2 = 0.5 * 1.9 = 0.95,
  //   m2 = 0.09 + 0.095 = 0.185, v2 = 0.000999 + 0.0009025 = 0.0019015,
  //   w2 = 1.9 - 0.1 (0.185 / 0.19) / sqrt(0.0019015 / 0.001999) = 1.80016649.
  // (AdamW would give 0.95 * 1.9 = 1.805 at step 2.)
  decay.weight_decay = 0.5f;
  optim::Adam l2(decay);
  Param r("w", vec({2.0f}));
  step_with(l2, r, {0.0f}, 1);
  CHECK_THAT(r.value, test::close_to(vec({1.9f}), 1e-6));
  step_with(l2, r, {0.0f}, 2);
  CHECK_THAT(r.value, test::close_to(vec({1.80016649f}), 1e-6));
}

TEST_CASE("optimizers: every one converges on a small quadratic", "[unit][optim]") {
  // f(w) = 1/2 sum_i a_i (w_i - c_i)^2, grad = a (w - c), minimum at c; condition number 20.
  const std::vector<float> a{0.5f, 1.0f, 10.0f}, c{3.0f, -2.0f, 0.5f};
  std::vector<std::pair<const char*, std::function<std::unique_ptr<Optimizer>()>>> makers{
      {"sgd", [] { return std::make_unique<optim::Sgd>(optim::SgdConfig{0.05f, 0.9f, false, 0.0f}); }},
      {"nesterov", [] { return std::make_unique<optim::Sgd>(optim::SgdConfig{0.05f, 0.9f, true, 0.0f}); }},
      {"rmsprop", [] {
         optim::RmsPropConfig r;
         r.lr = 0.01f;
         return std::make_unique<optim::RmsProp>(r);
       }},
      {"rmsprop-graves", [] {
         optim::RmsPropConfig r = optim::RmsPropConfig::graves2013();
         r.lr = 0.002f;
         return std::make_unique<optim::RmsProp>(r);
       }},
      {"adam", [] { return std::make_unique<optim::Adam>(optim::AdamConfig{0.05f, 0.9f, 0.999f, 1e-8f, 0.0f}); }},
      {"adamw", [] { return std::make_unique<optim::AdamW>(optim::AdamConfig{0.05f, 0.9f, 0.999f, 1e-8f, 1e-4f}); }},
  };
  for (auto& [name, make] : makers) {
    SECTION(name) {
      auto opt = make();
      Param p("w", Tensor({3}));
      for (int64_t t = 1; t <= 1000; ++t) {
        for (int i = 0; i < 3; ++i) p.grad.at(i) = a[i] * (p.value.at(i) - c[i]);
        opt->step({&p}, t);
      }
      INFO(name);
      CHECK_THAT(p.value, test::close_to(vec(c), 1e-2));
    }
  }
}

TEST_CASE("optimizers: state round-trip resumes the same next step bit for bit", "[unit][optim]") {
  std::vector<std::pair<const char*, std::function<std::unique_ptr<Optimizer>()>>> makers{
      {"sgd", [] { return std::make_unique<optim::Sgd>(optim::SgdConfig{0.05f, 0.9f, true, 1e-3f}); }},
      {"rmsprop", [] { return std::make_unique<optim::RmsProp>(optim::RmsPropConfig::graves2013()); }},
      {"adam", [] { return std::make_unique<optim::Adam>(optim::AdamConfig{}); }},
      {"adamw", [] { return std::make_unique<optim::AdamW>(optim::AdamConfig{1e-2f, 0.9f, 0.99f, 1e-8f, 0.1f}); }},
  };
  for (auto& [kind, make] : makers) {
    SECTION(kind) {
      Rng rng(11);
      Param w("enc/w", randn({4, 3}, rng)), b("enc/b", randn({3}, rng));
      const ParamList params{&w, &b};
      auto run = make();
      auto grads = [&](int64_t t) {   // a gradient that is a function of t only
        Rng g(100 + static_cast<uint64_t>(t));
        w.grad = randn({4, 3}, g);
        b.grad = randn({3}, g);
      };
      for (int64_t t = 1; t <= 3; ++t) {
        grads(t);
        run->step(params, t);
      }
      // Checkpoint: the values and the optimizer state after step 3.
      const Tensor w3 = w.value.clone(), b3 = b.value.clone();
      const auto saved = run->state();
      REQUIRE(saved.size() == 2 * run->slot_names().size());
      CHECK(saved[0].name == std::string(kind) + "/" + run->slot_names()[0] + "/enc/w");

      grads(4);
      run->step(params, 4);   // the uninterrupted run
      const Tensor w4 = w.value.clone(), b4 = b.value.clone();
      CHECK(!same_bits(saved[0].value, run->state()[0].value));   // state() copied, not shared

      auto resumed = make();
      resumed->load_state(params, saved);
      w.value.copy_from(w3);
      b.value.copy_from(b3);
      grads(4);
      resumed->step(params, 4);
      CHECK(same_bits(w.value, w4));
      CHECK(same_bits(b.value, b4));
    }
  }
}

TEST_CASE("optimizers: load_state names the missing, foreign or misshapen entry", "[unit][optim]") {
  Param w("enc/w", Tensor({2, 3})), b("enc/b", Tensor({3}));
  const ParamList params{&w, &b};
  optim::Adam adam(optim::AdamConfig{});
  adam.step(params, 1);
  auto state = adam.state();

  auto missing = state;
  missing.pop_back();
  REQUIRE_THROWS_AS(optim::Adam(optim::AdamConfig{}).load_state(params, missing), FormatError);
  REQUIRE_THROWS_WITH(adam.load_state(params, missing),
                      Catch::Contains("no 'adam/v/enc/b' for parameter 'enc/b'"));

  auto misshapen = state;
  misshapen[0].value = Tensor({3, 2});
  REQUIRE_THROWS_AS(adam.load_state(params, misshapen), ShapeError);
  REQUIRE_THROWS_WITH(adam.load_state(params, misshapen),
                      Catch::Contains("optimizer state 'adam/m/enc/w' (parameter 'enc/w') has shape [3, 2], "
                                      "expected [2, 3]"));

  auto extra = state;
  extra.push_back({"adam/m/dec/w", Tensor({3})});
  REQUIRE_THROWS_WITH(adam.load_state(params, extra),
                      Catch::Contains("'adam/m/dec/w' names no parameter in the list"));

  optim::Sgd sgd(optim::SgdConfig{0.1f, 0.9f, false, 0.0f});
  REQUIRE_THROWS_AS(sgd.load_state(params, state), FormatError);
  REQUIRE_THROWS_WITH(sgd.load_state(params, state),
                      Catch::Contains("optimizer state 'adam/m/enc/w' does not belong to sgd"));
  REQUIRE_THROWS_WITH(optim::AdamW(optim::AdamConfig{}).load_state(params, state),
                      Catch::Contains("does not belong to adamw"));

  // A failed load leaves the state as it was; an empty one resets to fresh.
  CHECK(same_bits(adam.state()[1].value, state[1].value));
  adam.load_state(params, {});
  CHECK(adam.state().empty());
}

TEST_CASE("optimizers: bad configuration and bad calls throw naming the setting", "[unit][optim]") {
  REQUIRE_THROWS_AS(optim::Sgd(optim::SgdConfig{-0.1f, 0.0f, false, 0.0f}), ConfigError);
  REQUIRE_THROWS_WITH(optim::Sgd(optim::SgdConfig{-0.1f, 0.0f, false, 0.0f}),
                      Catch::Equals("sgd: lr must be finite and >= 0, got -0.1"));
  REQUIRE_THROWS_WITH(optim::Sgd(optim::SgdConfig{0.1f, 1.0f, false, 0.0f}),
                      Catch::Equals("sgd: momentum must be in [0, 1), got 1"));
  REQUIRE_THROWS_WITH(optim::Sgd(optim::SgdConfig{0.1f, 0.0f, true, 0.0f}),
                      Catch::Contains("nesterov needs momentum > 0"));

  optim::AdamConfig adam;
  adam.beta1 = 1.0f;
  REQUIRE_THROWS_AS(optim::Adam{adam}, ConfigError);
  REQUIRE_THROWS_WITH(optim::Adam{adam}, Catch::Equals("adam: beta1 must be in [0, 1), got 1"));
  adam.beta1 = 0.9f, adam.beta2 = -0.5f;
  REQUIRE_THROWS_WITH(optim::AdamW{adam}, Catch::Equals("adamw: beta2 must be in [0, 1), got -0.5"));
  adam.beta2 = 0.999f, adam.eps = 0.0f;
  REQUIRE_THROWS_WITH(optim::Adam{adam}, Catch::Equals("adam: eps must be finite and > 0, got 0"));
  adam.eps = 1e-8f, adam.weight_decay = -1.0f;
  REQUIRE_THROWS_WITH(optim::AdamW{adam}, Catch::Contains("adamw: weight_decay must be finite and >= 0"));

  optim::RmsPropConfig rms;
  rms.rho = 1.5f;
  REQUIRE_THROWS_WITH(optim::RmsProp{rms}, Catch::Equals("rmsprop: rho must be in [0, 1), got 1.5"));
  rms.rho = 0.9f, rms.momentum = std::nanf("");
  REQUIRE_THROWS_WITH(optim::RmsProp{rms}, Catch::Contains("rmsprop: momentum must be in [0, 1), got nan"));

  optim::Adam opt(optim::AdamConfig{});
  REQUIRE_THROWS_WITH(opt.set_lr(std::nanf("")), Catch::Contains("adam: lr must be finite and >= 0"));
  opt.set_lr(0.5f);
  CHECK(opt.lr() == 0.5f);

  Param w("w", Tensor({2, 3}));
  REQUIRE_THROWS_WITH(opt.step({&w}, 0), Catch::Equals("adam: step number t must be >= 1, got 0"));
  w.grad = Tensor({3, 2});
  REQUIRE_THROWS_AS(opt.step({&w}, 1), ShapeError);
  REQUIRE_THROWS_WITH(opt.step({&w}, 1),
                      Catch::Contains("adam: gradient of parameter 'w' has shape [3, 2], expected [2, 3]"));
  w.grad = Tensor({2, 3});
  Param twin("w", Tensor({2, 3}));
  twin.grad.fill(1.0f);
  REQUIRE_THROWS_WITH(opt.step({&w, &twin}, 1), Catch::Contains("parameter name 'w' appears twice"));
  CHECK(twin.value.at(0) == 0.0f);   // nothing moved
  Param reshaped("w", Tensor({3}));   // same name as before, another shape: a different model
  REQUIRE_THROWS_WITH(opt.step({&reshaped}, 1),
                      Catch::Contains("adam: parameter 'w' has shape [3], but its optimizer state has shape [2, 3]"));
}

TEST_CASE("optimizers: the threaded update of a large tensor matches the serial one bit for bit",
          "[unit][optim]") {
  Rng rng(5);
  const Tensor w0 = randn({1 << 17}, rng), g = randn({1 << 17}, rng);
  Tensor result[2];
  const int before = num_threads();
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    optim::RmsProp opt(optim::RmsPropConfig::graves2013());
    Param p("w", w0.clone());
    for (int64_t t = 1; t <= 2; ++t) {
      p.grad.copy_from(g);
      opt.step({&p}, t);
    }
    result[threads - 1] = p.value;
  }
  set_num_threads(before);
  CHECK(same_bits(result[0], result[1]));
  CHECK(!same_bits(result[0], w0));
}

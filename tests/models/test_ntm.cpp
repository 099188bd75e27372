// models::Ntm: configuration, gradient checks of whole tiny machines (one step and three steps,
// both controllers, two head layouts, every memory initialisation, the memory-less baseline),
// the addressing invariants on the model's own weightings, bad inputs, thread independence, and
// an integration test that the machine learns copy.
#include "attn/models/ntm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "attn/core/threading.hpp"
#include "attn/datasets/ntm_tasks.hpp"
#include "attn/optim/adam.hpp"
#include "attn/optim/clip.hpp"
#include "test_support.hpp"

using namespace attn;
using models::NtmController;
using models::NtmMemoryInit;

namespace {

models::NtmConfig tiny_config(NtmController controller, int64_t read_heads, int64_t write_heads, NtmMemoryInit init,
                              int64_t layers = 1) {
  models::NtmConfig c;
  c.input_size = 3;
  c.output_size = 2;
  c.controller = controller;
  c.controller_size = 4;
  c.controller_layers = layers;
  c.memory_rows = 5;
  c.memory_width = 3;
  c.read_heads = read_heads;
  c.write_heads = write_heads;
  c.shift_range = 1;
  c.memory_init = init;
  return c;
}

// Random bits (0/1) of the given shape.
Tensor bits(const Shape& shape, Rng& rng) {
  Tensor t(shape);
  for (float& v : t.values()) v = rng.uniform() < 0.5f ? 0.0f : 1.0f;
  return t;
}

// B = 2 examples with the given input and target lengths; inputs and targets are random bits.
models::SequenceBatch make_batch(int64_t Win, int64_t Wout, std::vector<int32_t> in_len, std::vector<int32_t> tgt_len,
                                 uint64_t seed) {
  Rng rng(seed);
  const int64_t B = static_cast<int64_t>(in_len.size());
  const int64_t Tin = std::max<int64_t>(1, *std::max_element(in_len.begin(), in_len.end()));
  const int64_t Tout = std::max<int64_t>(1, *std::max_element(tgt_len.begin(), tgt_len.end()));
  models::SequenceBatch batch;
  batch.inputs = bits({B, Tin, Win}, rng);
  batch.targets = bits({B, Tout, Wout}, rng);
  batch.input_len = Tensor::from_ints({B}, in_len);
  batch.target_len = Tensor::from_ints({B}, tgt_len);
  return batch;
}

// One NTM step (T = 1: both examples emit at once) and three steps (T = 3: one example reads two
// rows and emits one, the other reads one and emits two, so the loss reaches back through the
// memory, the previous weightings and the reads).
models::SequenceBatch one_step_batch(const models::NtmConfig& c) {
  return make_batch(c.input_size, c.output_size, {0, 0}, {1, 1}, 11);
}
models::SequenceBatch three_step_batch(const models::NtmConfig& c) {
  return make_batch(c.input_size, c.output_size, {2, 1}, {1, 2}, 12);
}

std::string describe(const models::NtmConfig& c) {
  return std::string(models::ntm_controller_name(c.controller)) + " x" + std::to_string(c.controller_layers) +
         ", " + std::to_string(c.read_heads) + " read / " + std::to_string(c.write_heads) + " write, memory " +
         models::ntm_memory_init_name(c.memory_init);
}

// Every entry of every parameter: central differences of the mean loss (evaluate) against
// train_step's gradient.
void check_gradients(const models::NtmConfig& config, const models::SequenceBatch& batch, uint64_t seed) {
  INFO("model " << describe(config));
  Rng init(seed);
  models::Ntm model(config, init);
  // Move parameters off their special values (zero biases) so that no entry sits at a kink.
  Rng jitter(seed + 1);
  for (Param* p : model.params())
    for (float& v : p->value.values()) v += jitter.uniform(-0.3f, 0.3f);
  const ParamList params = model.params();
  zero_grads(params);
  const double B = static_cast<double>(batch.inputs.dim(0));
  Rng memory(seed + 2);
  const models::NtmStats stats = model.train_step(batch, memory);
  auto loss = [&] {
    Rng same(seed + 2);   // the M_0 train_step drew (memory_init random)
    return model.evaluate(batch, &same).bce_nats / B;
  };
  CHECK(std::abs(loss() - stats.bce_nats / B) < 1e-6);
  for (Param* p : params) {
    INFO("param " << p->name);
    CHECK_THAT(p->grad, test::close_to(test::numeric_grad(loss, p->value), 1e-2));
  }
}

}  // namespace

TEST_CASE("ntm config: validation and attributes", "[unit][ntm]") {
  models::NtmConfig c = tiny_config(NtmController::feedforward, 2, 1, NtmMemoryInit::random, 2);
  const auto attrs = c.to_attrs();
  CHECK(std::get<std::string>(attrs.at("controller")) == "feedforward");
  CHECK(std::get<std::string>(attrs.at("memory_init")) == "random");
  CHECK(std::get<int64_t>(attrs.at("memory_rows")) == 5);
  CHECK(attrs.size() == 11);
  const models::NtmConfig back = models::NtmConfig::from_attrs(attrs);
  CHECK(back.to_attrs() == attrs);
  CHECK(back.controller == NtmController::feedforward);
  CHECK(back.memory_init == NtmMemoryInit::random);
  CHECK(back.controller_layers == 2);
  for (const char* name : {"lstm", "feedforward"})
    CHECK(models::ntm_controller_name(models::parse_ntm_controller(name)) == std::string(name));
  for (const char* name : {"constant", "learned", "random"})
    CHECK(models::ntm_memory_init_name(models::parse_ntm_memory_init(name)) == std::string(name));
  REQUIRE_THROWS_WITH(models::parse_ntm_controller("gru"),
                      Catch::Contains("unknown controller 'gru' (expected lstm or feedforward)"));

  auto rejects = [&](auto change, const std::string& message) {
    models::NtmConfig bad = c;
    change(bad);
    REQUIRE_THROWS_AS(bad.validate(), ConfigError);
    REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains(message));
  };
  rejects([](auto& x) { x.input_size = 0; }, "input_size must be >= 1, got 0");
  rejects([](auto& x) { x.output_size = -2; }, "output_size must be >= 1, got -2");
  rejects([](auto& x) { x.controller_size = 0; }, "controller_size must be >= 1, got 0");
  rejects([](auto& x) { x.controller_layers = 0; }, "controller_layers must be >= 1, got 0");
  rejects([](auto& x) { x.memory_rows = 0; }, "memory_rows must be >= 1, got 0");
  rejects([](auto& x) { x.memory_width = 0; }, "memory_width must be >= 1, got 0");
  rejects([](auto& x) { x.read_heads = -1; }, "read_heads must be >= 0, got -1");
  rejects([](auto& x) { x.write_heads = -1; }, "write_heads must be >= 0, got -1");
  rejects([](auto& x) { x.shift_range = -1; }, "shift_range must be >= 0, got -1");
  rejects([](auto& x) { x.shift_range = 5; }, "shift_range must be < memory_rows (5), got 5");

  auto bad_attrs = attrs;
  bad_attrs["memory_init"] = std::string("zeros");
  REQUIRE_THROWS_WITH(models::NtmConfig::from_attrs(bad_attrs), Catch::Contains("unknown memory_init 'zeros'"));
  bad_attrs = attrs;
  bad_attrs["read_heads"] = 1.5;
  REQUIRE_THROWS_WITH(models::NtmConfig::from_attrs(bad_attrs),
                      Catch::Contains("attribute 'read_heads' must be an integer"));
  bad_attrs = attrs;
  bad_attrs["memory_width"] = int64_t{0};
  REQUIRE_THROWS_WITH(models::NtmConfig::from_attrs(bad_attrs), Catch::Contains("memory_width must be >= 1, got 0"));
  // Missing keys keep their defaults.
  auto partial = attrs;
  partial.erase("shift_range");
  CHECK(models::NtmConfig::from_attrs(partial).shift_range == 1);
}

TEST_CASE("ntm: parameters are named by module path", "[unit][ntm]") {
  auto names_of = [](models::Ntm& m) {
    std::vector<std::string> names;
    for (Param* p : m.params()) names.push_back(p->name);
    return names;
  };
  Rng rng(1);
  models::Ntm lstm(tiny_config(NtmController::lstm, 2, 1, NtmMemoryInit::learned, 2), rng);
  CHECK(names_of(lstm) ==
        std::vector<std::string>{"controller/layer0/W_ih", "controller/layer0/W_hh", "controller/layer0/b",
                                 "controller/layer1/W_ih", "controller/layer1/W_hh", "controller/layer1/b",
                                 "heads/write0/W", "heads/write0/b", "heads/read0/W", "heads/read0/b",
                                 "heads/read1/W", "heads/read1/b", "output/W", "output/b", "memory/init"});
  // Head rows: k [M], β, g, s [2r+1], γ (+ e, a [M] for a write head); M = 3, r = 1.
  for (Param* p : lstm.params()) {
    if (p->name == "heads/write0/W") CHECK(p->value.shape() == Shape{3 + 3 + 3 + 6, 4});
    if (p->name == "heads/read1/b") CHECK(p->value.shape() == Shape{9});
    if (p->name == "controller/layer0/W_ih") CHECK(p->value.shape() == Shape{16, 3 + 2 * 3});
    if (p->name == "output/W") CHECK(p->value.shape() == Shape{2, 4 + 2 * 3});
  }
  models::Ntm ff(tiny_config(NtmController::feedforward, 1, 2, NtmMemoryInit::constant), rng);
  CHECK(names_of(ff) == std::vector<std::string>{"controller/layer0/W", "controller/layer0/b", "heads/write0/W",
                                                 "heads/write0/b", "heads/write1/W", "heads/write1/b",
                                                 "heads/read0/W", "heads/read0/b", "output/W", "output/b"});
  // No heads: no memory at all, not even with memory_init learned.
  models::Ntm baseline(tiny_config(NtmController::lstm, 0, 0, NtmMemoryInit::learned), rng);
  CHECK(names_of(baseline) == std::vector<std::string>{"controller/layer0/W_ih", "controller/layer0/W_hh",
                                                       "controller/layer0/b", "output/W", "output/b"});
}

TEST_CASE("ntm gradients: one step, both controllers, two head layouts, every memory init", "[gradcheck][ntm]") {
  uint64_t seed = 100;
  for (NtmController controller : {NtmController::lstm, NtmController::feedforward})
    for (const auto& [R, W] : {std::pair<int64_t, int64_t>{2, 1}, {1, 2}})
      for (NtmMemoryInit init : {NtmMemoryInit::constant, NtmMemoryInit::learned, NtmMemoryInit::random}) {
        const models::NtmConfig c = tiny_config(controller, R, W, init);
        check_gradients(c, one_step_batch(c), seed++);
      }
}

TEST_CASE("ntm gradients: three steps, through memory, reads and previous weightings", "[gradcheck][ntm]") {
  uint64_t seed = 200;
  for (NtmController controller : {NtmController::lstm, NtmController::feedforward})
    for (const auto& [R, W] : {std::pair<int64_t, int64_t>{2, 1}, {1, 2}})
      for (NtmMemoryInit init : {NtmMemoryInit::constant, NtmMemoryInit::learned, NtmMemoryInit::random}) {
        const models::NtmConfig c = tiny_config(controller, R, W, init);
        check_gradients(c, three_step_batch(c), seed++);
      }
}

TEST_CASE("ntm gradients: two controller layers", "[gradcheck][ntm]") {
  uint64_t seed = 300;
  for (NtmController controller : {NtmController::lstm, NtmController::feedforward}) {
    const models::NtmConfig c = tiny_config(controller, 1, 1, NtmMemoryInit::learned, 2);
    check_gradients(c, three_step_batch(c), seed++);
  }
}

TEST_CASE("ntm gradients: no memory, the plain LSTM and feed-forward baselines", "[gradcheck][ntm]") {
  uint64_t seed = 400;
  for (NtmController controller : {NtmController::lstm, NtmController::feedforward}) {
    const models::NtmConfig c = tiny_config(controller, 0, 0, NtmMemoryInit::constant);
    check_gradients(c, one_step_batch(c), seed++);
    check_gradients(c, three_step_batch(c), seed++);
  }
}

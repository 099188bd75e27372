// Checkpoints: a bit-exact round trip of every part, parameter restore with its checks, and
// a training run resumed from a checkpoint that ends on the same bits as an uninterrupted one.
#include "attn/io/checkpoint.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "test_support.hpp"

using namespace attn;
using Catch::Contains;
using Catch::Equals;
using Catch::StartsWith;

namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  return a.numel() == 0 || std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0;
}

bool same_bits(const io::TensorMap& a, const io::TensorMap& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, t] : a)
    if (!b.count(name) || !same_bits(t, b.at(name))) return false;
  return true;
}

io::Checkpoint sample_checkpoint() {
  Rng rng(11);
  io::Checkpoint c;
  c.kind = "transformer";
  c.config = {{"d_model", int64_t{64}}, {"dropout", 0.1}, {"score", std::string("scaled_dot")}};
  // Values that a lossy path would change (NaN and infinities are refused on reading: test_output_file).
  Tensor special = Tensor::from({5}, {0.0f, -0.0f, std::numeric_limits<float>::max(),
                                      std::numeric_limits<float>::lowest(), 1e-42f});
  c.params = {{"encoder/layer0/self_attn/w_q", randn({8, 8}, rng)},
              {"encoder/layer0/self_attn/b_q", special},
              {"embedding", randn({520, 512}, rng)},                 // > 1 MiB: stored compressed
              {"positions", Tensor::from_ints({3}, {0, 1, 2})}};
  c.optimizer = {{"m/embedding", randn({4, 512}, rng)}, {"v/encoder/layer0/self_attn/w_q", randn({8, 8}, rng)}};
  c.step = 1234;
  c.epoch = 7;
  c.rng = {0xF00DFACECAFEBEEFull, 987654321};   // a seed above 2^63 survives
  c.created_by = "attn-transformer 0.1.0";
  c.command = "attn-transformer train --data m30k.h5";
  return c;
}

// A linear regression y = x W^T + b trained by SGD with momentum on mini-batches drawn from an
// attn::Rng, so that resuming needs the parameters, the velocities, the step and the RNG state.
struct TinyTrainer {
  static constexpr int64_t kN = 64, kIn = 4, kOut = 2, kBatch = 8;
  static constexpr float kLr = 0.05f, kMomentum = 0.9f;
  Tensor X, Y;                         // X: [N, in]  Y: [N, out]
  Param W, b;                          // W: [out, in]  b: [out]
  Tensor vW, vb;                       // momentum buffers
  Rng rng;
  int64_t step = 0;

  explicit TinyTrainer(uint64_t init_seed) : rng(/*seed=*/99) {
    Rng data(1);
    X = randn({kN, kIn}, data);
    Y = randn({kN, kOut}, data);
    Rng init(init_seed);
    W = Param("linear/W", randn({kOut, kIn}, init, 0.5f));
    b = Param("linear/b", randn({kOut}, init, 0.5f));
    vW = zeros_like(W.value);
    vb = zeros_like(b.value);
  }
  ParamList params() { return {&W, &b}; }

  // One step on a random mini-batch: loss = 1/(2B) sum_i ||x_i W^T + b - y_i||^2.
  void train_step() {
    zero_grads(params());
    for (int64_t k = 0; k < kBatch; ++k) {
      const int64_t i = rng.uniform_int(kN);
      for (int64_t o = 0; o < kOut; ++o) {
        float y = b.value.at(o);
        for (int64_t j = 0; j < kIn; ++j) y += W.value.at(o * kIn + j) * X.at(i * kIn + j);
        const float dy = (y - Y.at(i * kOut + o)) / kBatch;
        for (int64_t j = 0; j < kIn; ++j) W.grad.at(o * kIn + j) += dy * X.at(i * kIn + j);
        b.grad.at(o) += dy;
      }
    }
    for (auto [p, v] : {std::pair{&W, &vW}, std::pair{&b, &vb}}) {
      for (int64_t e = 0; e < p->value.numel(); ++e) {
        v->at(e) = kMomentum * v->at(e) + p->grad.at(e);
        p->value.at(e) -= kLr * v->at(e);
      }
    }
    ++step;
  }

  io::Checkpoint checkpoint() {
    io::Checkpoint c;
    c.kind = "tiny-linear";
    c.config = {{"lr", double{kLr}}, {"momentum", double{kMomentum}}, {"batch_size", kBatch}};
    c.params = io::collect_params(params());
    c.optimizer = {{"velocity/linear/W", vW.clone()}, {"velocity/linear/b", vb.clone()}};
    c.step = step;
    c.epoch = step * kBatch / kN;
    c.rng = rng.state();
    return c;
  }

  void resume(const io::Checkpoint& c, bool restore_rng = true) {
    io::restore_params(c.params, params(), c.source);
    vW.copy_from(c.optimizer.at("velocity/linear/W"));
    vb.copy_from(c.optimizer.at("velocity/linear/b"));
    step = c.step;
    if (restore_rng) rng.set_state(c.rng);
  }
};

}  // namespace

TEST_CASE("checkpoint: every part round-trips bit for bit", "[io][checkpoint]") {
  test::TempDir dir;
  const std::string path = dir.file("model.h5");
  const io::Checkpoint saved = sample_checkpoint();
  io::save_checkpoint(path, saved);
  io::save_checkpoint(path, saved);   // over an existing file: atomic replace, nothing left over
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), {}) == 1);

  const io::Checkpoint loaded = io::load_checkpoint(path, "transformer");
  CHECK(loaded.source == path);
  CHECK(loaded.kind == "transformer");
  CHECK(loaded.config == saved.config);
  CHECK(same_bits(loaded.params, saved.params));
  CHECK(same_bits(loaded.optimizer, saved.optimizer));
  CHECK(loaded.step == 1234);
  CHECK(loaded.epoch == 7);
  CHECK(loaded.rng.seed == saved.rng.seed);
  CHECK(loaded.rng.counter == saved.rng.counter);
  CHECK(loaded.created_by == saved.created_by);
  CHECK(loaded.command == saved.command);

  // The layout is the documented one, readable with plain File calls (and h5py).
  const io::File f = io::File::open_read(path);
  CHECK(f.attr_string("/", "format") == "attnlab/model");
  CHECK(f.is_group("/params/encoder/layer0/self_attn"));
  CHECK(f.shape("/params/encoder/layer0/self_attn/w_q") == Shape{8, 8});
  CHECK(f.attr_int("/config", "d_model") == 64);
  CHECK(f.attr_uint("/state", "rng_seed") == 0xF00DFACECAFEBEEFull);

  CHECK(loaded.config_int("d_model") == 64);
  CHECK(loaded.config_double("d_model") == 64.0);
  CHECK(loaded.config_double("dropout") == 0.1);
  CHECK(loaded.config_string("score") == "scaled_dot");
  REQUIRE_THROWS_WITH(loaded.config_int("heads"),
                      Equals(path + ": no attribute 'heads' in /config (found: d_model, dropout, score)"));
  REQUIRE_THROWS_WITH(loaded.config_int("dropout"),
                      Equals(path + ": /config attribute 'dropout' is a number, expected an integer"));
  REQUIRE_THROWS_WITH(io::load_checkpoint(path, "seq2seq"),
                      Equals(path + ": kind is 'transformer', expected 'seq2seq'"));
}

TEST_CASE("checkpoint: a model saved for inference only has no optimizer state", "[io][checkpoint]") {
  test::TempDir dir;
  io::Checkpoint c;
  c.kind = "memnet";
  c.params = {{"A", Tensor::from({2}, {1, 2})}};
  io::save_checkpoint(dir.file("m.h5"), c);
  const io::Checkpoint back = io::load_checkpoint(dir.file("m.h5"));
  CHECK(back.optimizer.empty());
  CHECK(back.config.empty());
  CHECK(same_bits(back.params, c.params));

  c.params = {{"/abs", Tensor({1})}};
  REQUIRE_THROWS_AS(io::save_checkpoint(dir.file("bad.h5"), c), ConfigError);
  c.params = {{"a//b", Tensor({1})}};
  REQUIRE_THROWS_WITH(io::save_checkpoint(dir.file("bad.h5"), c),
                      Contains("parameter name 'a//b' is not a relative path"));
  CHECK_FALSE(std::filesystem::exists(dir.file("bad.h5")));   // a failed save leaves nothing
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), {}) == 1);
}

TEST_CASE("checkpoint: restore_params checks names, shapes and dtypes and names the file",
          "[io][checkpoint]") {
  Param w("enc/w", Tensor::from({2, 2}, {1, 2, 3, 4})), b("enc/b", Tensor::from({2}, {5, 6}));
  const ParamList params = {&w, &b};
  const io::TensorMap good = io::collect_params(params);
  w.value.fill(0.0f);   // collect_params took a snapshot, not a view
  CHECK(good.at("enc/w").at(3) == 4.0f);

  io::TensorMap missing = good;
  missing.erase("enc/b");
  REQUIRE_THROWS_AS(io::restore_params(missing, params, "m.h5"), FormatError);
  REQUIRE_THROWS_WITH(io::restore_params(missing, params, "m.h5"),
                      StartsWith("m.h5: no parameter 'enc/b' in /params (the model has it;"));

  io::TensorMap wrong_shape = good;
  wrong_shape["enc/w"] = Tensor({2, 3});
  REQUIRE_THROWS_AS(io::restore_params(wrong_shape, params, "m.h5"), ShapeError);
  REQUIRE_THROWS_WITH(io::restore_params(wrong_shape, params, "m.h5"),
                      StartsWith("m.h5: parameter '/params/enc/w' has shape [2, 3], expected [2, 2]"));

  io::TensorMap wrong_dtype = good;
  wrong_dtype["enc/b"] = Tensor({2}, DType::i32);
  REQUIRE_THROWS_WITH(io::restore_params(wrong_dtype, params, "m.h5"),
                      Equals("m.h5: parameter '/params/enc/b' holds int32 values, expected float32"));

  io::TensorMap extra = good;
  extra["dec/w"] = Tensor({1});
  REQUIRE_THROWS_WITH(io::restore_params(extra, params, "m.h5"),
                      StartsWith("m.h5: the file has parameters the model does not: 'dec/w'"));
  CHECK(w.value.at(3) == 0.0f);   // a failed restore changed nothing

  io::restore_params(good, params, "m.h5");
  CHECK(same_bits(w.value, good.at("enc/w")));
  CHECK(same_bits(b.value, good.at("enc/b")));

  Param twin("enc/w", Tensor({1}));
  REQUIRE_THROWS_WITH(io::collect_params({&w, &twin}), Contains("two parameters are named 'enc/w'"));
}

TEST_CASE("checkpoint: training resumed from a checkpoint ends on the same bits", "[io][checkpoint]") {
  test::TempDir dir;
  constexpr int kSteps = 24, kSplit = 11;

  TinyTrainer straight(/*init_seed=*/5);
  const Tensor W0 = straight.W.value.clone();
  for (int s = 0; s < kSteps; ++s) straight.train_step();
  REQUIRE_FALSE(same_bits(straight.W.value, W0));   // it trained

  TinyTrainer first(/*init_seed=*/5);
  for (int s = 0; s < kSplit; ++s) first.train_step();
  io::save_checkpoint(dir.file("ckpt.h5"), first.checkpoint());
  const io::Checkpoint ckpt = io::load_checkpoint(dir.file("ckpt.h5"), "tiny-linear");
  CHECK(ckpt.step == kSplit);
  CHECK(ckpt.epoch == kSplit * TinyTrainer::kBatch / TinyTrainer::kN);
  CHECK(ckpt.config_double("lr") == double{TinyTrainer::kLr});

  TinyTrainer resumed(/*init_seed=*/77);   // different initial weights: all must come from the file
  resumed.resume(ckpt);
  for (int s = kSplit; s < kSteps; ++s) resumed.train_step();
  CHECK(resumed.step == straight.step);
  CHECK(same_bits(resumed.W.value, straight.W.value));
  CHECK(same_bits(resumed.b.value, straight.b.value));
  CHECK(same_bits(resumed.vW, straight.vW));
  CHECK(resumed.rng.state().counter == straight.rng.state().counter);

  // The RNG state matters: resuming without it draws other mini-batches and other bits.
  TinyTrainer careless(/*init_seed=*/77);
  careless.resume(ckpt, /*restore_rng=*/false);
  for (int s = kSplit; s < kSteps; ++s) careless.train_step();
  CHECK_FALSE(same_bits(careless.W.value, straight.W.value));
}

TEST_CASE("a model file of format version 1 (the old /config names) is refused naming the change", "[io][checkpoint]") {
  test::TempDir dir;
  const std::string path = dir.file("old.h5");
  io::Checkpoint c;
  c.kind = "seq2seq";
  c.params = {{"w", Tensor({2})}};
  io::save_checkpoint(path, c);
  {   // rewrite the root version as an attnlab 0.1 file had it
    io::File f = io::File::create(dir.file("old1.h5"));
    io::write_checkpoint(f, c);
    f.set_attr("/", "format_version", int64_t{1});
    f.commit();
  }
  CHECK(io::load_checkpoint(path).kind == "seq2seq");
  REQUIRE_THROWS_WITH(io::load_checkpoint(dir.file("old1.h5")),
                      Contains("old1.h5: a model of format version 1, written before /config took the tools' "
                               "option names"));
}

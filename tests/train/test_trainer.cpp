// The model-agnostic trainer, driven by a stand-in model: a linear softmax classifier whose
// inputs get Gaussian noise from the trainer's stream (as dropout would), so that resuming
// needs the parameters, Adam's moments, the step, the position in the epoch and the RNG state.
#include "attn/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "attn/io/checkpoint.hpp"
#include "attn/ops/cross_entropy.hpp"
#include "attn/ops/linear.hpp"
#include "attn/train/checkpoints.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

// Classes are the sign patterns of the first two input features: 4 separable classes.
struct Classifier {
  static constexpr int64_t kN = 24, kF = 5, kC = 4;
  Tensor X;                               // [N, I]
  Tensor y;                               // int32 [N]
  std::vector<int32_t> lengths;           // a pretend length per example, for the bucketing
  Param W{"out/w", Tensor({kC, kF})};     // [O, I]: O = kC classes, I = kF features
  Param b{"out/b", Tensor({kC})};         // [O]

  explicit Classifier(uint64_t seed = 3) {
    Rng rng(seed);
    X = randn({kN, kF}, rng);
    y = Tensor({kN}, DType::i32);
    for (int64_t i = 0; i < kN; ++i) {
      y.idata()[i] = (X.at(i * kF) > 0 ? 1 : 0) + (X.at(i * kF + 1) > 0 ? 2 : 0);
      lengths.push_back(static_cast<int32_t>(1 + i % 3));
    }
    W.value = randn({kC, kF}, rng, 0.1f);
  }

  // Mean label-smoothed cross-entropy of rows `index`, with N(0, noise^2) added to the inputs.
  train::BatchStats run(std::span<const int64_t> index, Rng* rng, bool backward) {
    const auto n = static_cast<int64_t>(index.size());
    Tensor x({n, kF}), t({n}, DType::i32);
    for (int64_t r = 0; r < n; ++r) {
      std::memcpy(x.data() + r * kF, X.data() + index[r] * kF, kF * sizeof(float));
      t.idata()[r] = y.idata()[index[r]];
    }
    if (rng) {
      Tensor noise = randn({n, kF}, *rng, 0.1f);
      for (int64_t i = 0; i < x.numel(); ++i) x.at(i) += noise.at(i);
    }
    ops::LinearCache lin;
    ops::CrossEntropyCache ce;
    const Tensor logits = ops::linear_forward(x, W.value, b.value, backward ? &lin : nullptr);
    const auto smoothed = ops::cross_entropy_forward(logits, t, {.label_smoothing = 0.1f}, &ce);
    const auto plain = ops::cross_entropy_forward(logits, t, {}, nullptr);
    if (backward) ops::linear_backward(ops::cross_entropy_backward(1.0f, ce), W.value, lin, W.grad, b.grad);
    return {.loss_sum = smoothed.sum, .count = static_cast<double>(smoothed.count), .units = smoothed.count,
            .sums = {plain.sum, static_cast<double>(smoothed.correct)}};
  }

  static double accuracy(const train::BatchStats& s) { return s.sum(1) / s.count; }

  train::TrainTask task() {
    train::TrainTask task;
    task.kind = "classifier";
    task.config = {{"features", int64_t{kF}}, {"classes", int64_t{kC}}};
    task.params = {&W, &b};
    task.unit = {.rate = "ex", .plural = "examples"};
    task.sums = {"nll", "correct"};
    task.metrics = {{"accuracy", "accuracy", accuracy}};
    task.train_lengths = lengths;
    task.valid_lengths = lengths;
    task.train_batch = [this](std::span<const int64_t> index, Rng& rng) { return run(index, &rng, true); };
    task.valid_batch = [this](std::span<const int64_t> index) { return run(index, nullptr, false); };
    task.created_by = "test_train";
    return task;
  }
};

train::TrainConfig small_config(const std::string& model_path) {
  train::TrainConfig c;
  c.epochs = 100;
  c.max_tokens = 6;   // 24 examples of lengths 1..3: 9 batches per epoch
  c.seed = 5;
  c.optimizer.kind = optim::OptimizerKind::adam;
  c.optimizer.adam = {.lr = 0.0f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f, .weight_decay = 0.0f};
  c.optimizer.schedule = optim::WarmupInverseSqrt(/*d_model=*/16, /*warmup=*/4, /*scale=*/0.5);
  c.clip_norm = 1.0;
  c.model_path = model_path;
  return c;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         (a.numel() == 0 || std::memcmp(a.raw(), b.raw(), a.byte_size()) == 0);
}

// Every tensor and every /state and /metrics attribute of two model files, bit for bit, but
// the wall-time record train_seconds (which no two runs share).
void require_same_files(const std::string& a_path, const std::string& b_path) {
  const io::File a = io::File::open_read(a_path), b = io::File::open_read(b_path);
  for (const std::string group : {"/params", "/optimizer", "/metrics"}) {
    const auto names = a.list_datasets(group);
    REQUIRE(names == b.list_datasets(group));
    REQUIRE(!names.empty());
    for (const auto& name : names) {
      if (name == "train_seconds") continue;
      INFO(group << "/" << name);
      CHECK(same_bits(a.read(group + "/" + name), b.read(group + "/" + name)));
    }
  }
  for (const std::string group : {"/state", "/metrics"}) {
    REQUIRE(a.attr_names(group) == b.attr_names(group));
    for (const auto& key : a.attr_names(group)) {
      if (key == "train_seconds") continue;
      INFO(group << " " << key);
      CHECK(a.attr_text(group, key) == b.attr_text(group, key));
    }
  }
}

}  // namespace

TEST_CASE("a resumed run ends on the same bits as an uninterrupted one", "[integration][trainer]") {
  test::TempDir dir;
  const std::string full = dir.file("full.h5"), part = dir.file("part.h5");
  {
    Classifier model;
    auto config = small_config(full);
    config.max_steps = 22;   // 2 epochs of 9 batches and 4 of the third
    const auto result = train::fit(model.task(), config);
    CHECK(result.step == 22);
    CHECK(result.epoch == 2);
    CHECK(result.curves.at("train_loss").size() == 3);   // two epochs and the unfinished third
  }
  {
    Classifier model;
    auto config = small_config(part);
    config.max_steps = 14;
    config.checkpoint_every = 4;   // steps 4, 8, 12: mid-epoch and across the epoch boundary
    config.keep_checkpoints = 10;
    train::fit(model.task(), config);
  }
  SECTION("from a periodic checkpoint in the first epoch (crossing an epoch boundary)") {
    Classifier fresh(/*seed=*/3);
    fresh.W.value.fill(7.0f);   // the checkpoint must overwrite it
    auto config = small_config(part);
    config.max_steps = 22;
    config.resume_from = train::checkpoint_path(part, 4);
    train::fit(fresh.task(), config);
    require_same_files(full, part);
  }
  SECTION("from a final model stopped in the middle of an epoch") {
    Classifier fresh;
    auto config = small_config(part);
    config.max_steps = 22;
    config.resume_from = part;   // step 14: the fifth batch of the second epoch
    REQUIRE(train::latest_checkpoint(part) == part);
    train::fit(fresh.task(), config);
    require_same_files(full, part);
  }
}

TEST_CASE("the trainer learns a separable task and records one curve entry per epoch", "[unit][trainer]") {
  test::TempDir dir;
  Classifier model;
  auto config = small_config(dir.file("m.h5"));
  config.epochs = 12;
  std::vector<train::EpochReport> epochs;
  int64_t steps = 0, last_total = 0;
  train::TrainCallbacks callbacks;
  callbacks.on_step = [&](const train::StepReport& r) {
    CHECK(r.step == ++steps);
    CHECK(std::isfinite(r.loss));
    CHECK(r.lr == optim::WarmupInverseSqrt(16, 4, 0.5)(r.step));
    last_total = r.total_steps;
  };
  callbacks.on_epoch = [&](const train::EpochReport& r) { epochs.push_back(r); };
  const auto result = train::fit(model.task(), config, callbacks);

  CHECK(steps == 12 * 9);
  CHECK(last_total == 12 * 9);
  REQUIRE(epochs.size() == 12);
  CHECK(epochs.back().valid.count == Classifier::kN);
  CHECK(epochs.back().train.units == Classifier::kN);
  CHECK(Classifier::accuracy(epochs.back().valid) >= 0.9);
  CHECK(epochs.back().valid.loss() < epochs.front().valid.loss());

  const io::File file = io::File::open_read(dir.file("m.h5"));
  const Tensor curve = file.read("/metrics/valid_loss", DType::f32, {12});
  CHECK(curve.at(11) == static_cast<float>(epochs.back().valid.loss()));
  CHECK(file.read("/metrics/train_loss", DType::f32, {12}).at(0) == result.curves.at("train_loss")[0]);
  // The task's metric, for both splits.
  CHECK(file.read("/metrics/valid_accuracy", DType::f32, {12}).at(11) ==
        static_cast<float>(Classifier::accuracy(epochs.back().valid)));
  CHECK(file.exists("/metrics/train_accuracy"));
  // The x axis of a learning curve: the work trained on when each epoch ended.
  const Tensor seen = file.read("/metrics/trained_examples", DType::f32, {12});
  CHECK(seen.at(0) == static_cast<float>(Classifier::kN));
  CHECK(seen.at(11) == static_cast<float>(12 * Classifier::kN));
  CHECK(file.attr_string("/state", "unit") == "examples");
  CHECK(file.attr_int("/metrics", "last_epoch_partial") == 0);
  CHECK(file.attr_int("/state", "step") == 12 * 9);
  CHECK(file.attr_int("/state", "epoch") == 12);
  CHECK(file.attr_string("/", "kind") == "classifier");
}

TEST_CASE("periodic checkpoints rotate, keeping the newest", "[io][trainer]") {
  test::TempDir dir;
  const std::string model_path = dir.file("run.h5");
  Classifier model;
  auto config = small_config(model_path);
  config.max_steps = 10;
  config.checkpoint_every = 2;
  config.keep_checkpoints = 3;
  std::vector<std::string> saved;
  train::fit(model.task(), config, {.on_step = {}, .on_epoch = {},
                                    .on_save = [&](const std::string& p, int64_t) { saved.push_back(p); }});
  CHECK(saved.size() == 6);   // steps 2, 4, 6, 8, 10 and the final model
  CHECK(saved.back() == model_path);
  const auto files = train::list_checkpoints(model_path);
  REQUIRE(files.size() == 3);
  CHECK(files[0].step == 6);
  CHECK(files[2].step == 10);
  CHECK(files[2].path == dir.file("run.step000000010.h5"));

  SECTION("a fresh run replaces the checkpoints of an earlier run of the same model") {
    Classifier again;
    config.max_steps = 3;
    train::fit(again.task(), config);
    REQUIRE(train::list_checkpoints(model_path).size() == 1);
    CHECK(train::list_checkpoints(model_path)[0].step == 2);
  }
}

TEST_CASE("trainer configuration errors name the field", "[unit][trainer]") {
  Classifier model;
  auto config = small_config("");
  config.epochs = 0;
  REQUIRE_THROWS_WITH(train::fit(model.task(), config), Contains("epochs and max_steps are both 0"));
  config = small_config("-");
  config.checkpoint_every = 5;
  REQUIRE_THROWS_WITH(train::fit(model.task(), config), Contains("checkpoint_every needs a model file"));
  config = small_config("");
  config.keep_checkpoints = 0;
  REQUIRE_THROWS_WITH(train::fit(model.task(), config), Contains("keep_checkpoints must be >= 1, got 0"));
  config = small_config("");
  config.max_tokens = 2;   // examples of length 3 cannot fit
  REQUIRE_THROWS_AS(train::fit(model.task(), config), ConfigError);
}

TEST_CASE("a non-finite gradient stops the run naming the step", "[unit][trainer]") {
  Classifier model;
  auto task = model.task();
  int64_t calls = 0;
  task.train_batch = [&](std::span<const int64_t> index, Rng& rng) {
    const auto stats = model.run(index, &rng, true);
    if (++calls == 3) model.W.grad.at(0) = NAN;
    return stats;
  };
  REQUIRE_THROWS_WITH(train::fit(task, small_config("")), Contains("step 3 (epoch 1): the gradient norm is nan"));
  // A loss that is not finite stops the run the same way.
  task.train_batch = [&](std::span<const int64_t> index, Rng& rng) {
    auto stats = model.run(index, &rng, true);
    stats.loss_sum = INFINITY;
    return stats;
  };
  REQUIRE_THROWS_WITH(train::fit(task, small_config("")), Contains("step 1 (epoch 1): the loss is inf"));
}

TEST_CASE("resuming from a file of another model kind fails naming the file", "[io][trainer]") {
  test::TempDir dir;
  io::Checkpoint other;
  other.kind = "seq2seq";
  other.params = {{"out/w", Tensor({4, 5})}};
  io::save_checkpoint(dir.file("other.h5"), other);
  Classifier model;
  auto config = small_config("");
  config.resume_from = dir.file("other.h5");
  REQUIRE_THROWS_AS(train::fit(model.task(), config), FormatError);

  other.kind = "classifier";
  other.params = {{"out/w", Tensor({4, 6})}, {"out/b", Tensor({4})}};
  io::save_checkpoint(dir.file("other.h5"), other);
  REQUIRE_THROWS_WITH(train::fit(model.task(), config),
                      Contains("other.h5: parameter '/params/out/w' has shape [4, 6], expected [4, 5]"));
}

TEST_CASE("every optimizer and schedule resumes to the same bits", "[integration][trainer]") {
  struct Case {
    const char* name;
    optim::OptimizerConfig optimizer;
  };
  optim::OptimizerConfig sgd, rmsprop, adamw;
  sgd.kind = optim::OptimizerKind::sgd;
  sgd.sgd.momentum = 0.9f;
  sgd.sgd.nesterov = true;
  sgd.schedule = optim::StepDecay(0.2f, 0.5f, /*step_size=*/5);
  rmsprop.kind = optim::OptimizerKind::rmsprop;
  rmsprop.rmsprop = optim::RmsPropConfig::graves2013();
  rmsprop.schedule = optim::ConstantLr(1e-2f);
  adamw.kind = optim::OptimizerKind::adamw;
  adamw.adam.weight_decay = 0.01f;
  adamw.schedule = optim::ConstantLr(1e-2f);
  for (const Case& c : {Case{"sgd", sgd}, Case{"rmsprop", rmsprop}, Case{"adamw", adamw}}) {
    INFO(c.name);
    test::TempDir dir;
    const std::string full = dir.file("full.h5"), part = dir.file("part.h5");
    {
      Classifier model;
      auto config = small_config(full);
      config.optimizer = c.optimizer;
      config.max_steps = 22;
      train::fit(model.task(), config);
    }
    {
      Classifier model;
      auto config = small_config(part);
      config.optimizer = c.optimizer;
      config.max_steps = 13;
      train::fit(model.task(), config);
    }
    Classifier fresh;
    auto config = small_config(part);
    config.optimizer = c.optimizer;
    config.max_steps = 22;
    config.resume_from = part;
    train::fit(fresh.task(), config);
    require_same_files(full, part);
    // The optimizer's state went into the file under its own kind's names.
    CHECK(!io::File::open_read(part).list_datasets(std::string("/optimizer/") + (c.name == std::string("sgd") ? "sgd" : c.name)).empty());
  }
}

TEST_CASE("the step schedule decays after every step_size steps, the trainer's rate follows it", "[unit][trainer]") {
  Classifier model;
  auto config = small_config("");
  config.optimizer.kind = optim::OptimizerKind::sgd;
  config.optimizer.schedule = optim::StepDecay(0.4f, 0.5f, 9);
  config.max_steps = 20;
  std::vector<float> rates;
  train::TrainCallbacks callbacks;
  callbacks.on_step = [&](const train::StepReport& r) { rates.push_back(r.lr); };
  train::fit(model.task(), config, callbacks);
  REQUIRE(rates.size() == 20);
  CHECK(rates[0] == 0.4f);    // epoch 1 (9 batches) at the initial rate
  CHECK(rates[8] == 0.4f);
  CHECK(rates[9] == 0.2f);    // epoch 2 halved
  CHECK(rates[18] == 0.1f);   // epoch 3 halved again
}

TEST_CASE("batch_size batches hold that many examples, every example once per epoch", "[unit][trainer]") {
  const std::vector<int32_t> lengths{3, 1, 2, 5, 4, 1, 1, 2, 3, 3};
  train::TrainConfig config;
  config.batch_size = 4;
  config.seed = 9;
  const auto e0 = train::epoch_batches(lengths, config, 0), e1 = train::epoch_batches(lengths, config, 1);
  REQUIRE(e0.size() == 3);
  std::vector<int64_t> seen;
  for (const auto& b : e0) {
    CHECK(b.size() <= 4);
    seen.insert(seen.end(), b.begin(), b.end());
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(e0 != e1);   // another order each epoch
  CHECK(e0 == train::epoch_batches(lengths, config, 0));
}

TEST_CASE("a task's own batches, epoch hook and state resume with the run", "[integration][trainer]") {
  // A curriculum: epoch e trains on the examples of length <= level, the level rising by one
  // after every epoch whose train accuracy reaches 1/2; the level is the task's state.
  struct Curriculum {
    Classifier model;
    int64_t level = 1;
    std::vector<int64_t> levels_seen;
    train::TrainTask task() {
      train::TrainTask t = model.task();
      t.epoch_batches = [this](int64_t epoch) {
        levels_seen.push_back(level);
        std::vector<int32_t> eligible;
        std::vector<int64_t> index;
        for (int64_t i = 0; i < Classifier::kN; ++i)
          if (model.lengths[i] <= level) index.push_back(i);
        std::vector<std::vector<int64_t>> batches;
        for (size_t i = 0; i < index.size(); i += 4)
          batches.emplace_back(index.begin() + i, index.begin() + std::min(i + 4, index.size()));
        std::rotate(batches.begin(), batches.begin() + epoch % batches.size(), batches.end());
        return batches;
      };
      t.end_epoch = [this](const train::EpochReport& r) {
        if (Classifier::accuracy(r.train) >= 0.5 && level < 3) ++level;
      };
      t.write_extra = [this](io::File& f) { f.set_attr("/state", "curriculum_level", level); };
      t.read_state = [this](const io::File& f) { level = f.attr_int("/state", "curriculum_level"); };
      return t;
    }
  };
  test::TempDir dir;
  const std::string full = dir.file("full.h5"), part = dir.file("part.h5");
  Curriculum a;
  auto config = small_config(full);
  config.optimizer.schedule = optim::ConstantLr(0.05f);
  config.epochs = 6;
  train::fit(a.task(), config);
  CHECK(a.level == 3);   // it climbed
  CHECK(a.levels_seen.front() == 1);

  Curriculum b;
  config = small_config(part);
  config.optimizer.schedule = optim::ConstantLr(0.05f);
  config.epochs = 3;
  train::fit(b.task(), config);
  Curriculum c;   // a fresh process: its level comes from the file
  config.epochs = 6;
  config.resume_from = part;
  train::fit(c.task(), config);
  CHECK(c.level == a.level);
  require_same_files(full, part);
}

TEST_CASE("clipping by value clamps each gradient element before the step", "[unit][trainer]") {
  Classifier model;
  auto config = small_config("");
  config.max_steps = 1;
  config.clip_norm = 0;
  config.clip_value = 1e-3;
  auto task = model.task();
  float largest = 0;
  task.train_batch = [&](std::span<const int64_t> index, Rng& rng) {
    const auto stats = model.run(index, &rng, true);
    return stats;
  };
  const Tensor before = model.W.value.clone();
  train::TrainCallbacks cb;
  cb.on_step = [&](const train::StepReport&) {
    for (int64_t i = 0; i < model.W.grad.numel(); ++i) largest = std::max(largest, std::fabs(model.W.grad.at(i)));
  };
  train::fit(task, config, cb);
  CHECK(largest <= 1e-3f);
  CHECK(largest > 0);
  CHECK(!same_bits(before, model.W.value));
}

TEST_CASE("start phases: on for a set number of epochs or until the loss stops improving, the schedule held "
          "while on, then restarted, and a resumed run continues them",
          "[integration][trainer]") {
  test::TempDir dir;
  // 9 batches an epoch; a step schedule whose rate drops at every step: the rate a step used says
  // which step of the schedule it took.
  auto config = [&](const std::string& path) {
    train::TrainConfig c = small_config(path);
    c.epochs = 6;
    c.optimizer.kind = optim::OptimizerKind::sgd;
    c.optimizer.sgd.momentum = 0.9f;   // a state for the checkpoints to carry
    c.optimizer.schedule = optim::StepDecay(1.0f, 0.5f, 1);
    return c;
  };
  struct Run {
    std::vector<float> lr;                            // per step
    std::vector<std::pair<int64_t, bool>> switched;   // (step, on) per call of a phase's switch
  };
  auto train = [&](const std::string& path, int64_t epochs, bool hold, const std::string& resume = "",
                   int64_t max_steps = 0) {
    Classifier model;
    Run run;
    int64_t step = 0;
    train::TrainTask task = model.task();
    task.start_phases.push_back({.name = "warm", .epochs = epochs, .holds_schedule = hold, .set = [&](bool on) {
                                   run.switched.emplace_back(step, on);
                                 }});
    train::TrainConfig c = config(path);
    c.resume_from = resume;
    c.max_steps = max_steps;
    c.checkpoint_every = 9;
    train::TrainCallbacks callbacks;
    callbacks.on_step = [&](const train::StepReport& r) {
      step = r.step;
      run.lr.push_back(r.lr);
    };
    train::fit(task, c, callbacks);
    return run;
  };

  SECTION("a set number of epochs, holding the schedule") {
    const Run r = train(dir.file("a.h5"), 2, true);
    REQUIRE(r.lr.size() == 54);
    CHECK(r.switched == std::vector<std::pair<int64_t, bool>>{{0, true}, {18, false}});
    for (size_t t = 0; t < 18; ++t) CHECK(r.lr[t] == 1.0f);   // held at the schedule's first step
    CHECK(r.lr[18] == 1.0f);                                  // step 19 is the schedule's step 1 again...
    CHECK(r.lr[19] == 0.5f);                                  // ...and it runs on from there
    const io::File f = io::File::open_read(dir.file("a.h5"));
    CHECK(f.attr_int("/state", "warm") == 0);
    CHECK(f.attr_int("/state", "warm_end") == 18);
    CHECK_FALSE(train::phase_on(f, "warm", true));
    CHECK(train::phase_on(f, "other", true));
  }
  SECTION("until the validation loss stops improving, without holding the schedule") {
    const Run r = train(dir.file("b.h5"), 0, false);
    REQUIRE(r.switched.size() == 2);
    CHECK(r.switched[1].second == false);
    CHECK(r.switched[1].first % 9 == 0);   // at the end of an epoch
    CHECK(r.lr[1] == 0.5f);                // the schedule ran from the start
    // The epoch it ended after is the first whose validation loss was not below every earlier one
    // (the curve is float32, the trainer compares doubles: <= and >= allow the rounding).
    const io::File f = io::File::open_read(dir.file("b.h5"));
    const Tensor valid = f.read("/metrics/valid_loss");
    const int64_t ended = r.switched[1].first / 9 - 1;
    for (int64_t e = 1; e < ended; ++e) CHECK(valid.at(e) <= valid.at(e - 1));
    CHECK(valid.at(ended) >= *std::min_element(valid.data(), valid.data() + ended));
    CHECK(f.attr_double("/state", "warm_best") == Approx(*std::min_element(valid.data(), valid.data() + ended + 1)));
  }
  SECTION("resumed inside the phase and after it, a run ends on the uninterrupted run's bits") {
    train(dir.file("full.h5"), 3, true);
    for (const int64_t from : {9, 36}) {
      INFO("resumed from step " << from);
      train(dir.file("part.h5"), 3, true, "", from);
      const Run r = train(dir.file("part.h5"), 3, true, train::checkpoint_path(dir.file("part.h5"), from));
      // Before the first step the phase is as the checkpoint left it.
      const auto before = std::find_if(r.switched.rbegin(), r.switched.rend(),
                                       [](const auto& s) { return s.first == 0; });
      REQUIRE(before != r.switched.rend());
      CHECK(before->second == (from < 27));
      require_same_files(dir.file("full.h5"), dir.file("part.h5"));
    }
  }
}

// The memory network's training task (families/memnet/run.hpp) on the real bAbI task 1, through the
// trainer with the paper's schedule: the model learns it to >= 99% test accuracy (the issue's
// bar; about 0.3 s of training on one core), linear start switches itself off, and the answers'
// per-task accuracy. Skipped without the shared bAbI data (test::data_dir()).
#include "attn/families/memnet/run.hpp"

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "attn/datasets/babi.hpp"
#include "attn/train/optimizer_spec.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

// Task 1 of the 1k set as attn-data babi imports it; empty (the case skipped) without the data.
std::optional<datasets::BabiData> task1() {
  const auto root = test::data_dir();
  if (root.empty() || !std::filesystem::exists(root / "babi" / "en" / "qa1_single-supporting-fact_train.txt")) {
    test::skip_test("the bAbI data is not in " + (root.empty() ? std::string("ATTN_DATA_DIR") : root.string()));
    return std::nullopt;
  }
  const datasets::BabiTasks read = datasets::read_babi_tasks((root / "babi" / "en").string(), 1, 50);
  return datasets::build_babi(read.tasks, {});
}

}  // namespace

TEST_CASE("memnet learns bAbI task 1 to >= 99% test accuracy with the paper's schedule", "[integration][memnet]") {
  const auto d = task1();
  if (!d) return;
  test::TempDir dir;
  for (const bool linear_start : {false, true}) {
    INFO("linear start " << linear_start);
    memnet::MemN2NConfig c;
    c.vocab_size = d->vocab.size();
    Rng init(7);
    memnet::MemN2N model(c, init);
    memnet::MemnetTraining options;
    options.linear_start = linear_start;
    options.random_noise = true;
    const train::TrainTask task = memnet::memnet_task(model, d->splits.train, &d->splits.valid, d->vocab, options);
    CHECK(model.linear_start() == linear_start);
    train::TrainConfig config;
    config.epochs = 100;
    config.batch_size = 32;
    config.seed = 3;
    // The paper's 0.01 on a summed batch of 32, halved every 25 epochs.
    const train::OptimizerSpec sgd{.kind = optim::OptimizerKind::sgd, .schedule = train::LrSchedule::step, .lr = 0.32};
    config.optimizer = train::resolve_optimizer(sgd, train::batches_per_epoch(task, config), 0);
    config.clip_norm = 1.25;
    config.model_path = dir.file("m.h5");
    const train::TrainResult r = train::fit(task, config);
    CHECK(r.epoch == 100);
    CHECK(r.curves.at("valid_error").size() == 100);
    CHECK_FALSE(model.linear_start());   // LS ended once the validation loss stopped falling
    const memnet::MemnetScores test = memnet::evaluate_memnet(model, d->splits.test, 32);
    CHECK(test.stats.count == 1000);
    CHECK(memnet::answer_accuracy(test.stats) >= 0.99);
    CHECK(test.tasks() == 1);
    CHECK(test.task_accuracy(1) == memnet::answer_accuracy(test.stats));
    CHECK(std::isnan(test.task_accuracy(2)));
    // The saved model answers as the trained one does, its vocabulary with it.
    const memnet::MemnetFile loaded = memnet::load_memnet(dir.file("m.h5"));
    CHECK(loaded.vocab.tokens() == d->vocab.tokens());
    CHECK_FALSE(loaded.model.linear_start());
    const memnet::MemnetAnswers a = memnet::answer_memnet(loaded.model, d->splits.test, 100);
    CHECK(a.scores.stats.sum(0) == test.stats.sum(0));
    CHECK(a.attention.shape() == Shape{1000, 3, d->splits.test.memory_size()});
  }
}

TEST_CASE("memnet linear start is the trainer's start phase linear_start, holding the rate schedule",
          "[unit][memnet]") {
  // The phase's rules (a set number of epochs, or until the loss stops improving; the schedule
  // held, then restarted) are the trainer's (tests/train/test_trainer.cpp); here, that the task
  // asks for them and that the phase switches the model.
  memnet::QaSplit split;
  split.story = Tensor::from_ints({1, 1, 1}, {4});
  split.story_len = Tensor::from_ints({1}, {1});
  split.question = Tensor::from_ints({1, 1}, {5});
  split.answer = Tensor::from_ints({1}, {4});
  split.support = Tensor::from_ints({1, 1}, {0});
  split.task = Tensor::from_ints({1}, {1});
  std::vector<std::string> words = data::Vocab().tokens();   // the reserved ids 0-3
  words.insert(words.end(), {"mary", "where"});
  const data::Vocab vocab = data::Vocab::from_tokens(words);
  memnet::MemN2NConfig c;
  c.vocab_size = vocab.size();
  Rng init(1);
  memnet::MemN2N model(c, init);
  for (const int64_t epochs : {0, 3}) {
    const train::TrainTask task = memnet::memnet_task(model, split, &split, vocab,
                                                      {.linear_start = true, .linear_start_epochs = epochs});
    REQUIRE(task.start_phases.size() == 1);
    const train::StartPhase& ls = task.start_phases[0];
    CHECK(ls.name == "linear_start");
    CHECK(ls.epochs == epochs);
    CHECK(ls.holds_schedule);
    CHECK(model.linear_start());
    ls.set(false);
    CHECK_FALSE(model.linear_start());
    ls.set(true);
    CHECK(model.linear_start());
  }
  CHECK(memnet::memnet_task(model, split, &split, vocab, {}).start_phases.empty());
  CHECK_FALSE(model.linear_start());
}

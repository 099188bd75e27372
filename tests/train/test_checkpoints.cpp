// Checkpoint files of a run: naming, listing, the newest, and averaging (train/checkpoints.hpp).
#include "attn/train/checkpoints.hpp"

#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

io::Checkpoint model_with(float value, int64_t step) {
  io::Checkpoint c;
  c.kind = "transformer";
  c.config = {{"d_model", int64_t{4}}};
  c.params = {{"enc/w", Tensor::full({2, 3}, value)},
              {"enc/b", Tensor::from({2}, {value, -value})},
              {"positions", Tensor::from_ints({3}, {0, 1, 2})}};
  c.optimizer = {{"adam/m/enc/b", Tensor::full({2}, 1.0f)}};
  c.step = step;
  c.epoch = step / 10;
  return c;
}

}  // namespace

TEST_CASE("checkpoint paths sit next to the model and sort by step", "[unit][checkpoints]") {
  CHECK(train::checkpoint_path("runs/tf.h5", 1200) == "runs/tf.step000001200.h5");
  CHECK(train::checkpoint_path("tf", 7) == "tf.step000000007.h5");
  CHECK(train::checkpoint_path("a.b.h5", 0) == "a.b.step000000000.h5");
}

TEST_CASE("list_checkpoints and latest_checkpoint find a run's files", "[io][checkpoints]") {
  test::TempDir dir;
  const std::string model = dir.file("tf.h5");
  REQUIRE_THROWS_WITH(train::latest_checkpoint(model), Contains("no checkpoint to resume from"));
  io::save_checkpoint(train::checkpoint_path(model, 30), model_with(1, 30));
  io::save_checkpoint(train::checkpoint_path(model, 200), model_with(2, 200));
  io::save_checkpoint(dir.file("tf.step12x.h5"), model_with(3, 12));    // not a checkpoint name
  io::save_checkpoint(dir.file("other.step000000500.h5"), model_with(4, 500));   // another model
  const auto files = train::list_checkpoints(model);
  REQUIRE(files.size() == 2);
  CHECK(files[0].step == 30);
  CHECK(files[1].step == 200);
  CHECK(train::latest_checkpoint(model) == train::checkpoint_path(model, 200));

  io::save_checkpoint(model, model_with(5, 150));   // an older final model
  CHECK(train::latest_checkpoint(model) == train::checkpoint_path(model, 200));
  io::save_checkpoint(model, model_with(5, 250));
  CHECK(train::latest_checkpoint(model) == model);

  const auto removed = train::rotate_checkpoints(model, 1);
  REQUIRE(removed.size() == 1);
  CHECK(removed[0] == train::checkpoint_path(model, 30));
  CHECK(train::list_checkpoints(model).size() == 1);
}

TEST_CASE("average_checkpoints takes the element-wise mean of the parameters", "[io][checkpoints]") {
  test::TempDir dir;
  const std::vector<std::string> paths = {dir.file("a.h5"), dir.file("b.h5"), dir.file("c.h5")};
  io::save_checkpoint(paths[0], model_with(1.0f, 10));
  io::save_checkpoint(paths[1], model_with(2.0f, 20));
  io::save_checkpoint(paths[2], model_with(6.0f, 30));
  const io::Checkpoint avg = train::average_checkpoints(paths);
  CHECK_THAT(avg.params.at("enc/w"), test::close_to(Tensor::full({2, 3}, 3.0f), 1e-7));
  CHECK_THAT(avg.params.at("enc/b"), test::close_to(Tensor::from({2}, {3.0f, -3.0f}), 1e-7));
  CHECK(avg.params.at("positions").idata()[2] == 2);
  CHECK(avg.optimizer.empty());
  CHECK(avg.step == 30);   // the last file's state
  CHECK(avg.config_int("d_model") == 4);

  auto other = model_with(1.0f, 40);
  other.params["enc/w"] = Tensor({3, 2});
  io::save_checkpoint(dir.file("d.h5"), other);
  REQUIRE_THROWS_WITH(train::average_checkpoints({paths[0], dir.file("d.h5")}),
                      Contains("d.h5: parameter '/params/enc/w' is float32 [3, 2], expected float32 [2, 3]"));
  other = model_with(1.0f, 40);
  other.params.erase("enc/b");
  io::save_checkpoint(dir.file("e.h5"), other);
  REQUIRE_THROWS_WITH(train::average_checkpoints({paths[0], dir.file("e.h5")}),
                      Contains("e.h5: no parameter '/params/enc/b'"));
  REQUIRE_THROWS_AS(train::average_checkpoints({}), ConfigError);
}

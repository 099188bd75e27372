// attn-memnet as a user runs it: attn-data babi -> train -> eval -> answer -> attn-plot table,
// through files; resumption to the same bits with linear start (whose state is the task's);
// exit codes and messages for bad data and bad options. $ATTN_BIN_DIR is the build's apps
// folder (set by tests/CMakeLists.txt); every file goes to a TempDir. The bAbI files come from
// the shared data folder (test::data_dir()); without them the data cases are skipped. Models are
// tiny (embedding 8) and train a few epochs.
#include <cmath>
#include <filesystem>
#include <string>

#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

using Result = test::ShellResult;

Result run(const test::TempDir& dir, const std::string& command) {
  return test::run_tools(dir, command, {{"{data}", "attn-data"}, {"{memnet}", "attn-memnet"}, {"{plot}", "attn-plot"}});
}

// The bAbI folder (with en/), or "" after reporting the case skipped.
std::string babi_dir() {
  const auto root = test::data_dir();
  if (root.empty() || !std::filesystem::exists(root / "babi" / "en" / "qa1_single-supporting-fact_train.txt")) {
    test::skip_test("the bAbI data is not in " + (root.empty() ? std::string("ATTN_DATA_DIR") : root.string()));
    return "";
  }
  return (root / "babi").string();
}

// Task 1 of the 1k set into d.h5.
bool import_task1(const test::TempDir& dir, const std::string& babi) {
  const Result r = run(dir, "{data} babi --task 1 --data-dir '" + babi + "' --out d.h5 --quiet");
  INFO(r.err);
  return r.code == 0;
}

const char* kTinyAnySeed = "--embedding-size 8 --batch-size 32 --threads 1 --quiet";
const std::string kTiny = std::string(kTinyAnySeed) + " --seed 2";

}  // namespace

TEST_CASE("attn-memnet --help lists the verbs, train --help the options with their values", "[cli][attn-memnet]") {
  test::TempDir dir;
  const Result help = run(dir, "{memnet} --help");
  CHECK(help.code == 0);
  for (const char* verb : {"train", "eval", "answer"}) CHECK_THAT(help.out, Contains(std::string("  ") + verb + " "));
  const Result train_help = run(dir, "{memnet} train --help");
  CHECK(train_help.code == 0);
  for (const char* flag : {"--hops N (=3)", "--embedding-size N (=20)", "--encoding bow|position|position-fixed (=position)",
                           "--temporal-encoding", "--no-temporal-encoding", "--tying adjacent|layerwise (=adjacent)",
                           "--memory-size N (=50)", "--empty-slots", "--linear-start", "--linear-start-epochs N (=0)", "--random-noise",
                           "--batch-size N (=32)",
                           "--epochs N (=100)", "--optimizer sgd|rmsprop|adam|adamw (=sgd)", "--lr X (=0.32)",
                           "--lr-decay-every N (=25)", "--clip X (=1.25)", "--resume", "0.01 x 32", "--repeats N (=1)"})
    CHECK_THAT(train_help.out, Contains(flag));
  const Result answer_help = run(dir, "{memnet} answer --help");
  CHECK(answer_help.code == 0);
  CHECK_THAT(answer_help.out, Contains("attn-plot table OUT --dataset /attention/support_hops"));
}

TEST_CASE("attn-memnet: babi task 1 -> train -> eval -> answer -> attn-plot table, through files", "[cli][attn-memnet]") {
  const std::string babi = babi_dir();
  if (babi.empty()) return;
  test::TempDir dir;
  REQUIRE(import_task1(dir, babi));
  const Result train = run(dir, "{memnet} train --data d.h5 --model m.h5 --epochs 2 --hops 2 --random-noise " +
                                    std::string(kTiny));
  INFO(train.err);
  REQUIRE(train.code == 0);
  CHECK_THAT(train.out, Contains("2 epochs") && Contains("accuracy") && Contains("questions/s"));
  {
    const io::File m = io::File::open_read(dir.file("m.h5"));
    CHECK(m.attr_string("/", "kind") == "memnet");
    CHECK(m.attr_int("/config", "hops") == 2);
    CHECK(m.attr_int("/config", "memory_size") == 50);
    CHECK(m.attr_string("/config", "encoding") == "position");
    CHECK(m.attr_int("/config", "temporal") == 1);
    CHECK(m.attr_string("/config", "optimizer") == "sgd");
    CHECK(m.read("/metrics/valid_error").numel() == 2);
    CHECK(m.read("/metrics/valid_accuracy").numel() == 2);
    CHECK(m.read_strings("/vocab/words").size() > 10);
    CHECK_FALSE(m.has_attr("/state", "linear_start"));   // trained without the start phase
  }
  const Result eval = run(dir, "{memnet} eval --model m.h5 --data d.h5 --split test");
  INFO(eval.err);
  REQUIRE(eval.code == 0);
  CHECK_THAT(eval.out, Contains("attn-memnet eval: test: 1000 questions: loss ") && Contains("accuracy") &&
                           Contains("error"));

  const Result answer = run(dir, "{memnet} answer --model m.h5 --data d.h5 --split test --out a.h5 --quiet");
  INFO(answer.err);
  REQUIRE(answer.code == 0);
  {
    const io::File a = io::File::open_read(dir.file("a.h5"));
    CHECK(a.attr_string("/", "kind") == "memnet-answers");
    const Tensor hops = a.read("/attention/hops"), story = a.read("/story", DType::i32);
    const Tensor len = a.read("/story_len", DType::i32), pred = a.read("/predictions", DType::i32);
    const Tensor answer_ids = a.read("/answer", DType::i32), correct = a.read("/correct", DType::i32);
    REQUIRE(hops.rank() == 3);
    CHECK(hops.dim(0) == 1000);
    CHECK(hops.dim(1) == 2);
    CHECK(hops.dim(2) == story.dim(1));
    CHECK(a.exists("/support"));
    CHECK(a.exists("/question"));
    CHECK(a.exists("/task"));
    CHECK(a.read_strings("/vocab/words").size() > 10);
    // Every hop's attention sums to 1 over the story's sentences and is 0 past them.
    int64_t right = 0;
    const int64_t Ms = hops.dim(2);
    for (int64_t n = 0; n < 1000; ++n) {
      for (int64_t h = 0; h < 2; ++h) {
        double sum = 0;
        for (int64_t i = 0; i < Ms; ++i) {
          const float p = hops.at((n * 2 + h) * Ms + i);
          if (i >= len.idata()[n]) CHECK(p == 0.0f);
          sum += p;
        }
        CHECK(sum == Approx(1.0).margin(1e-4));
      }
      CHECK(correct.idata()[n] == (pred.idata()[n] == answer_ids.idata()[n] ? 1 : 0));
      right += correct.idata()[n];
    }
    CHECK(a.attr_double("/metrics", "accuracy") == Approx(right / 1000.0));
    // The support table: the supporting facts' slots, then the hops.
    const Tensor table = a.read("/attention/support_hops"), support = a.read("/support", DType::i32);
    REQUIRE(table.shape() == Shape{1000, 3, Ms});
    for (int64_t n = 0; n < 1000; n += 97) {
      const int32_t fact = support.idata()[n * support.dim(1)];   // task 1: one supporting fact
      REQUIRE(fact >= 0);
      for (int64_t i = 0; i < Ms; ++i) {
        CHECK(table.at(n * 3 * Ms + i) == (i == fact ? 1.0f : 0.0f));
        CHECK(table.at((n * 3 + 2) * Ms + i) == hops.at((n * 2 + 1) * Ms + i));
      }
    }
    const Tensor per_task = a.read("/metrics/task_accuracy");
    REQUIRE(per_task.numel() == 20);
    CHECK(per_task.at(0) == Approx(right / 1000.0));
    CHECK(std::isnan(per_task.at(1)));
  }
  const Result table = run(dir, "{plot} table a.h5 --dataset /attention/support_hops --index 3 --transpose "
                                "--row-ids /story --row-vocab /vocab/words --col-labels 'support|hop 1|hop 2' "
                                "--out hops.svg --quiet");
  INFO(table.err);
  CHECK(table.code == 0);
  REQUIRE(std::filesystem::exists(dir.file("hops.svg")));
  CHECK(std::filesystem::file_size(dir.file("hops.svg")) > 500);
}

TEST_CASE("attn-memnet train --resume with linear start continues to the same bits", "[cli][attn-memnet]") {
  const std::string babi = babi_dir();
  if (babi.empty()) return;
  test::TempDir dir;
  REQUIRE(import_task1(dir, babi));
  // 900 training questions: 29 batches an epoch; the part stops inside the third epoch.
  const std::string opts = std::string(kTiny) + " --linear-start --random-noise --lr 0.05 --epochs 4";
  REQUIRE(run(dir, "{memnet} train --data d.h5 --model full.h5 " + opts).code == 0);
  REQUIRE(run(dir, "{memnet} train --data d.h5 --model part.h5 --steps 70 " + opts).code == 0);
  CHECK_FALSE(test::same_params(dir.file("full.h5"), dir.file("part.h5")));
  const Result resumed = run(dir, "{memnet} train --data d.h5 --model part.h5 --resume " + opts);
  INFO(resumed.err);
  REQUIRE(resumed.code == 0);
  CHECK(test::same_params(dir.file("full.h5"), dir.file("part.h5")));
  const io::File f = io::File::open_read(dir.file("full.h5")), p = io::File::open_read(dir.file("part.h5"));
  CHECK(f.attr_int("/state", "linear_start") == p.attr_int("/state", "linear_start"));
  CHECK(f.attr_double("/state", "linear_start_best") == p.attr_double("/state", "linear_start_best"));
  CHECK(f.attr_double("/state", "linear_start_best") < 10.0);   // a validation loss was recorded
}

TEST_CASE("attn-memnet exit codes: bad data and bad options", "[cli][attn-memnet]") {
  test::TempDir dir;
  // An NTM copy data set is no bAbI data set.
  REQUIRE(run(dir, "{data} copy --width 4 --n 10 --valid-n 4 --test-n 4 --out copy.h5 --quiet").code == 0);
  const Result copy = run(dir, "{memnet} train --data copy.h5 --model x.h5 --steps 1 --quiet");
  CHECK(copy.code == 3);
  CHECK_THAT(copy.err, Contains("copy.h5") && Contains("/vocab/words"));
  // Usage errors.
  const Result encoding = run(dir, "{memnet} train --data copy.h5 --model x.h5 --encoding onehot --quiet");
  CHECK(encoding.code == 2);
  CHECK_THAT(encoding.err, Contains("bow") && Contains("position"));
  CHECK(run(dir, "{memnet} train --data copy.h5 --model x.h5 --tying none --quiet").code == 2);
  CHECK(run(dir, "{memnet} train --data copy.h5 --model x.h5 --hops 0 --quiet").code == 2);
  const Result model = run(dir, "{memnet} eval --model none.h5 --data copy.h5");
  CHECK(model.code == 3);
  CHECK_THAT(model.err, Contains("none.h5"));

  const std::string babi = babi_dir();
  if (babi.empty()) return;
  REQUIRE(import_task1(dir, babi));
  const Result both = run(dir, "{memnet} train --data d.h5 --model x.h5 --temporal-encoding --no-temporal-encoding --quiet");
  CHECK(both.code == 2);
  CHECK_THAT(both.err, Contains("not both"));
  // A model of task 1 on another task's data set (another vocabulary).
  REQUIRE(run(dir, "{memnet} train --data d.h5 --model m.h5 --steps 1 " + std::string(kTiny)).code == 0);
  REQUIRE(run(dir, "{data} babi --task 2 --data-dir '" + babi + "' --out d2.h5 --quiet").code == 0);
  const Result other = run(dir, "{memnet} eval --model m.h5 --data d2.h5");
  CHECK(other.code == 3);
  CHECK_THAT(other.err, Contains("d2.h5: dataset '/vocab/words'"));
  // A model file of another family.
  const Result ntm_data = run(dir, "{memnet} eval --model copy.h5 --data d.h5");
  CHECK(ntm_data.code == 3);
  CHECK_THAT(ntm_data.err, Contains("copy.h5"));
}

TEST_CASE("attn-memnet train --repeats K keeps the run of the best validation error and records every run", "[cli][attn-memnet]") {
  const std::string babi = babi_dir();
  if (babi.empty()) return;
  test::TempDir dir;
  REQUIRE(import_task1(dir, babi));
  const Result r =
      run(dir, "{memnet} train --data d.h5 --model m.h5 --repeats 3 --seed 4 --epochs 2 " + std::string(kTinyAnySeed));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("run 3 (seed 6): valid error") && Contains("--repeats 3: kept run") &&
                        Contains("test_error over the runs: median"));
  const io::File s = io::File::open_read(dir.file("m.repeats.h5"));
  CHECK(s.attr_string("/", "kind") == "repeats");
  CHECK(s.attr_string("/", "selected_by") == "valid_error");
  const Tensor valid = s.read("/valid_error"), test = s.read("/test_error"), seeds = s.read("/seed", DType::i32);
  REQUIRE(valid.numel() == 3);
  REQUIRE(test.numel() == 3);
  CHECK(seeds.idata()[2] == 6);
  const int64_t kept = s.attr_int("/", "kept_run");
  REQUIRE(kept >= 1);
  REQUIRE(kept <= 3);
  for (int64_t k = 0; k < 3; ++k) {
    CHECK(valid.at(kept - 1) <= valid.at(k));
    CHECK(test.at(k) >= 0.0f);
    CHECK(std::filesystem::exists(dir.file("m.run" + std::to_string(k + 1) + ".h5")));
  }
  CHECK(s.attr_double("/", "test_error_kept") == Approx(test.at(kept - 1)));
  CHECK(test::same_params(dir.file("m.h5"), dir.file("m.run" + std::to_string(kept) + ".h5")));
  // Each run is the single run of its seed.
  REQUIRE(run(dir, "{memnet} train --data d.h5 --model one.h5 --seed 5 --epochs 2 " + std::string(kTinyAnySeed)).code == 0);
  CHECK(test::same_params(dir.file("one.h5"), dir.file("m.run2.h5")));
  // Usage errors.
  CHECK(run(dir, "{memnet} train --data d.h5 --model m.h5 --repeats 0 --quiet").code == 2);
  const Result resume = run(dir, "{memnet} train --data d.h5 --model m.h5 --repeats 2 --resume --quiet");
  CHECK(resume.code == 2);
  CHECK_THAT(resume.err, Contains("--repeats does not combine with --resume"));
  const Result piped = run(dir, "{memnet} train --data d.h5 --model - --repeats 2 --quiet");
  CHECK(piped.code == 2);
  CHECK_THAT(piped.err, Contains("--repeats needs --model FILE (not -)"));
}

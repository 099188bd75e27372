// attn-ntm as a user runs it: attn-data copy -> train -> eval / run -> attn-plot weights, through
// files and through `-` pipes; resumption to the same bits (with a curriculum, whose level is
// the task's state); the LSTM baseline; exit codes and messages for bad data. $ATTN_BIN_DIR is
// the build's apps folder (set by tests/CMakeLists.txt); every file goes to a TempDir. Models
// are tiny (controller 16, memory 16 x 6) and train a few dozen steps.
#include <cmath>
#include <string>

#include "attn/data/sequence_data.hpp"
#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

using Result = test::ShellResult;

Result run(const test::TempDir& dir, const std::string& command) {
  return test::run_tools(dir, command, {{"{data}", "attn-data"}, {"{ntm}", "attn-ntm"}, {"{plot}", "attn-plot"}});
}

const char* kData = "{data} copy --width 4 --min-len 1 --max-len 4 --n 300 --valid-n 20 --test-n 20 --seed 3 --quiet";
const char* kTiny = "--controller-size 16 --memory 16,6 --epoch-size 40 --batch-size 4 --optimizer adam --lr 0.01 "
                    "--seed 2 --threads 1 --quiet";

}  // namespace

TEST_CASE("attn-ntm --help lists the verbs, train --help the options with their values", "[cli][attn-ntm]") {
  test::TempDir dir;
  const Result help = run(dir, "{ntm} --help");
  CHECK(help.code == 0);
  for (const char* verb : {"train", "eval", "run"}) CHECK_THAT(help.out, Contains(std::string("  ") + verb + " "));
  const Result train_help = run(dir, "{ntm} train --help");
  CHECK(train_help.code == 0);
  for (const char* flag : {"--controller lstm|ff (=lstm)", "--controller-size N (=100)", "--memory N,M (=128,20)",
                           "--read-heads N (=1)", "--write-heads N (=1)", "--shift-range N (=1)",
                           "--memory-init constant|learned|random (=constant)", "--baseline none|lstm (=none)",
                           "--batch-size N (=1)", "--curriculum", "--optimizer sgd|rmsprop|adam|adamw (=rmsprop)",
                           "--lr X (=1e-04)", "--clip-value X (=10)", "--resume"})
    CHECK_THAT(train_help.out, Contains(flag));
}

TEST_CASE("attn-ntm: copy data -> train -> eval, run -> attn-plot weights, through files and pipes", "[cli][attn-ntm]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  const Result train = run(dir, "{ntm} train --data d.h5 --model m.h5 --epochs 2 --read-heads 2 " + std::string(kTiny));
  INFO(train.err);
  REQUIRE(train.code == 0);
  CHECK_THAT(train.out, Contains("20 steps, 2 epochs") && Contains("bit error rate") && Contains("sequences/s"));
  {
    const io::File m = io::File::open_read(dir.file("m.h5"));
    CHECK(m.attr_string("/", "kind") == "ntm");
    CHECK(m.attr_int("/config", "read_heads") == 2);
    CHECK(m.attr_int("/config", "memory_rows") == 16);
    CHECK_FALSE(m.has_attr("/config", "memory"));   // the option, stored as the model's two fields
    CHECK(m.attr_string("/config", "optimizer") == "adam");
    CHECK(m.read("/metrics/valid_bit_error_rate").numel() == 2);
    CHECK(m.exists("/params/heads/read1/W"));
  }
  const Result eval = run(dir, "{ntm} eval --model m.h5 --data d.h5 --split test");
  INFO(eval.err);
  REQUIRE(eval.code == 0);
  CHECK_THAT(eval.out, Contains("attn-ntm eval: test: 20 sequences: cost ") && Contains("bits per sequence"));

  // run through a pipe into attn-plot, and into a file.
  const Result piped = run(dir, "{ntm} run --model m.h5 --data d.h5 --out - --quiet | {plot} weights - --index 1 "
                                "--inputs /inputs --outputs /outputs --write /write_weights --read /read_weights "
                                "--out w.png --quiet");
  INFO(piped.err);
  CHECK(piped.code == 0);
  CHECK(std::filesystem::file_size(dir.file("w.png")) > 1000);
  REQUIRE(run(dir, "{ntm} run --model m.h5 --data d.h5 --split valid --out r.h5 --quiet").code == 0);
  const io::File r = io::File::open_read(dir.file("r.h5"));
  CHECK(r.attr_string("/", "kind") == "ntm-run");
  const Tensor in_len = r.read("/input_len", DType::i32), tgt_len = r.read("/target_len", DType::i32);
  const Tensor rw = r.read("/read_weights"), ww = r.read("/write_weights"), out = r.read("/outputs");
  REQUIRE(rw.rank() == 4);
  CHECK(rw.dim(0) == 20);
  CHECK(rw.dim(2) == 2);    // two read heads
  CHECK(rw.dim(3) == 16);   // over 16 rows
  CHECK(ww.dim(2) == 1);
  CHECK(out.shape() == r.shape("/targets"));
  // Every weighting of a step an example runs sums to 1; steps after its end are zero.
  const int64_t T = rw.dim(1);
  for (int64_t n = 0; n < 20; ++n)
    for (int64_t t = 0; t < T; ++t) {
      double sum = 0;
      for (int64_t i = 0; i < 16; ++i) sum += rw.at(((n * T + t) * 2 + 1) * 16 + i);
      CHECK(sum == Approx(t < in_len.idata()[n] + tgt_len.idata()[n] ? 1.0 : 0.0).margin(1e-4));
    }
  CHECK(r.attr_int("/metrics", "sequences") == 20);
}

TEST_CASE("attn-ntm train --resume with a curriculum continues to the same bits", "[cli][attn-ntm]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  // A threshold of 1 admits the next length after every epoch: the level changes mid-run.
  const std::string opts = std::string(kTiny) + " --curriculum --curriculum-threshold 1 --memory-init random";
  REQUIRE(run(dir, "{ntm} train --data d.h5 --model full.h5 --epochs 4 " + opts).code == 0);
  REQUIRE(run(dir, "{ntm} train --data d.h5 --model part.h5 --epochs 4 --steps 25 " + opts).code == 0);
  CHECK_FALSE(test::same_params(dir.file("full.h5"), dir.file("part.h5")));
  const Result resumed = run(dir, "{ntm} train --data d.h5 --model part.h5 --epochs 4 --resume " + opts);
  INFO(resumed.err);
  REQUIRE(resumed.code == 0);
  CHECK(test::same_params(dir.file("full.h5"), dir.file("part.h5")));
  const io::File f = io::File::open_read(dir.file("full.h5"));
  CHECK(f.attr_int("/state", "curriculum_level") == 5);   // input lengths 2..5, one step up per epoch
}

TEST_CASE("attn-ntm shares the guards: resume refuses other data, an output that is the model is refused",
          "[cli][attn-ntm]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  REQUIRE(run(dir, "{data} copy --width 4 --min-len 1 --max-len 4 --n 300 --valid-n 20 --test-n 20 --seed 4 --quiet "
                   "--out other.h5").code == 0);
  REQUIRE(run(dir, "{ntm} train --data d.h5 --model m.h5 --steps 3 " + std::string(kTiny)).code == 0);
  const Result other = run(dir, "{ntm} train --data other.h5 --model m.h5 --steps 5 --resume " + std::string(kTiny));
  CHECK(other.code == 3);
  CHECK_THAT(other.err, Contains("m.h5: was trained on another training split than the one of 'other.h5'"));
  const Result allowed =
      run(dir, "{ntm} train --data other.h5 --model m.h5 --steps 5 --resume --allow-new-data " + std::string(kTiny));
  INFO(allowed.err);
  CHECK(allowed.code == 0);
  const Result same = run(dir, "{ntm} run --model m.h5 --data d.h5 --out m.h5 --quiet");
  CHECK(same.code == 2);
  CHECK_THAT(same.err, Contains("--out m.h5 is the same file as --model m.h5"));
}

TEST_CASE("attn-ntm --baseline lstm trains an LSTM of the NTM's size", "[cli][attn-ntm]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  const Result base = run(dir, "{ntm} train --data d.h5 --model b.h5 --epochs 1 --baseline lstm --baseline-layers 2 " +
                                   std::string(kTiny).substr(0, std::string(kTiny).size() - 8));   // without --quiet
  INFO(base.err);
  REQUIRE(base.code == 0);
  CHECK_THAT(base.err, Contains("the LSTM baseline: 2 layers of"));
  // Its size matches the NTM the same options describe (one controller layer of 16, memory 16 x 6).
  const std::string err = base.err;
  const auto count = [&](const std::string& after) {
    const size_t at = err.find(after);
    REQUIRE(at != std::string::npos);
    return std::stol(err.substr(at + after.size()));
  };
  const long lstm = count(" units, "), ntm = count("the NTM it stands in for: ");
  CHECK(lstm >= ntm);
  CHECK(lstm < ntm * 13 / 10);
  const io::File b = io::File::open_read(dir.file("b.h5"));
  CHECK(b.attr_int("/config", "read_heads") == 0);
  CHECK(b.attr_int("/config", "write_heads") == 0);
  CHECK(b.attr_int("/config", "controller_layers") == 2);
  CHECK_FALSE(b.exists("/params/heads"));
}

TEST_CASE("attn-ntm exit codes: bad data is refused naming the file and dataset", "[cli][attn-ntm]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  REQUIRE(run(dir, "{ntm} train --data d.h5 --model m.h5 --steps 2 " + std::string(kTiny)).code == 0);

  // Another width: the channels differ from the model's.
  REQUIRE(run(dir, "{data} copy --width 6 --n 10 --valid-n 4 --test-n 4 --out w6.h5 --quiet").code == 0);
  const Result width = run(dir, "{ntm} eval --model m.h5 --data w6.h5");
  CHECK(width.code == 3);
  CHECK_THAT(width.err, Contains("w6.h5: dataset '/test/inputs' has 7 channels, the model reads 5"));
  // A translation data set.
  REQUIRE(run(dir, "{data} reverse --n 10 --valid-n 4 --test-n 4 --out rev.h5 --quiet").code == 0);
  const Result tokens = run(dir, "{ntm} train --data rev.h5 --model x.h5 --steps 1 --quiet");
  CHECK(tokens.code == 3);
  CHECK_THAT(tokens.err, Contains("rev.h5: no dataset '/train/inputs'"));
  // NaN inputs.
  {
    io::File f = io::File::create(dir.file("nan.h5"));
    data::SequenceSplit s;
    s.inputs = Tensor({2, 3, 5});
    s.inputs.all().at(7) = NAN;
    s.input_len = Tensor::from_ints({2}, {3, 2});
    s.targets = Tensor({2, 2, 4});
    s.target_len = Tensor::from_ints({2}, {2, 1});
    data::write_sequence_split(f, "train", s);
    f.commit();
  }
  const Result nan = run(dir, "{ntm} train --data nan.h5 --model x.h5 --steps 1 --quiet");
  CHECK(nan.code == 3);
  CHECK_THAT(nan.err, Contains("nan.h5: dataset '/train/inputs' row 0 holds nan"));
  // Usage errors.
  const Result memory = run(dir, "{ntm} train --data d.h5 --model x.h5 --memory 16 --quiet");
  CHECK(memory.code == 2);
  CHECK_THAT(memory.err, Contains("--memory must be two positive integers N,M, got '16'"));
  CHECK(run(dir, "{ntm} train --data d.h5 --model x.h5 --memory-init zeros --quiet").code == 2);
  const Result model = run(dir, "{ntm} eval --model none.h5 --data d.h5");
  CHECK(model.code == 3);
  CHECK_THAT(model.err, Contains("none.h5"));
}

TEST_CASE("attn-ntm train --repeats: every tool's best-of-N, kept by the final validation cost", "[cli][attn-ntm]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  const Result r = run(dir, "{ntm} train --data d.h5 --model m.h5 --epochs 2 --repeats 2 " + std::string(kTiny));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("run 2 (seed 3): valid loss") && Contains("--repeats 2: kept run"));
  const io::File s = io::File::open_read(dir.file("m.repeats.h5"));
  CHECK(s.attr_string("/", "kind") == "repeats");
  CHECK(s.attr_string("/", "selected_by") == "valid_loss");
  const Tensor valid = s.read("/valid_loss");
  REQUIRE(valid.numel() == 2);
  const int64_t kept = s.attr_int("/", "kept_run");
  REQUIRE((kept == 1 || kept == 2));
  CHECK(valid.at(kept - 1) <= valid.at(2 - kept));
  CHECK(valid.at(0) != valid.at(1));   // two seeds, two runs
  CHECK(test::same_params(dir.file("m.h5"), dir.file("m.run" + std::to_string(kept) + ".h5")));
  CHECK(io::File::open_read(dir.file("m.run2.h5")).attr_int("/config", "seed") == 3);
  CHECK_FALSE(s.exists("/test_error"));   // attn-ntm reports no test scores
}

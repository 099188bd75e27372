// attn-transformer as a user runs it: attn-data reverse -> train -> eval / translate -> attn-bleu,
// through files and through `-` pipes; resumption from the command line; exit codes and
// messages. $ATTN_BIN_DIR is the build's apps folder (set by tests/CMakeLists.txt); every file
// goes to a TempDir. Models are tiny (D 16, one layer) and train a few steps.
#include <filesystem>
#include <string>

#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

using Result = test::ShellResult;

// Runs a shell command line in dir; "{data}", "{tf}" and "{bleu}" stand for the tools.
Result run(const test::TempDir& dir, const std::string& command) {
  return test::run_tools(dir, command, {{"{data}", "attn-data"}, {"{tf}", "attn-transformer"}, {"{bleu}", "attn-bleu"}});
}

const char* kData = "{data} reverse --vocab 10 --min-len 2 --max-len 6 --n 200 --valid-n 20 --test-n 20 --seed 3 --quiet";
const char* kTiny = "--d-model 16 --heads 2 --d-ff 32 --layers 1 --max-tokens 128 --warmup 4 --lr 0.01 --seed 2 --threads 1 --quiet";

}  // namespace

TEST_CASE("attn-transformer --help lists the verbs, train --help the options", "[cli][attn-transformer]") {
  test::TempDir dir;
  const Result help = run(dir, "{tf} --help");
  CHECK(help.code == 0);
  for (const char* verb : {"train", "eval", "translate", "generate", "average"})
    CHECK_THAT(help.out, Contains(std::string("  ") + verb + " "));
  const Result train_help = run(dir, "{tf} train --help");
  CHECK(train_help.code == 0);
  for (const char* flag : {"--d-model", "--heads", "--warmup", "--label-smoothing", "--resume", "--checkpoint-every"})
    CHECK_THAT(train_help.out, Contains(flag));
}

TEST_CASE("reverse data -> train -> eval, translate -> attn-bleu through files", "[cli][attn-transformer]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  const Result train = run(dir, "{tf} train --data d.h5 --model m.h5 --steps 6 --checkpoint-every 3 " + std::string(kTiny));
  INFO(train.err);
  REQUIRE(train.code == 0);
  CHECK_THAT(train.out, Contains("6 steps") && Contains("-> m.h5"));
  {
    const io::File m = io::File::open_read(dir.file("m.h5"));
    CHECK(m.attr_string("/", "format") == "attnlab/model");
    CHECK(m.attr_string("/", "kind") == "transformer");
    CHECK(m.attr_int("/state", "step") == 6);
    CHECK(m.attr_int("/config", "d_model") == 16);
    CHECK(m.read_strings("/vocab/tgt").size() == 10);
    CHECK(m.shape("/metrics/train_loss").size() == 1);
    CHECK(m.exists("/optimizer"));
    CHECK(std::filesystem::exists(dir.file("m.step000000003.h5")));
  }

  const Result eval = run(dir, "{tf} eval --model m.h5 --data d.h5 --split valid --quiet");
  INFO(eval.err);
  CHECK(eval.code == 0);
  CHECK_THAT(eval.out, Contains("perplexity") && Contains("sequence accuracy") && Contains("20 sentences"));

  const Result tr = run(dir, "{tf} translate --model m.h5 --data d.h5 --split test --dump-attention --out p.h5 --quiet");
  INFO(tr.err);
  REQUIRE(tr.code == 0);
  CHECK_THAT(tr.out, Contains("20 sentences of test: sequence accuracy"));
  {
    const io::File p = io::File::open_read(dir.file("p.h5"));
    CHECK(p.attr_string("/", "format") == "attnlab/output");
    CHECK(p.shape("/predictions")[0] == 20);
    CHECK(p.shape("/predictions_len") == Shape{20});
    CHECK(p.read_strings("/predictions_text").size() == 20);
    const Shape cross = p.shape("/attention/cross/layer0");   // [N, NH, T, S]
    REQUIRE(cross.size() == 4);
    CHECK(cross[0] == 20);
    CHECK(cross[1] == 2);
    CHECK(cross[3] == 6);
    CHECK(p.shape("/attention/self/layer0")[2] == cross[2]);
    CHECK(p.has_attr("/metrics", "sequence_accuracy"));
  }
  const Result bleu = run(dir, "{bleu} --hyp p.h5 --ref d.h5 --split test --quiet");
  INFO(bleu.err);
  CHECK(bleu.code == 0);
  CHECK_THAT(bleu.out, Contains("BLEU = "));

  const Result avg = run(dir, "{tf} average --inputs m.step000000003.h5 m.h5 --out avg.h5 --quiet");
  INFO(avg.err);
  CHECK(avg.code == 0);
  CHECK(run(dir, "{tf} eval --model avg.h5 --data d.h5 --split test --quiet").code == 0);
}

TEST_CASE("the same chain through standard streams", "[cli][attn-transformer]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  const Result train = run(dir, std::string(kData) + " --out - | {tf} train --data - --model m.h5 --steps 3 " + kTiny);
  INFO(train.err);
  REQUIRE(train.code == 0);
  const Result chain = run(dir, "{tf} translate --model m.h5 --data d.h5 --out - --quiet | {bleu} --hyp - --ref d.h5 --split test --quiet");
  INFO(chain.err);
  CHECK(chain.code == 0);
  CHECK_THAT(chain.out, Contains("BLEU = "));
}

TEST_CASE("train --resume continues to the same bits as an uninterrupted run", "[cli][attn-transformer]") {
  test::TempDir dir;
  REQUIRE(run(dir, std::string(kData) + " --out d.h5").code == 0);
  REQUIRE(run(dir, "{tf} train --data d.h5 --model full.h5 --steps 8 " + std::string(kTiny)).code == 0);
  REQUIRE(run(dir, "{tf} train --data d.h5 --model part.h5 --steps 5 " + std::string(kTiny)).code == 0);
  CHECK_FALSE(test::same_params(dir.file("full.h5"), dir.file("part.h5")));
  const Result resumed = run(dir, "{tf} train --data d.h5 --model part.h5 --steps 8 --resume " + std::string(kTiny));
  INFO(resumed.err);
  REQUIRE(resumed.code == 0);
  CHECK(test::same_params(dir.file("full.h5"), dir.file("part.h5")));
}

TEST_CASE("a masked LM (arch mlm) reads the sources with the source vocabulary when the two sides differ", "[cli][attn-transformer]") {
  test::TempDir dir;
  // 40 source words, 2 target words: the masked LM must size and check its vocabulary by /vocab/src.
  std::string src, tgt;
  for (int i = 0; i < 60; ++i) {
    for (const int id : {i % 40, (i * 7) % 40, (i * 3) % 40}) src.append("w").append(std::to_string(id)).append(" ");
    src.back() = '\n';
    tgt += "x y\n";
  }
  test::write_text(dir.file("src.txt"), src);
  test::write_text(dir.file("tgt.txt"), tgt);
  REQUIRE(run(dir, "{data} parallel --src-file src.txt --tgt-file tgt.txt --valid-n 10 --min-freq 1 --out p.h5 --quiet").code == 0);
  const std::string opts = " --arch mlm " + std::string(kTiny);
  const Result trained = run(dir, "{tf} train --data p.h5 --model m.h5 --steps 6" + opts);
  INFO(trained.err);
  REQUIRE(trained.code == 0);
  const io::File m = io::File::open_read(dir.file("m.h5"));
  CHECK(m.attr_int("/config", "tgt_vocab") == 44);   // the 40 source words and the 4 reserved ids
  const Result eval = run(dir, "{tf} eval --model m.h5 --data p.h5 --split valid --quiet");
  INFO(eval.err);
  CHECK(eval.code == 0);
  REQUIRE(run(dir, "{tf} train --data p.h5 --model part.h5 --steps 3" + opts).code == 0);
  const Result resumed = run(dir, "{tf} train --data p.h5 --model part.h5 --steps 6 --resume" + opts);
  INFO(resumed.err);
  CHECK(resumed.code == 0);
  CHECK(test::same_params(dir.file("m.h5"), dir.file("part.h5")));
}

TEST_CASE("attn-transformer exit codes: usage 2, bad input 3 naming the file and dataset", "[cli][attn-transformer]") {
  test::TempDir dir;
  const Result heads = run(dir, "{tf} train --data d.h5 --model m.h5 --heads 0");
  CHECK(heads.code == 2);
  CHECK_THAT(heads.err, Contains("--heads must be > 0, got 0"));
  CHECK(run(dir, "{tf} train --data d.h5").code == 2);   // no --model
  CHECK(run(dir, "{tf} train --data d.h5 --model m.h5 --arch rnn").code == 2);

  const Result missing = run(dir, "{tf} train --data none.h5 --model m.h5");
  CHECK(missing.code == 3);
  CHECK_THAT(missing.err, Contains("none.h5"));

  REQUIRE(run(dir, "{data} copy --n 4 --valid-n 2 --test-n 2 --out copy.h5 --quiet").code == 0);
  const Result wrong = run(dir, "{tf} train --data copy.h5 --model m.h5 --steps 1");
  CHECK(wrong.code == 3);
  CHECK_THAT(wrong.err, Contains("copy.h5"));

  const Result no_model = run(dir, "{tf} translate --model none.h5 --data copy.h5 --out p.h5");
  CHECK(no_model.code == 3);
  CHECK_THAT(no_model.err, Contains("none.h5"));
}

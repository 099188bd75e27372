// attn-caption as a user runs it: attn-data shapes -> train -> eval -> caption -> attn-plot
// overlay, through files and `-`; resumption to the same bits; exit codes and messages for bad
// data and bad options; and, with the MNIST test digits of the shared data folder, a captioner
// that learns 1-digit strips. $ATTN_BIN_DIR is the build's apps folder (set by
// tests/CMakeLists.txt); every file goes to a TempDir.
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
  return test::run_tools(dir, command, {{"{data}", "attn-data"}, {"{caption}", "attn-caption"}, {"{plot}", "attn-plot"}});
}

// A small shapes set (48 x 48 scenes, 9-word captions) in d.h5.
void make_shapes(const test::TempDir& dir) {
  const Result r = run(dir, "{data} shapes --n 64 --valid-n 16 --test-n 16 --out d.h5 --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
}

const char* kTiny =
    "--encoder conv4x3,pool4,conv8x3,pool2 --embed-dim 8 --hidden 8 --attention-dim 8 --batch-size 16 --threads 1 "
    "--quiet";

}  // namespace

TEST_CASE("attn-caption --help lists the verbs, train --help the options with their values", "[cli][attn-caption]") {
  test::TempDir dir;
  const Result help = run(dir, "{caption} --help");
  CHECK(help.code == 0);
  for (const char* verb : {"train", "eval", "caption"}) CHECK_THAT(help.out, Contains(std::string("  ") + verb + " "));
  const Result train_help = run(dir, "{caption} train --help");
  CHECK(train_help.code == 0);
  for (const char* flag : {"--encoder LIST (=conv32x3,pool2,conv64x3,pool2)", "--embed-dim N (=64)", "--hidden N (=128)",
                           "--attention-dim N (=64)", "--attention soft|mean (=soft)", "--no-gate", "--alpha-c L (=1)",
                           "--alpha-entropy G (=0)", "--alpha-entropy-epochs N (=0)", "--dropout P (=0)", "--batch-size N (=32)", "--optimizer sgd|rmsprop|adam|adamw (=adam)",
                           "--resume", "--repeats N (=1)"})
    CHECK_THAT(train_help.out, Contains(flag));
  const Result caption_help = run(dir, "{caption} caption --help");
  CHECK(caption_help.code == 0);
  for (const char* flag : {"--beam N (=1)", "--max-len N (=30)", "attn-plot overlay OUT --index 0"})
    CHECK_THAT(caption_help.out, Contains(flag));
}

TEST_CASE("attn-caption: shapes -> train -> eval -> caption -> attn-plot overlay, through files and pipes",
          "[cli][attn-caption]") {
  test::TempDir dir;
  make_shapes(dir);
  const Result train =
      run(dir, "{caption} train --data d.h5 --model m.h5 --epochs 2 --alpha-entropy 0.05 " + std::string(kTiny));
  INFO(train.err);
  REQUIRE(train.code == 0);
  CHECK_THAT(train.out, Contains("2 epochs") && Contains("sequence accuracy") && Contains("images/s"));
  {
    const io::File m = io::File::open_read(dir.file("m.h5"));
    CHECK(m.attr_string("/", "kind") == "captioner");
    CHECK(m.attr_string("/config", "encoder") == "conv4x3,pool4,conv8x3,pool2");
    CHECK(m.attr_int("/config", "channels") == 3);
    CHECK(m.attr_int("/config", "gate") == 1);
    CHECK(m.attr_double("/config", "alpha_entropy") == 0.05);
    CHECK(m.read_strings("/vocab/tgt").size() == 17);
    CHECK(m.shape("/metrics/valid_sequence_accuracy") == Shape{2});
    CHECK(m.shape("/params/decoder/attention/U") == Shape{8, 8});
  }
  const Result eval = run(dir, "{caption} eval --model m.h5 --data d.h5 --threads 1");
  INFO(eval.err);
  REQUIRE(eval.code == 0);
  CHECK_THAT(eval.out, Contains("test: 16 images: loss") && Contains("attention correctness") &&
                           Contains("greedy: sequence accuracy") && Contains("BLEU-1..4"));

  // The data set through a pipe, the captions to a file; beam search.
  const Result cap = run(dir, "cat d.h5 | {caption} caption --model m.h5 --data - --beam 3 --out c.h5 --quiet");
  INFO(cap.err);
  REQUIRE(cap.code == 0);
  const io::File c = io::File::open_read(dir.file("c.h5"));
  CHECK(c.attr_string("/", "kind") == "captions");
  const Shape att = c.shape("/attention");
  REQUIRE(att.size() == 4);
  CHECK((att[0] == 16 && att[2] == 6 && att[3] == 6));   // 48 x 48 after pool4 and pool2
  const Tensor a = c.read("/attention"), len = c.read("/predictions_len");
  for (int64_t i = 0; i < 16; ++i)
    for (int64_t t = 0; t < att[1]; ++t) {
      double sum = 0;
      for (int64_t k = 0; k < att[2] * att[3]; ++k) sum += a.at((i * att[1] + t) * att[2] * att[3] + k);
      CHECK(sum == Approx(t < len.idata()[i] ? 1.0 : 0.0).margin(1e-4));
    }
  CHECK(c.shape("/images") == Shape{16, 3, 48, 48});
  CHECK(c.has_attr("/metrics", "bleu4"));

  const Result plot = run(dir, "{plot} overlay c.h5 --index 0 --image /images --attention /attention --word-ids "
                               "/predictions --word-vocab /vocab/tgt --out looked.png --quiet");
  INFO(plot.err);
  CHECK(plot.code == 0);
  CHECK(std::filesystem::file_size(dir.file("looked.png")) > 1000);
}

TEST_CASE("attn-caption train --resume continues to the same bits", "[cli][attn-caption]") {
  test::TempDir dir;
  make_shapes(dir);
  // 4 steps an epoch. Dropout, resumed at the epoch's end; and the entropy penalty over the first
  // epoch only, resumed after it went off (a resumed run that turned it on again would differ).
  for (const auto& [options, steps] : {std::pair{"--dropout 0.2", "4"},
                                       std::pair{"--alpha-entropy 0.5 --alpha-entropy-epochs 1", "6"}}) {
    INFO(options);
    const std::string base =
        "{caption} train --data d.h5 --epochs 2 --checkpoint-every 2 " + std::string(options) + " " + kTiny;
    REQUIRE(run(dir, base + " --model full.h5").code == 0);
    REQUIRE(run(dir, base + " --model part.h5 --steps " + steps).code == 0);
    const Result resumed = run(dir, base + " --model part.h5 --resume part.h5");
    INFO(resumed.err);
    REQUIRE(resumed.code == 0);
    const io::File full = io::File::open_read(dir.file("full.h5")), part = io::File::open_read(dir.file("part.h5"));
    for (const std::string& p : full.list_datasets("/params")) {
      INFO(p);
      const Tensor x = full.read("/params/" + p), y = part.read("/params/" + p);
      REQUIRE(x.numel() == y.numel());
      CHECK(std::equal(x.values().begin(), x.values().end(), y.values().begin()));
    }
    // The penalty's start phase ended after its epochs; without it, no phase and the penalty on.
    if (std::string(options).find("entropy") == std::string::npos)
      CHECK_FALSE(full.has_attr("/state", "entropy_penalty"));
    else
      CHECK(full.attr_int("/state", "entropy_penalty") == 0);
  }
}

TEST_CASE("attn-caption: bad data and options exit 2 or 3 with a message naming the file", "[cli][attn-caption]") {
  test::TempDir dir;
  make_shapes(dir);
  // A translation data set is not a captioning one.
  REQUIRE(run(dir, "{data} reverse --n 50 --out rev.h5 --quiet").code == 0);
  const Result wrong = run(dir, "{caption} train --data rev.h5 --model m.h5 " + std::string(kTiny));
  CHECK(wrong.code == 3);
  CHECK_THAT(wrong.err, Contains("rev.h5") && Contains("/train/images"));
  // An encoder that leaves nothing of the image, a bad encoder item: usage errors.
  const Result pools = run(dir, "{caption} train --data d.h5 --model m.h5 --encoder pool8,pool8 --quiet");
  CHECK(pools.code == 2);
  CHECK_THAT(pools.err, Contains("leaves no location of a 48 x 48 image"));
  const Result item = run(dir, "{caption} train --data d.h5 --model m.h5 --encoder conv8x3,relu --quiet");
  CHECK(item.code == 2);
  CHECK_THAT(item.err, Contains("encoder item 'relu'"));
  CHECK(run(dir, "{caption} train --data d.h5 --model m.h5 --alpha-c -1 --quiet").code == 2);
  CHECK(run(dir, "{caption} train --data d.h5 --model m.h5 --alpha-entropy -1 --quiet").code == 2);
  const Result epochs = run(dir, "{caption} train --data d.h5 --model m.h5 --alpha-entropy-epochs 2 --quiet");
  CHECK(epochs.code == 2);
  CHECK_THAT(epochs.err, Contains("--alpha-entropy-epochs applies with --alpha-entropy > 0"));
  // The mean ablation has no attention weights to penalise and no gate to leave out.
  for (const char* option : {"--alpha-c 0.5", "--no-gate", "--alpha-entropy 0.1"}) {
    const Result mean = run(dir,
                            "{caption} train --data d.h5 --model m.h5 --attention mean --quiet " + std::string(option));
    CHECK(mean.code == 2);
    CHECK_THAT(mean.err, Contains(std::string(option).substr(0, std::string(option).find(' '))) &&
                             Contains("applies to --attention soft only"));
  }
  CHECK(run(dir, "{caption} train --data d.h5 --model mean.h5 --attention mean --steps 1 " + std::string(kTiny)).code ==
        0);
  // A model on images of another size: the model file and the data set named.
  REQUIRE(run(dir, "{caption} train --data d.h5 --model m.h5 --steps 1 " + std::string(kTiny)).code == 0);
  REQUIRE(run(dir, "{data} shapes --n 8 --valid-n 4 --test-n 4 --height 40 --width 40 --max-size 12 --out small.h5 --quiet").code == 0);
  const Result size = run(dir, "{caption} eval --model m.h5 --data small.h5 --threads 1");
  CHECK(size.code == 3);
  CHECK_THAT(size.err, Contains("small.h5") && Contains("[4, 3, 40, 40]") && Contains("[4, 3, 48, 48]"));
  const Result missing = run(dir, "{caption} eval --model nothere.h5 --data d.h5");
  CHECK(missing.code != 0);
  CHECK_THAT(missing.err, Contains("nothere.h5"));
}

TEST_CASE("attn-caption learns 1-digit MNIST strips to 95% sequence accuracy", "[cli][attn-caption]") {
  const auto root = test::data_dir();
  if (root.empty() || !std::filesystem::exists(root / "mnist" / "t10k-images-idx3-ubyte.gz")) {
    test::skip_test("the MNIST files are not in " + (root.empty() ? std::string("ATTN_DATA_DIR") : root.string()));
    return;
  }
  test::TempDir dir;
  const Result data = run(dir, "{data} mnist-strips --data-dir '" + (root / "mnist").string() +
                                   "' --min-digits 1 --max-digits 1 --width 40 --n 8000 --valid-n 200 --test-n 500 "
                                   "--warp-rotate 10 --warp-scale 0.1 --warp-shear 0.1 --out s.h5 --quiet");
  INFO(data.err);
  REQUIRE(data.code == 0);
  // A small model on 32 x 40 strips: 4,000 steps of 32 images (about 40 s on one core). With half
  // the steps and unwarped digits it ended at 93-97% by seed and by the rounding of the build
  // (valid 92-96.5%); this way at 96.6-98.0% on test over seeds 1-4 (valid 95.5-97.5%).
  const Result train = run(dir, "{caption} train --data s.h5 --model m.h5 --epochs 16 --encoder "
                                "conv16x3,pool2,conv32x3,pool2,conv64x3,pool2 --embed-dim 16 --hidden 32 "
                                "--attention-dim 16 --lr 2e-3 --threads 1 --quiet");
  INFO(train.err);
  REQUIRE(train.code == 0);
  const Result eval = run(dir, "{caption} eval --model m.h5 --data s.h5 --threads 1");
  INFO(eval.out);
  REQUIRE(eval.code == 0);
  const auto at = eval.out.find("greedy: sequence accuracy ");
  REQUIRE(at != std::string::npos);
  const double accuracy = std::stod(eval.out.substr(at + 26));
  CHECK(accuracy >= 0.95);
}

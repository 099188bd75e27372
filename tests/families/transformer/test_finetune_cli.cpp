// The two stages from the shell: attn-data text -> attn-transformer train --arch lm / mlm ->
// finetune -> classify / eval, with --freeze-encoder and --aux-lm; the exit codes of a
// pre-trained model of the wrong architecture or vocabulary; and, with the shared data, bAbI task
// 1 through attn-data babi-cls. The labelled set of the first cases is written by the test with
// the text set's vocabulary: sentences of words a4..a11 (class a) or b12..b19 (class b).
#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "attn/data/vocab.hpp"
#include "attn/families/transformer/labelled_data.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

using Result = test::ShellResult;

Result run(const test::TempDir& dir, const std::string& command) {
  return test::run_tools(dir, command, {{"{data}", "attn-data"}, {"{tf}", "attn-transformer"}});
}

const char* kTiny = " --d-model 16 --heads 2 --d-ff 32 --layers 1 --warmup 4 --lr 0.01 --seed 2 --threads 1 --quiet";
const char* kFine = " --batch-size 8 --lr 0.003 --seed 3 --threads 1 --quiet";

// Sentence i of the group text: 3 to 6 words of group a (i even) or b.
std::vector<std::string> sentence(int i) {
  std::vector<std::string> words;
  const int group = i % 2, len = 3 + (i * 7) % 4;
  for (int t = 0; t < len; ++t) {
    std::string word(1, group ? 'b' : 'a');   // appended, not concatenated: GCC 12's -Wrestrict
    word += std::to_string(4 + 8 * group + (i * 5 + t * 3) % 8);
    words.push_back(word);
  }
  return words;
}

void write_corpus(const test::TempDir& dir, const std::string& name, int n, const std::string& prefix = "") {
  std::string text;
  for (int i = 0; i < n; ++i) {
    for (const std::string& w : sentence(i)) text.append(prefix).append(w).append(" ");
    text.back() = '\n';
  }
  test::write_text(dir.file(name), text);
}

// A labelled split: its name, the first sentence and the number of rows.
using SplitRows = std::tuple<const char*, int, int>;

// A labelled set of 40 training and 10 validation sentences (or the `splits` given) encoded with
// the vocabulary of `vocab_file`'s /vocab/src; the validation rows are pairs (segment 1 from the
// fourth word on).
void write_labelled(const test::TempDir& dir, const std::string& name, const std::string& vocab_file,
                    const std::vector<SplitRows>& splits = {{"train", 100, 40}, {"valid", 200, 10}}) {
  const data::Vocab vocab = data::read_vocab(io::File::open_read(dir.file(vocab_file)), "/vocab/src");
  io::File f = io::File::create(dir.file(name));
  for (const auto& [split, first, n] : splits) {
    transformer::LabelledSplit s;
    s.src = Tensor({n, 6}, DType::i32);
    s.segments = Tensor({n, 6}, DType::i32);
    s.src_len = Tensor({n}, DType::i32);
    s.label = Tensor({n}, DType::i32);
    for (int i = 0; i < n; ++i) {
      const std::vector<int32_t> ids = vocab.encode(sentence(first + i));
      std::copy(ids.begin(), ids.end(), s.src.all().idata() + i * 6);
      s.src_len.idata()[i] = static_cast<int32_t>(ids.size());
      s.label.idata()[i] = (first + i) % 2;
      if (std::string(split) == "valid")
        for (size_t t = 3; t < ids.size(); ++t) s.segments.all().idata()[i * 6 + static_cast<int64_t>(t)] = 1;
    }
    transformer::write_labelled_split(f, split, s);
  }
  transformer::write_labels(f, {"a", "b"});
  data::write_vocab(f, "/vocab/src", vocab);
  f.commit();
}

// Whether every parameter of the pre-trained file is in the fine-tuned one with the same bits.
bool body_unchanged(const std::string& pretrained, const std::string& tuned) {
  const io::Checkpoint a = io::load_checkpoint(pretrained), b = io::load_checkpoint(tuned);
  for (const auto& [name, t] : a.params) {
    const auto it = b.params.find(name);
    if (it == b.params.end() || it->second.shape() != t.shape() ||
        !std::equal(t.data(), t.data() + t.numel(), it->second.data()))
      return false;
  }
  return true;
}

}  // namespace

// Issue 51: the labelled splits' reader refuses an empty /train like every family's
// (tests/conformance checks the train verbs), and classify and eval refuse an empty split rather
// than print "accuracy -nan" with exit 0.
TEST_CASE("finetune refuses an empty /train and trains on one row, classify and eval refuse an empty split",
          "[cli][attn-transformer]") {
  test::TempDir dir;
  write_corpus(dir, "corpus.txt", 100);
  const Result text = run(dir, "{data} text --in corpus.txt --valid-n 20 --out text.h5 --quiet");
  INFO(text.err);
  REQUIRE(text.code == 0);
  const Result pre = run(
      dir, "{tf} train --arch lm --data text.h5 --model pre.h5 --steps 2 --max-tokens 256" + std::string(kTiny));
  INFO(pre.err);
  REQUIRE(pre.code == 0);

  write_labelled(dir, "empty.h5", "text.h5", {{"train", 100, 0}, {"valid", 200, 10}});
  const Result empty = run(dir,
                           "{tf} finetune --init pre.h5 --data empty.h5 --model ft.h5 --steps 2" + std::string(kFine));
  CHECK(empty.code == 3);
  CHECK_THAT(empty.err, Contains("empty.h5: dataset '/train/src' has 0 rows; a training split needs at least 1"));
  CHECK_FALSE(std::filesystem::exists(dir.file("ft.h5")));

  write_labelled(dir, "one.h5", "text.h5", {{"train", 100, 1}, {"valid", 200, 10}, {"test", 300, 0}});
  const Result one = run(dir, "{tf} finetune --init pre.h5 --data one.h5 --model ft.h5 --steps 2" + std::string(kFine));
  INFO(one.err);
  REQUIRE(one.code == 0);
  for (const std::string verb : {"classify --out pred.h5", "eval"}) {
    INFO(verb);
    const Result r = run(dir, "{tf} " + verb + " --model ft.h5 --data one.h5 --split test --quiet");
    CHECK(r.code == 3);
    CHECK_THAT(r.err, Contains("one.h5: split '/test' holds no examples; there is nothing to evaluate"));
  }
  CHECK_FALSE(std::filesystem::exists(dir.file("pred.h5")));
}

TEST_CASE("text -> pre-train (mlm and lm) -> finetune -> classify and eval", "[cli][attn-transformer]") {
  test::TempDir dir;
  CHECK_THAT(run(dir, "{tf} --help").out, Contains("  finetune ") && Contains("  classify "));
  CHECK_THAT(run(dir, "{data} --help").out, Contains("  babi-cls ") && Contains("  text ") && Contains("  pairs "));
  write_corpus(dir, "corpus.txt", 300);
  const Result text = run(dir, "{data} text --in corpus.txt --valid-n 20 --out text.h5 --quiet");
  INFO(text.err);
  REQUIRE(text.code == 0);
  {
    const io::File t = io::File::open_read(dir.file("text.h5"));
    CHECK(t.attr_string("/", "kind") == "text");
    CHECK(t.read_strings("/vocab/src").size() == 4 + 16);
    CHECK(t.read_strings("/vocab/src") == t.read_strings("/vocab/tgt"));
    CHECK(t.shape("/train/src") == Shape{280, 6});
    CHECK(t.shape("/train/tgt") == Shape{280, 7});   // the tokens then EOS
  }
  write_labelled(dir, "cls.h5", "text.h5");

  for (const std::string arch : {"mlm", "lm"}) {
    INFO("arch " << arch);
    const Result pre = run(dir, "{tf} train --arch " + arch + " --data text.h5 --model pre.h5 --steps 10 --max-tokens 256" + kTiny);
    INFO(pre.err);
    REQUIRE(pre.code == 0);
    const std::string aux = arch == "lm" ? " --aux-lm 0.5" : "";
    const Result ft = run(dir, "{tf} finetune --init pre.h5 --data cls.h5 --model ft.h5 --epochs 2" + aux + kFine);
    INFO(ft.err);
    REQUIRE(ft.code == 0);
    CHECK_THAT(ft.out, Contains("10 steps, 2 epochs") && Contains("accuracy") && Contains("-> ft.h5"));
    {
      const io::File m = io::File::open_read(dir.file("ft.h5"));
      CHECK(m.attr_string("/", "kind") == "transformer-classifier");
      CHECK(m.attr_string("/config", "arch") == arch);
      CHECK(m.attr_int("/config", "classes") == 2);
      CHECK(m.attr_string("/config", "init") == "pre.h5");
      CHECK(m.attr_double("/config", "aux_lm") == (arch == "lm" ? 0.5 : 0.0));
      CHECK(m.read_strings("/labels") == std::vector<std::string>{"a", "b"});
      CHECK(m.shape("/params/classifier/W") == Shape{2, 16});
      CHECK(m.shape("/metrics/valid_accuracy") == Shape{2});
    }
    CHECK_FALSE(body_unchanged(dir.file("pre.h5"), dir.file("ft.h5")));   // all weights were trained

    const Result cls = run(dir, "{tf} classify --model ft.h5 --data cls.h5 --split valid --out pred.h5 --dump-attention --quiet");
    INFO(cls.err);
    REQUIRE(cls.code == 0);
    CHECK_THAT(cls.out, Contains("10 examples of valid: accuracy"));
    {
      const io::File p = io::File::open_read(dir.file("pred.h5"));
      CHECK(p.attr_string("/", "kind") == "classification");
      const Tensor prob = p.read("/probabilities", DType::f32, {10, 2});
      const Tensor pred = p.read("/predictions", DType::i32, {10});
      for (int64_t i = 0; i < 10; ++i) {
        CHECK(prob.data()[2 * i] + prob.data()[2 * i + 1] == Approx(1.0f));
        CHECK(pred.idata()[i] == (prob.data()[2 * i + 1] > prob.data()[2 * i] ? 1 : 0));
      }
      // The longest validation row: 6 words, a pair: mlm [CLS] A [SEP] B [SEP] = 9, lm BOS A [SEP] B = 8.
      const int64_t L = arch == "mlm" ? 9 : 8;
      CHECK(p.shape("/attention/layer0") == Shape{10, 2, L, L});
      CHECK(p.read_strings("/labels") == std::vector<std::string>{"a", "b"});
      const double acc = p.attr_double("/metrics", "accuracy");
      int correct = 0;
      const Tensor label = p.read("/label", DType::i32, {10});
      for (int64_t i = 0; i < 10; ++i) correct += pred.idata()[i] == label.idata()[i];
      CHECK(acc == Approx(correct / 10.0));
    }
    const Result eval = run(dir, "{tf} eval --model ft.h5 --data cls.h5 --split valid --quiet");
    INFO(eval.err);
    CHECK(eval.code == 0);
    CHECK_THAT(eval.out, Contains("eval: valid: loss") && Contains("accuracy") && Contains("(10 examples)"));

    if (arch == "mlm") {   // a frozen encoder: the pre-trained weights are saved as they were
      const Result frozen = run(dir, "{tf} finetune --init pre.h5 --data cls.h5 --model fz.h5 --epochs 1 --freeze-encoder" + std::string(kFine));
      INFO(frozen.err);
      REQUIRE(frozen.code == 0);
      CHECK(body_unchanged(dir.file("pre.h5"), dir.file("fz.h5")));
      CHECK_FALSE(test::same_params(dir.file("ft.h5"), dir.file("fz.h5")));
      // Resumable like every train verb, to the same bits, the frozen weights restored with the rest.
      REQUIRE(run(dir, "{tf} finetune --init pre.h5 --data cls.h5 --model full.h5 --steps 6 --freeze-encoder" + std::string(kFine)).code == 0);
      REQUIRE(run(dir, "{tf} finetune --init pre.h5 --data cls.h5 --model part.h5 --steps 3 --freeze-encoder" + std::string(kFine)).code == 0);
      const Result resumed = run(dir, "{tf} finetune --data cls.h5 --model part.h5 --steps 6 --freeze-encoder --resume" + std::string(kFine));
      INFO(resumed.err);
      REQUIRE(resumed.code == 0);
      CHECK(test::same_params(dir.file("full.h5"), dir.file("part.h5")));
      CHECK(body_unchanged(dir.file("pre.h5"), dir.file("part.h5")));
      const Result bad_aux = run(dir, "{tf} finetune --init pre.h5 --data cls.h5 --model x.h5 --aux-lm 0.5" + std::string(kFine));
      CHECK(bad_aux.code == 2);
      CHECK_THAT(bad_aux.err, Contains("aux_lm") && Contains("needs arch lm"));
    }
  }
}

TEST_CASE("finetune --max-tokens: length-bucketed batches instead of --batch-size", "[cli][attn-transformer]") {
  test::TempDir dir;
  write_corpus(dir, "corpus.txt", 100);
  REQUIRE(run(dir, "{data} text --in corpus.txt --out text.h5 --quiet").code == 0);
  write_labelled(dir, "cls.h5", "text.h5");
  CHECK_THAT(run(dir, "{tf} finetune --help").out, Contains("--max-tokens N (=0)"));
  // The 40 training rows have 3-6 words, 10 of each length, read as [CLS] A [SEP] (mlm, 5-8
  // positions) or BOS A (lm, 4-7): cut greedily in ascending length at B x Lmax <= 40 tokens, the
  // mlm's make 7 batches (8 x 5, 2 x 5 + 4 x 6, 6 x 6, 5 x 7, 5 x 7, 5 x 8, 5 x 8), the lm's 6;
  // --batch-size 8 makes 5, and so does --max-tokens 0 (off).
  for (const auto& [arch, steps] : {std::pair{std::string("mlm"), 7}, std::pair{std::string("lm"), 6}}) {
    INFO("arch " << arch);
    REQUIRE(run(dir, "{tf} train --arch " + arch + " --data text.h5 --model pre.h5 --steps 4 --max-tokens 256" + kTiny).code == 0);
    const Result bucketed = run(dir, "{tf} finetune --init pre.h5 --data cls.h5 --model ft.h5 --epochs 2 --max-tokens 40" + std::string(kFine));
    INFO(bucketed.err);
    REQUIRE(bucketed.code == 0);
    CHECK_THAT(bucketed.out, Contains(std::to_string(2 * steps) + " steps, 2 epochs"));
    CHECK(io::File::open_read(dir.file("ft.h5")).attr_int("/config", "max_tokens") == 40);
    const Result off = run(dir, "{tf} finetune --init pre.h5 --data cls.h5 --model ft.h5 --epochs 2 --max-tokens 0" + std::string(kFine));
    REQUIRE(off.code == 0);
    CHECK_THAT(off.out, Contains("10 steps, 2 epochs"));
  }
  const Result too_small = run(dir, "{tf} finetune --init pre.h5 --data cls.h5 --model ft.h5 --max-tokens 3" + std::string(kFine));
  CHECK(too_small.code != 0);
  CHECK_THAT(too_small.err, Contains("max_tokens"));
}

TEST_CASE("finetune: a pre-trained model of the wrong architecture or vocabulary is exit 3 naming both files", "[cli][attn-transformer]") {
  test::TempDir dir;
  write_corpus(dir, "corpus.txt", 100);
  write_corpus(dir, "other.txt", 100, "x");
  REQUIRE(run(dir, "{data} text --in corpus.txt --out text.h5 --quiet").code == 0);
  REQUIRE(run(dir, "{data} text --in other.txt --out other.h5 --quiet").code == 0);
  write_labelled(dir, "cls.h5", "text.h5");

  REQUIRE(run(dir, "{tf} train --arch encdec --data text.h5 --model encdec.h5 --steps 2 --max-tokens 256" + std::string(kTiny)).code == 0);
  const Result arch = run(dir, "{tf} finetune --init encdec.h5 --data cls.h5 --model ft.h5 --quiet");
  CHECK(arch.code == 3);
  CHECK_THAT(arch.err, Contains("encdec.h5") && Contains("cls.h5") && Contains("arch encdec"));

  REQUIRE(run(dir, "{tf} train --arch mlm --data other.h5 --model other_pre.h5 --steps 2 --max-tokens 256" + std::string(kTiny)).code == 0);
  const Result vocab = run(dir, "{tf} finetune --init other_pre.h5 --data cls.h5 --model ft.h5 --quiet");
  CHECK(vocab.code == 3);
  CHECK_THAT(vocab.err, Contains("other_pre.h5") && Contains("cls.h5") && Contains("is not the vocabulary"));

  const Result missing = run(dir, "{tf} finetune --data cls.h5 --model ft.h5 --quiet");
  CHECK(missing.code == 2);
  CHECK_THAT(missing.err, Contains("--init"));
  const Result frozen_random = run(
      dir, "{tf} finetune --init other_pre.h5 --data cls.h5 --model ft.h5 --freeze-encoder --from-scratch --quiet");
  CHECK(frozen_random.code == 2);
  CHECK_THAT(frozen_random.err, Contains("--freeze-encoder and --from-scratch contradict each other"));
  // A data set re-encoded with --vocab-from fine-tunes the other model; the vocabulary is the
  // other set's as it is, so options that would build one are refused.
  for (const char* option : {"--min-freq 2", "--max-vocab 50"}) {
    const Result build = run(
        dir, "{data} text --in corpus.txt --vocab-from other.h5 --out x.h5 --quiet " + std::string(option));
    CHECK(build.code == 2);
    CHECK_THAT(build.err, Contains("--vocab-from and " + std::string(option).substr(0, std::string(option).find(' '))));
  }
  REQUIRE(run(dir, "{data} text --in corpus.txt --vocab-from other.h5 --out recoded.h5 --quiet").code == 0);
  // A text of blank lines: one text, so the message speaks of lines, not of pairs.
  test::write_text(dir.file("blank.txt"), "\n \n\t\n");
  const Result blank = run(dir, "{data} text --in blank.txt --out blank.h5 --quiet");
  CHECK(blank.code == 3);
  CHECK_THAT(blank.err, Contains("the training split has no non-empty line") && !Contains("pair"));
  const io::File r = io::File::open_read(dir.file("recoded.h5"));
  CHECK(r.read_strings("/vocab/src") == io::File::open_read(dir.file("other.h5")).read_strings("/vocab/src"));
}

TEST_CASE("train --arch mlm --mask-words: selective masking, its word list checked", "[cli][attn-transformer]") {
  test::TempDir dir;
  write_corpus(dir, "corpus.txt", 100);
  REQUIRE(run(dir, "{data} text --in corpus.txt --out text.h5 --quiet").code == 0);
  const std::string train = "{tf} train --arch mlm --data text.h5 --model m.h5 --steps 2 --max-tokens 256";
  test::write_text(dir.file("words.txt"), "# group a's first words\na4 a5\na6\n");
  const Result ok = run(dir, train + " --mask-words words.txt --mask-prob 0.5" + kTiny);
  REQUIRE(ok.code == 0);
  const io::File m = io::File::open_read(dir.file("m.h5"));   // the masking is part of how it was made
  CHECK(m.attr_string("/config", "mask_words") == "words.txt");
  CHECK(m.attr_double("/config", "mask_prob") == 0.5);

  test::write_text(dir.file("unknown.txt"), "a4 zebra\n");
  const Result unknown = run(dir, train + " --mask-words unknown.txt" + kTiny);
  CHECK(unknown.code == 3);
  CHECK_THAT(unknown.err, Contains("unknown.txt") && Contains("'zebra' is not in the data set's vocabulary"));
  test::write_text(dir.file("empty.txt"), "# nothing\n\n");
  const Result empty = run(dir, train + " --mask-words empty.txt" + kTiny);
  CHECK(empty.code == 3);
  CHECK_THAT(empty.err, Contains("empty.txt") && Contains("no words"));
  const Result missing = run(dir, train + " --mask-words absent.txt" + kTiny);
  CHECK(missing.code == 3);
  CHECK_THAT(missing.err, Contains("absent.txt"));
  const Result lm = run(dir, "{tf} train --arch lm --data text.h5 --model lm.h5 --steps 2 --mask-prob 0.15" + std::string(kTiny));
  CHECK(lm.code == 2);
  CHECK_THAT(lm.err, Contains("--arch mlm") && Contains("'lm'"));
  const Result range = run(dir, train + " --mask-prob 0" + kTiny);
  CHECK(range.code == 2);
  CHECK_THAT(range.err, Contains("--mask-prob"));
}

TEST_CASE("train --max-positions: a body pre-trained on short text keeps room for longer examples", "[cli][attn-transformer]") {
  test::TempDir dir;
  write_corpus(dir, "corpus.txt", 100);
  REQUIRE(run(dir, "{data} text --in corpus.txt --out text.h5 --quiet").code == 0);
  const std::string train = "{tf} train --arch mlm --data text.h5 --steps 2 --max-tokens 256";
  REQUIRE(run(dir, train + " --model default.h5" + kTiny).code == 0);
  CHECK(io::File::open_read(dir.file("default.h5")).attr_int("/config", "max_len") == 256);
  REQUIRE(run(dir, train + " --model long.h5 --max-positions 600" + kTiny).code == 0);
  CHECK(io::File::open_read(dir.file("long.h5")).attr_int("/config", "max_len") == 600);
  // The longest line has 6 words: [CLS] + 6 + [SEP] (+ a [SEP] of a pair) needs 9.
  const Result short_ = run(dir, train + " --model short.h5 --max-positions 8" + kTiny);
  CHECK(short_.code == 2);
  CHECK_THAT(short_.err, Contains("max_len 8 is less than the longest example + 3 (9)"));
  CHECK_FALSE(std::filesystem::exists(dir.file("short.h5")));
}

TEST_CASE("pairs of a parallel text -> an mlm pre-trained on them with segments -> finetune -> classify", "[cli][attn-transformer]") {
  test::TempDir dir;
  std::string src, tgt;
  for (int i = 0; i < 40; ++i) {   // B is A's words with a "t" prefix, in reverse order
    const std::vector<std::string> a = sentence(i);
    for (const std::string& w : a) src.append(w).append(" ");
    for (auto w = a.rbegin(); w != a.rend(); ++w) tgt.append("t").append(*w).append(" ");
    src.back() = '\n';
    tgt.back() = '\n';
  }
  test::write_text(dir.file("a.txt"), src);
  test::write_text(dir.file("b.txt"), tgt);
  const Result made = run(dir, "{data} pairs --src-file a.txt --tgt-file b.txt --valid-n 8 --min-freq 1 --out pairs.h5");
  INFO(made.err);
  REQUIRE(made.code == 0);
  CHECK_THAT(made.out, Contains("train 64, valid 16, test 0 examples"));
  {
    const io::File f = io::File::open_read(dir.file("pairs.h5"));
    CHECK(f.read_strings("/labels") == std::vector<std::string>{"other", "translation"});
    const transformer::LabelledSplit s = transformer::read_labelled_split(f, "train", 0, 2);
    const int64_t L = s.src.dim(1);
    for (int64_t i = 0; i < 4; ++i) {
      CHECK(s.label.idata()[i] == (i % 2 == 0 ? 1 : 0));   // each line: its translation, then another line's
      const int32_t len = s.src_len.idata()[i];
      CHECK(s.segments.all().idata()[i * L] == 0);
      CHECK(s.segments.all().idata()[i * L + len - 1] == 1);
    }
    CHECK(s.has_pairs());
  }
  REQUIRE(run(dir, "{tf} train --arch mlm --data pairs.h5 --model pre.h5 --steps 4 --max-tokens 256" + std::string(kTiny)).code == 0);
  const Result ft = run(dir, "{tf} finetune --init pre.h5 --data pairs.h5 --model ft.h5 --steps 4" + std::string(kFine));
  INFO(ft.err);
  REQUIRE(ft.code == 0);
  const Result cls = run(dir, "{tf} classify --model ft.h5 --data pairs.h5 --split valid --out pred.h5 --quiet");
  INFO(cls.err);
  CHECK(cls.code == 0);
  CHECK_THAT(cls.out, Contains("16 examples of valid"));
  const Result both = run(dir, "{data} pairs --src-file a.txt --multi30k . --out x.h5 --quiet");
  CHECK(both.code == 2);
}

TEST_CASE("bAbI task 1 through babi-cls: pre-train on its stories (mlm and lm), fine-tune and classify", "[data][attn-transformer]") {
  const auto root = test::data_dir();
  if (root.empty() || !std::filesystem::exists(root / "babi" / "en" / "qa1_single-supporting-fact_train.txt")) {
    test::skip_test("the bAbI data is not in " + (root.empty() ? std::string("ATTN_DATA_DIR") : root.string()));
    return;
  }
  test::TempDir dir;
  const std::string babi = (root / "babi").string();
  const Result made = run(dir, "{data} babi-cls --task 1 --data-dir '" + babi + "' --memory-size 6 --out qa1.h5");
  INFO(made.err);
  REQUIRE(made.code == 0);
  CHECK_THAT(made.out, Contains("en tasks 1: train 900, valid 100, test 1000 examples; 6 classes"));
  {
    const io::File f = io::File::open_read(dir.file("qa1.h5"));
    CHECK(f.read_strings("/labels").size() == 6);   // the six rooms of task 1
    const Tensor seg = f.read("/test/segments", DType::i32);
    const Tensor len = f.read("/test/src_len", DType::i32);
    const int64_t L = seg.dim(1);
    CHECK(seg.idata()[0] == 0);                                     // the story first
    CHECK(seg.idata()[len.idata()[0] - 1] == 1);                    // the question last
    CHECK(f.read("/test/task", DType::i32).idata()[0] == 1);
    CHECK(L <= 6 * 7 + 4);
    REQUIRE_THROWS(transformer::read_labelled_split(f, "test", 0, 5));   // a label >= 5: the checks run
  }
  const Result eight = run(dir, "{data} babi-cls --task 8 --data-dir '" + babi + "' --out qa8.h5 --quiet");
  CHECK(eight.code == 2);
  CHECK_THAT(eight.err, Contains("lists of words"));
  // The labelled set itself is the mlm's pre-training text (its /src with segments).
  REQUIRE(run(dir, "{tf} train --arch mlm --data qa1.h5 --model pre.h5 --steps 4 --max-tokens 512" + std::string(kTiny)).code == 0);
  const Result ft = run(dir, "{tf} finetune --init pre.h5 --data qa1.h5 --model ft.h5 --steps 4" + std::string(kFine));
  INFO(ft.err);
  REQUIRE(ft.code == 0);
  const Result cls = run(dir, "{tf} classify --model ft.h5 --data qa1.h5 --out pred.h5 --quiet");
  INFO(cls.err);
  REQUIRE(cls.code == 0);
  CHECK_THAT(cls.out, Contains("1000 examples of test"));
  // An lm reads the same set as text, story [SEP] question EOS, and keeps its LM loss when fine-tuned.
  REQUIRE(run(dir, "{tf} train --arch lm --data qa1.h5 --model gpt.h5 --steps 3 --max-tokens 512" + std::string(kTiny)).code == 0);
  const Result gpt = run(dir, "{tf} finetune --init gpt.h5 --data qa1.h5 --model gpt-ft.h5 --steps 3 --aux-lm 0.5" + std::string(kFine));
  INFO(gpt.err);
  CHECK(gpt.code == 0);
}

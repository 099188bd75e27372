// The attn-data executable, run as a user would: exit codes, messages, --help, --config,
// the HDF5 files it writes, and a pipe into `attn-data info`. $ATTN_BIN_DIR is the build's
// apps folder (set by tests/CMakeLists.txt); every file goes to a TempDir.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "attn/data/subword.hpp"
#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

using test::slurp;

using Result = test::ShellResult;

std::string quoted_tool() { return test::quoted_tool("attn-data"); }

// Runs attn-data with the given arguments.
Result attn_data(const test::TempDir& dir, const std::string& args) {
  return test::run_shell(dir, quoted_tool() + " " + args);
}

}  // namespace

TEST_CASE("attn-data --help lists the verbs, --version prints the version", "[cli][attn-data]") {
  test::TempDir dir;
  const Result help = attn_data(dir, "--help");
  CHECK(help.code == 0);
  for (const char* verb : {"copy", "repeat-copy", "assoc-recall", "priority-sort", "reverse", "sort", "mnist-strips",
                           "shapes", "subword", "distil", "info"})
    CHECK_THAT(help.out, Catch::Contains(std::string("  ") + verb + " "));
  const Result version = attn_data(dir, "--version");
  CHECK(version.code == 0);
  CHECK_THAT(version.out, Catch::StartsWith("attn-data 0."));
  CHECK_THAT(version.out, Catch::Contains("\nBLAS: OpenBLAS 0."));   // and the kernels it runs
  CHECK_THAT(attn_data(dir, "copy --version").out, Catch::Equals(version.out));
  const Result none = attn_data(dir, "");
  CHECK(none.code == 2);
  const Result unknown = attn_data(dir, "cpy --out x.h5");
  CHECK(unknown.code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("unknown verb 'cpy'") && Catch::Contains("did you mean 'copy'"));
}

TEST_CASE("attn-data copy --help lists the options with their defaults", "[cli][attn-data]") {
  test::TempDir dir;
  const Result r = attn_data(dir, "copy --help");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("Usage: attn-data copy --out FILE [options]"));
  CHECK_THAT(r.out, Catch::Contains("--n N (=10000)"));
  CHECK_THAT(r.out, Catch::Contains("--valid-n N (=1000)"));
  CHECK_THAT(r.out, Catch::Contains("--max-len N (=20)"));
  CHECK_THAT(r.out, Catch::Contains("--width N (=8)"));
  CHECK_THAT(r.out, Catch::Contains("--seed N (=1)"));
  CHECK_THAT(r.out, Catch::Contains("--config FILE"));
  CHECK(r.err.empty());
}

TEST_CASE("attn-data usage errors exit 2 and name the flag", "[cli][attn-data]") {
  test::TempDir dir;
  Result r = attn_data(dir, "copy --out a.h5 --n 0");
  CHECK(r.code == 2);
  CHECK(r.err == "attn-data copy: --n must be > 0, got 0\n");
  r = attn_data(dir, "copy --out a.h5 --bogus 3");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("attn-data copy: ") && Catch::Contains("--bogus"));
  r = attn_data(dir, "copy --out a.h5 extra");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("unexpected argument 'extra'"));
  r = attn_data(dir, "reverse --n 10");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--out") && Catch::Contains("required"));
  r = attn_data(dir, "copy --out a.h5 --min-len 5 --max-len 3 --quiet");
  CHECK(r.code == 2);
  CHECK(r.err == "attn-data copy: --max-len must be >= --min-len (5), got 3\n");
  r = attn_data(dir, "priority-sort --out a.h5 --in-n 4 --out-n 5 --quiet");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--out-n must be <= --in-n (4), got 5"));
  // A value holding Boost's own placeholder made its message loop for ever (tests/fuzz found it),
  // on the command line and in a --config file alike.
  r = attn_data(dir, "reverse --out a.h5 --n 3%value%");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("--n") && Catch::Contains("3\xef\xbc\x85value\xef\xbc\x85"));
  test::write_text(dir.file("p.ini"), "n = 3%value%\n");
  r = attn_data(dir, "reverse --out a.h5 --config p.ini");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("p.ini") && Catch::Contains("3\xef\xbc\x85value"));
  CHECK_FALSE(std::filesystem::exists(dir.file("a.h5")));
}

TEST_CASE("attn-data info on a missing or non-HDF5 file exits 3 with a clear message", "[cli][attn-data]") {
  test::TempDir dir;
  Result r = attn_data(dir, "info --data missing.h5");
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::StartsWith("attn-data info: ") && Catch::Contains("missing.h5"));
  {
    std::ofstream text(dir.file("notes.txt"));
    text << "this is not an HDF5 file\n";
  }
  r = attn_data(dir, "info --data notes.txt");
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Catch::StartsWith("attn-data info: ") && Catch::Contains("notes.txt") &&
                        Catch::Contains("HDF5"));
  CHECK(r.out.empty());
  CHECK(r.err.find('\n') == r.err.size() - 1);   // one line: info echoes no configuration
}

TEST_CASE("attn-data reverse writes the layout, the root attributes and /config", "[cli][attn-data]") {
  test::TempDir dir;
  const Result r = attn_data(dir, "reverse --n 20 --valid-n 4 --test-n 5 --vocab 9 --max-len 6 --seed 3 --out rev.h5");
  REQUIRE(r.code == 0);
  CHECK(r.out == "attn-data reverse: wrote rev.h5 (train 20, valid 4, test 5 examples)\n");
  CHECK_THAT(r.err, Catch::Contains("attn-data reverse: configuration") && Catch::Contains("--vocab"));

  const io::File f = io::File::open_read(dir.file("rev.h5"));
  const io::FileInfo info = io::read_file_info(f);
  CHECK(info.format == "attnlab/dataset");
  CHECK(info.format_version == io::kFormatVersion);
  CHECK(info.kind == "reverse");
  CHECK_THAT(info.created_by, Catch::StartsWith("attn-data 0."));
  CHECK(info.command == "attn-data reverse --n 20 --valid-n 4 --test-n 5 --vocab 9 --max-len 6 --seed 3 --out rev.h5");
  CHECK(f.attr_int("/config", "n") == 20);
  CHECK(f.attr_int("/config", "vocab") == 9);
  CHECK(f.attr_int("/config", "max_len") == 6);
  CHECK(f.attr_int("/config", "min_len") == 3);   // the default is stored too
  CHECK(f.attr_int("/config", "seed") == 3);

  const Tensor src = f.read("/train/src", DType::i32, {20, 6});
  const Tensor len = f.read("/train/src_len", DType::i32, {20});
  const Tensor tgt = f.read("/train/tgt", DType::i32, {20, 7});
  CHECK(f.shape("/valid/src") == Shape{4, 6});
  CHECK(f.shape("/test/tgt_len") == Shape{5});
  for (int64_t i = 0; i < 20; ++i) {
    const int32_t L = len.idata()[i];
    for (int32_t t = 0; t < L; ++t) CHECK(tgt.idata()[i * 7 + t] == src.idata()[i * 6 + L - 1 - t]);
    CHECK(tgt.idata()[i * 7 + L] == 2);   // EOS
  }
  const std::vector<std::string> vocab = f.read_strings("/vocab/src");
  CHECK(vocab == std::vector<std::string>{"<pad>", "<s>", "</s>", "<unk>", "t4", "t5", "t6", "t7", "t8"});
  CHECK(f.read_strings("/vocab/tgt") == vocab);

  // The same seed gives the same file contents.
  REQUIRE(attn_data(dir, "reverse --n 20 --valid-n 4 --test-n 5 --vocab 9 --max-len 6 --seed 3 --quiet --out rev2.h5").code == 0);
  const io::File g = io::File::open_read(dir.file("rev2.h5"));
  const Tensor src2 = g.read("/train/src", DType::i32);
  CHECK(std::equal(src.idata(), src.idata() + src.numel(), src2.idata()));
}

TEST_CASE("attn-data --config reads an INI file and the command line wins", "[cli][attn-data]") {
  test::TempDir dir;
  {
    std::ofstream ini(dir.file("copy.ini"));
    ini << "n = 6\nwidth = 3\nmax-len = 4\n";
  }
  const Result r = attn_data(dir, "copy --config copy.ini --width 5 --valid-n 2 --test-n 2 --out c.h5 --quiet");
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());   // --quiet
  const io::File f = io::File::open_read(dir.file("c.h5"));
  CHECK(f.attr_int("/config", "n") == 6);          // from the file
  CHECK(f.attr_int("/config", "width") == 5);      // the command line wins
  CHECK(f.attr_int("/config", "max_len") == 4);
  CHECK(f.shape("/train/inputs") == Shape{6, 5, 6});
  CHECK(f.shape("/train/targets") == Shape{6, 4, 5});
  CHECK(f.shape("/valid/input_len") == Shape{2});

  {
    std::ofstream ini(dir.file("bad.ini"));
    ini << "lenght = 4\n";
  }
  const Result bad = attn_data(dir, "copy --config bad.ini --out d.h5");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("bad.ini") && Catch::Contains("lenght"));
}

TEST_CASE("every NTM generator writes inputs, targets and lengths per split", "[cli][attn-data]") {
  test::TempDir dir;
  struct Case {
    const char* verb;
    Shape inputs, targets;
  };
  const Case cases[] = {
      {"copy", {3, 21, 9}, {3, 20, 8}},
      {"repeat-copy", {3, 11, 10}, {3, 101, 9}},
      {"assoc-recall", {3, 29, 8}, {3, 3, 6}},
      {"priority-sort", {3, 21, 10}, {3, 16, 8}},
  };
  for (const Case& c : cases) {
    const std::string file = std::string(c.verb) + ".h5";
    const Result r = attn_data(dir, std::string(c.verb) + " --n 3 --valid-n 2 --test-n 2 --quiet --out " + file);
    REQUIRE(r.code == 0);
    const io::File f = io::File::open_read(dir.file(file));
    CHECK(io::read_file_info(f).kind == c.verb);
    CHECK(f.shape("/train/inputs") == c.inputs);
    CHECK(f.shape("/train/targets") == c.targets);
    CHECK(f.shape("/test/input_len") == Shape{2});
    CHECK(f.shape("/valid/target_len") == Shape{2});
    CHECK(f.read("/train/inputs", DType::f32).dtype() == DType::f32);
    CHECK(f.read("/train/target_len", DType::i32).dtype() == DType::i32);
  }
}

TEST_CASE("attn-data copy --out - | attn-data info --data - prints the summary", "[cli][attn-data]") {
  test::TempDir dir;
  const std::string exe = quoted_tool();
  const Result r = test::run_shell(dir, "{ " + exe + " copy --n 4 --valid-n 2 --test-n 2 --seed 5 --out - 2>copy.err; echo $? >copy.code; } | " +
                                  exe + " info --data -");
  CHECK(slurp(dir.file("copy.code")) == "0\n");
  CHECK_THAT(slurp(dir.file("copy.err")), Catch::Contains("attn-data copy: wrote standard output"));
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("format         attnlab/dataset"));
  CHECK_THAT(r.out, Catch::Contains("kind           copy"));
  CHECK_THAT(r.out, Catch::Contains("command        attn-data copy --n 4 --valid-n 2 --test-n 2 --seed 5 --out -"));
  CHECK_THAT(r.out, Catch::Contains("\n/config\n"));
  CHECK_THAT(r.out, Catch::Contains("\n  seed    = 5\n"));
  CHECK_THAT(r.out, Catch::Contains("/train/inputs"));
  CHECK_THAT(r.out, Catch::Contains("float32  [4, 21, 9]"));
  CHECK_THAT(r.out, Catch::Contains("/valid/input_len   int32    [2]\n"));
}

TEST_CASE("attn-data info shows string datasets with a preview", "[cli][attn-data]") {
  test::TempDir dir;
  REQUIRE(attn_data(dir, "sort --n 5 --valid-n 2 --test-n 2 --quiet --out s.h5").code == 0);
  const Result r = attn_data(dir, "info --data s.h5");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("s.h5\n"));
  CHECK_THAT(r.out, Catch::Contains("/vocab/src"));
  CHECK_THAT(r.out, Catch::Contains("\"<pad>\" \"<s>\" \"</s>\" \"<unk>\""));
  CHECK_THAT(r.out, Catch::Contains("/train/src"));
}

TEST_CASE("attn-data posenc prints the sinusoidal table and stores it with --out", "[cli][attn-data]") {
  test::TempDir dir;
  const Result r = attn_data(dir, "posenc --d-model 4 --positions 2");
  REQUIRE(r.code == 0);
  CHECK(r.out == "0.00000 1.00000 0.00000 1.00000\n0.84147 0.54030 0.00999 0.99995\n");
  REQUIRE(attn_data(dir, "posenc --d-model 6 --positions 5 --out pe.h5").code == 0);
  const io::File file = io::File::open_read(dir.file("pe.h5"));
  const Tensor pe = file.read("/posenc", DType::f32, {5, 6});
  CHECK(pe.at(4 * 6 + 0) == Approx(std::sin(4.0)).margin(1e-6));           // PE(4, 0)
  CHECK(pe.at(2 * 6 + 3) == Approx(std::cos(2.0 / std::pow(10000.0, 2.0 / 6))).margin(1e-6));
  const Result bad = attn_data(dir, "posenc --d-model 0");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--d-model must be > 0, got 0"));
}

TEST_CASE("attn-data subword trains a SentencePiece model on raw text, bad input exits 2 or 3 naming it",
          "[cli][attn-data]") {
  test::TempDir dir;
  {
    std::ofstream text(dir.file("train.txt"));
    for (const char* who : {"A dog", "The black cat", "Two children", "A man in a red shirt", "Some people"})
      for (const char* what : {"runs across the field.", "is sleeping on the sofa.", "plays in the snow.",
                               "walks down the busy street.", "jumps over a small fence."})
        text << who << " " << what << "\n";
    std::ofstream bad(dir.file("latin1.txt"));
    bad << "A caf\xE9 by the sea.\n";
  }
  const Result r = attn_data(dir, "subword --text train.txt --vocab-size 60 --out m.model --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const data::SubwordModel m = data::SubwordModel::load(dir.file("m.model"));
  CHECK(m.pieces().size() == 60);
  CHECK(m.pieces()[data::kUnk] == "<unk>");
  CHECK(m.decode(m.encode("The black cat plays in the snow.")) == "The black cat plays in the snow.");
  const Result summary = attn_data(dir, "subword --text train.txt --type unigram --vocab-size 40 --out u.model");
  CHECK(summary.code == 0);
  CHECK_THAT(summary.out, Catch::Contains("wrote u.model (unigram, 40 pieces, from 25 lines;"));

  struct Case {
    std::string args, message;
    int code;
  };
  const Case cases[] = {
      {"subword --text train.txt --vocab-size 4 --out x.model", "--vocab-size", 2},
      {"subword --text train.txt --type wordpiece --out x.model", "--type", 2},
      {"subword --text train.txt --out train.txt", "train.txt", 2},
      {"subword --text missing.txt --out x.model", "missing.txt", 3},
      {"subword --text latin1.txt --vocab-size 5 --out x.model", "latin1.txt", 3},
      {"subword --text train.txt --vocab-size 5000 --out x.model", "Vocabulary size too high", 3},
  };
  for (const Case& c : cases) {
    const Result bad = attn_data(dir, c.args);
    INFO(c.args << "\n" << bad.err);
    CHECK(bad.code == c.code);
    CHECK_THAT(bad.err, Catch::Contains(c.message));
  }
  CHECK_FALSE(std::filesystem::exists(dir.file("x.model")));
}

// attn-data multi30k | parallel and attn-bleu, run as a user would: exit codes, stdout, and
// the files written. $ATTN_BIN_DIR is the build's apps folder (set by tests/CMakeLists.txt).
#include <sys/wait.h>

#include <cstdlib>
#include <sstream>

#include "attn/data/vocab.hpp"
#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

using Result = test::ShellResult;

using test::slurp;

// Runs one of the tools with `args` in `dir`, capturing stdout and stderr.
Result run_tool(const test::TempDir& dir, const std::string& tool, const std::string& args) {
  return test::run_shell(dir, test::quoted_tool(tool) + " " + args);
}


// A tiny German-English corpus of 10 pairs; the words of the last two all occur before them.
void write_corpus(const test::TempDir& dir) {
  test::write_text(dir.file("train.de"),
             "Ein Hund läuft.\nEin Mann läuft.\nEin Hund spielt.\nZwei Hunde spielen.\n"
             "Zwei Männer laufen.\nEin Kind läuft.\nEin Hund schläft.\nEin Mann spielt.\n"
             "Ein Mann schläft.\nEin Kind spielt.\n");
  test::write_text(dir.file("train.en"),
             "A dog runs.\nA man runs.\nA dog plays.\nTwo dogs play.\n"
             "Two men run.\nA child runs.\nA dog sleeps.\nA man plays.\n"
             "A man sleeps.\nA child plays.\n");
}

}  // namespace

TEST_CASE("attn-data parallel imports a text pair: bad arguments exit 2, bad files 3", "[cli][parallel-text]") {
  test::TempDir dir;
  write_corpus(dir);
  const Result ok = run_tool(dir, "attn-data", "parallel --src-file train.de --tgt-file train.en "
                                               "--valid-n 2 --test-n 2 --min-freq 1 --lowercase --out p.h5 --quiet");
  INFO(ok.err);
  REQUIRE(ok.code == 0);
  CHECK_THAT(ok.out, Catch::Contains("train 6, valid 2, test 2 pairs"));
  const io::File f = io::File::open_read(dir.file("p.h5"));
  CHECK(f.attr_string("/", "kind") == "parallel");
  CHECK(f.read("/train/src", DType::i32).dim(0) == 6);
  CHECK(f.read_strings("/test/tgt_text") == std::vector<std::string>{"A man sleeps.", "A child plays."});
  CHECK(f.read_strings("/valid/src_text") == std::vector<std::string>{"Ein Hund schläft.", "Ein Mann spielt."});
  CHECK(data::read_vocab(f, "/vocab/src").contains("läuft"));
  CHECK(f.attr_int("/config", "min_freq") == 1);

  CHECK(run_tool(dir, "attn-data", "parallel --src-file train.de --out q.h5").code == 2);   // no --tgt-file
  CHECK(run_tool(dir, "attn-data", "parallel --src-file train.de --tgt-file train.en --min-freq 0 --out q.h5").code == 2);
  const Result tail = run_tool(dir, "attn-data", "parallel --src-file train.de --tgt-file train.en --test-n 11 --out q.h5");
  CHECK(tail.code == 2);
  CHECK_THAT(tail.err, Catch::Contains("--test-n is 11 but only 10 training lines"));
  test::write_text(dir.file("short.en"), "A dog.\n");
  const Result mismatch = run_tool(dir, "attn-data", "parallel --src-file train.de --tgt-file short.en --out q.h5");
  CHECK(mismatch.code == 3);
  CHECK_THAT(mismatch.err, Catch::Contains("has 10 lines but") && Catch::Contains("short.en' has 1"));
  CHECK(run_tool(dir, "attn-data", "parallel --src-file none.de --tgt-file train.en --out q.h5").code == 3);
  CHECK(!std::filesystem::exists(dir.file("q.h5")));
}

TEST_CASE("attn-data parallel refuses a NUL byte on reading, naming the file and line", "[cli][parallel-text]") {
  test::TempDir dir;
  write_corpus(dir);
  test::write_text(dir.file("nul.en"), std::string("A dog runs.\nA m\0an runs.\nA dog plays.\n", 38));
  test::write_text(dir.file("three.de"), "Ein Hund läuft.\nEin Mann läuft.\nEin Hund spielt.\n");
  const Result r = run_tool(dir, "attn-data", "parallel --src-file three.de --tgt-file nul.en --out q.h5");
  CHECK(r.code == 3);   // bad input, not a failure to write q.h5
  CHECK_THAT(r.err, Catch::Contains("nul.en: line 2 holds a NUL byte (at byte 4)"));
  CHECK(!std::filesystem::exists(dir.file("q.h5")));
}

TEST_CASE("attn-data multi30k reads the Multi30k folder layout", "[cli][parallel-text]") {
  test::TempDir dir;
  write_corpus(dir);
  // A miniature Multi30k folder: the same files under the real names, gzipped by the shell.
  std::filesystem::create_directory(dir.path() / "m30k");
  for (const char* split : {"train", "val", "test_2016_flickr"})
    for (const char* lang : {"de", "en"})
      std::filesystem::copy_file(dir.file(std::string("train.") + lang),
                                 dir.path() / "m30k" / (std::string(split) + "." + lang));
  REQUIRE(std::system(("gzip '" + dir.file("m30k") + "'/*").c_str()) == 0);
  const Result ok = run_tool(dir, "attn-data", "multi30k --src en --tgt de --data-dir m30k --out m.h5 --quiet");
  INFO(ok.err);
  REQUIRE(ok.code == 0);
  const io::File f = io::File::open_read(dir.file("m.h5"));
  CHECK(f.attr_string("/", "kind") == "multi30k");
  CHECK(f.read_strings("/test/src_text")[0] == "A dog runs.");   // en is the source here
  CHECK(f.attr_int("/vocab", "lowercase") == 0);
  CHECK(run_tool(dir, "attn-data", "multi30k --src en --tgt xx --data-dir m30k --out m2.h5").code == 2);
  CHECK(run_tool(dir, "attn-data", "multi30k --src en --tgt fr --data-dir m30k --out m2.h5").code == 3);
}

TEST_CASE("attn-bleu scores HDF5 predictions and text with its exit codes", "[cli][bleu]") {
  test::TempDir dir;
  write_corpus(dir);
  REQUIRE(run_tool(dir, "attn-data", "parallel --src-file train.de --tgt-file train.en --test-n 2 "
                                     "--min-freq 1 --lowercase --out d.h5 --quiet").code == 0);
  // Predictions as ids in the data set's target vocabulary: the test references exactly, and
  // one with a wrong word.
  const data::Vocab vocab = data::read_vocab(io::File::open_read(dir.file("d.h5")), "/vocab/tgt");
  const auto ids = [&](std::vector<std::string> words) {
    std::vector<int32_t> v = vocab.encode(words);
    v.push_back(data::kEos);
    while (v.size() < 6) v.push_back(data::kPad);
    return v;
  };
  const auto write_pred = [&](const std::string& name, std::vector<int32_t> rows) {
    io::File f = io::File::create(dir.file(name));
    f.write("/predictions", Tensor::from_ints({2, 6}, std::move(rows)));
    data::write_vocab(f, "/vocab/tgt", vocab);
    f.commit();
  };
  std::vector<int32_t> exact = ids({"a", "man", "sleeps", "."});
  for (int32_t x : ids({"a", "child", "plays", "."})) exact.push_back(x);
  write_pred("exact.h5", exact);
  const Result perfect = run_tool(dir, "attn-bleu", "--hyp exact.h5 --ref d.h5 --split test --quiet");
  INFO(perfect.err);
  REQUIRE(perfect.code == 0);
  CHECK(perfect.out == "BLEU = 100.00, 100.0/100.0/100.0/100.0 (BP=1.000, ratio=1.000, hyp_len=8, ref_len=8)\n");

  std::vector<int32_t> off = exact;
  off[1] = vocab.id("dog");   // "a dog sleeps .": p = 7/8, 4/6, 2/4, 1/2 over the corpus
  write_pred("off.h5", off);
  const Result part = run_tool(dir, "attn-bleu", "score --hyp off.h5 --ref d.h5 --quiet");
  CHECK(part.code == 0);
  CHECK_THAT(part.out, Catch::StartsWith("BLEU = 61.80, 87.5/66.7/50.0/50.0 (BP=1.000"));

  // Plain tokenised text, one sentence a line.
  test::write_text(dir.file("hyp.txt"), "a man runs .\na dog\n");
  test::write_text(dir.file("ref.txt"), "a man runs .\na dog runs\n");
  const Result text = run_tool(dir, "attn-bleu", "--hyp-text hyp.txt --ref-text ref.txt");
  CHECK(text.code == 0);
  CHECK_THAT(text.out, Catch::StartsWith("BLEU = ") && Catch::Contains("hyp_len=6, ref_len=7"));

  // Usage errors (2) and bad input (3).
  CHECK(run_tool(dir, "attn-bleu", "").code == 2);
  CHECK(run_tool(dir, "attn-bleu", "--hyp exact.h5 --hyp-text hyp.txt --ref d.h5").code == 2);
  CHECK(run_tool(dir, "attn-bleu", "--hyp exact.h5 --ref d.h5 --split dev").code == 2);
  CHECK(run_tool(dir, "attn-bleu", "--hyp exact.h5 --ref d.h5 --bogus").code == 2);
  const Result count = run_tool(dir, "attn-bleu", "--hyp exact.h5 --ref d.h5 --split train");
  CHECK(count.code == 3);
  CHECK_THAT(count.err, Catch::Contains("2 hypotheses but 8 references"));
  CHECK(run_tool(dir, "attn-bleu", "--hyp missing.h5 --ref d.h5").code == 3);
  CHECK(run_tool(dir, "attn-bleu", "--hyp d.h5 --ref d.h5").code == 3);   // no /predictions
  const Result help = run_tool(dir, "attn-bleu", "--help");
  CHECK(help.code == 0);
  CHECK_THAT(help.out, Catch::Contains("--hyp-text"));
}

TEST_CASE("attn-bleu --by-length and --buckets score each source-length bucket", "[cli][bleu]") {
  test::TempDir dir;
  // The last three pairs are the test split; their sources have 3, 5 and 8 tokens.
  test::write_text(dir.file("l.de"), "Ein Hund.\nEin Mann.\nZwei Hunde.\nHund läuft.\nEin Mann läuft schnell.\n"
                               "Ein kleiner Hund spielt im großen Park.\n");
  test::write_text(dir.file("l.en"), "A dog.\nA man.\nTwo dogs.\nA dog runs.\nA man runs fast.\n"
                               "A small dog plays in the big park.\n");
  REQUIRE(run_tool(dir, "attn-data", "parallel --src-file l.de --tgt-file l.en --test-n 3 --min-freq 1 "
                                     "--lowercase --out d.h5 --quiet").code == 0);
  test::write_text(dir.file("hyp.txt"), "a dog runs .\na man runs fast .\na dog plays in a park .\n");
  const std::string base = "--hyp-text hyp.txt --ref d.h5 --split test --quiet ";

  const Result r = run_tool(dir, "attn-bleu", base + "--buckets 3,5 --out s.h5");
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 5);   // the corpus BLEU, the header, three buckets
  CHECK_THAT(lines[0], Catch::StartsWith("BLEU = "));
  CHECK_THAT(lines[1], Catch::StartsWith("source length  sentences    BLEU"));
  CHECK_THAT(lines[2], Catch::StartsWith("          1-3          1  100.00  1.000"));   // exact
  CHECK_THAT(lines[3], Catch::StartsWith("          4-5          1  100.00"));
  CHECK_THAT(lines[4], Catch::StartsWith("          6-8          1    0.00"));          // the open bucket: no 4-gram

  // The file: the bucket bounds, counts and scores that attn-plot curve draws.
  const io::File f = io::File::open_read(dir.file("s.h5"));
  CHECK(f.attr_string("/", "kind") == "bleu");
  CHECK(f.attr_int("/metrics", "sentences") == 3);
  const Tensor upper = f.read("/by_length/upper", DType::i32), count = f.read("/by_length/sentences", DType::i32);
  CHECK(std::vector<int32_t>(upper.idata(), upper.idata() + upper.numel()) == std::vector<int32_t>{3, 5, 8});
  CHECK(std::vector<int32_t>(count.idata(), count.idata() + count.numel()) == std::vector<int32_t>{1, 1, 1});
  CHECK(f.read("/by_length/bleu", DType::f32).data()[0] == Approx(100.0));

  // --by-length 4: lengths 1-4 and 5-8.
  const Result w = run_tool(dir, "attn-bleu", base + "--by-length 4");
  REQUIRE(w.code == 0);
  CHECK_THAT(w.out, Catch::Contains("          1-4          1  100.00") && Catch::Contains("          5-8          2"));

  // Usage errors (2): no lengths without a data set, bad or clashing bucket flags.
  CHECK(run_tool(dir, "attn-bleu", "--hyp-text hyp.txt --ref-text hyp.txt --by-length 4").code == 2);
  CHECK(run_tool(dir, "attn-bleu", base + "--by-length 0").code == 2);
  CHECK(run_tool(dir, "attn-bleu", base + "--by-length 4 --buckets 3").code == 2);
  const Result order = run_tool(dir, "attn-bleu", base + "--buckets 5,3");
  CHECK(order.code == 2);
  CHECK_THAT(order.err, Catch::Contains("positive and increasing, got 3 after 5"));
  const Result words = run_tool(dir, "attn-bleu", base + "--buckets 3,x --out t.h5");
  CHECK(words.code == 2);
  CHECK_THAT(words.err, Catch::Contains("--buckets must be integers separated by commas, got '3,x'"));
  CHECK(!std::filesystem::exists(dir.file("t.h5")));
}

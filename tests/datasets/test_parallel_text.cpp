#include "attn/datasets/parallel_text.hpp"

#include <zlib.h>

#include <fstream>

#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using datasets::TextPairs;
using Strings = std::vector<std::string>;

namespace {

void write_plain(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile gz = gzopen(path.c_str(), "wb");
  REQUIRE(gz != nullptr);
  REQUIRE(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(gz) == Z_OK);
}

std::vector<int32_t> row(const Tensor& t, int64_t i) {
  const int64_t l = t.dim(1);
  return {t.idata() + i * l, t.idata() + (i + 1) * l};
}

datasets::Splits<TextPairs> small_corpus() {
  datasets::Splits<TextPairs> text;
  text.train = {{"Ein Hund läuft.", "Ein Mann läuft.", "", "Ein Hund."},
                {"A dog runs.", "A man runs.", "Nothing.", "A dog."}};
  text.valid = {{"Ein Kind läuft."}, {"A child runs."}};
  text.test = {{"  Ein Hund schläft. "}, {" A dog sleeps.\t"}};
  return text;
}

}  // namespace

TEST_CASE("read_text_lines reads plain and gzip files, CRLF or LF, last newline optional", "[io][parallel-text]") {
  test::TempDir dir;
  const std::string text = "Zwei Männer.\r\nEin Hund\n\nEnde";
  write_plain(dir.file("a.txt"), text);
  write_gzip(dir.file("a.txt.gz"), text + "\n");
  const Strings want = {"Zwei Männer.", "Ein Hund", "", "Ende"};
  CHECK(datasets::read_text_lines(dir.file("a.txt")) == want);
  CHECK(datasets::read_text_lines(dir.file("a.txt.gz")) == want);
  write_plain(dir.file("empty.txt"), "");
  CHECK(datasets::read_text_lines(dir.file("empty.txt")).empty());

  write_plain(dir.file("bad.txt"), "ok\nlatin-1 \xE4 here\n");
  REQUIRE_THROWS_WITH(datasets::read_text_lines(dir.file("bad.txt")),
                      Catch::Contains("bad.txt: line 2 is not valid UTF-8 (at byte 9)"));
  REQUIRE_THROWS_AS(datasets::read_text_lines(dir.file("none.txt")), IoError);
  write_plain(dir.file("b.txt"), "one\ntwo\nthree\n");
  REQUIRE_THROWS_WITH(datasets::read_text_pairs(dir.file("a.txt"), dir.file("b.txt")),
                      Catch::Contains("has 4 lines but") && Catch::Contains("b.txt' has 3"));
}

TEST_CASE("build_parallel tokenises, builds vocabularies from train and encodes with EOS", "[unit][parallel-text]") {
  datasets::ParallelConfig cfg;
  cfg.tokenize.lowercase = true;
  cfg.src_vocab.min_freq = 2;
  cfg.tgt_vocab.min_freq = 2;
  const datasets::ParallelData d = datasets::build_parallel(small_corpus(), cfg);
  // Train keeps 3 pairs (the empty source is dropped). Counts: ein 3, . 3, hund 2, läuft 2.
  CHECK(d.src_vocab.tokens() == Strings{"<pad>", "<s>", "</s>", "<unk>", ".", "ein", "hund", "läuft"});
  CHECK(d.tgt_vocab.tokens() == Strings{"<pad>", "<s>", "</s>", "<unk>", ".", "a", "dog", "runs"});
  const datasets::ParallelSplit& train = d.splits.train;
  CHECK(train.lines == 4);
  CHECK(train.dropped == 1);
  CHECK(train.tokens.src.shape() == Shape{3, 4});
  CHECK(row(train.tokens.src.all(), 1) == std::vector<int32_t>{5, 3, 7, 4});      // ein <unk> läuft .
  CHECK(row(train.tokens.tgt.all(), 2) == std::vector<int32_t>{5, 6, 4, 2, 0});   // a dog . </s> <pad>
  CHECK(train.tokens.tgt_len.idata()[2] == 4);
  // Valid and test: vocabulary of train, raw (trimmed) lines kept for scoring.
  CHECK(row(d.splits.test.tokens.src.all(), 0) == std::vector<int32_t>{5, 6, 3, 4});
  CHECK(d.splits.test.tgt_text == Strings{"A dog sleeps."});
  CHECK(d.splits.valid.src_text == Strings{"Ein Kind läuft."});

  cfg.max_len = 3;   // "a dog runs ." and "ein hund läuft ." have 4 tokens
  const datasets::ParallelData short_only = datasets::build_parallel(small_corpus(), cfg);
  CHECK(short_only.splits.train.tokens.src.dim(0) == 1);
  CHECK(short_only.splits.test.tokens.src.dim(0) == 1);   // only training pairs are filtered
  cfg.max_len = 1;
  REQUIRE_THROWS_WITH(datasets::build_parallel(small_corpus(), cfg),
                      Catch::Contains("the training split has no pair"));
}

TEST_CASE("write_parallel stores the translation layout, text and tokeniser settings", "[io][parallel-text]") {
  test::TempDir dir;
  const std::string path = dir.file("p.h5");
  datasets::ParallelConfig cfg;
  cfg.tokenize.lowercase = true;
  const datasets::ParallelData d = datasets::build_parallel(small_corpus(), cfg);
  {
    io::File f = io::File::create(path);
    datasets::write_parallel(f, d);
    f.commit();
  }
  const io::File f = io::File::open_read(path);
  for (const char* split : {"train", "valid", "test"}) {
    const std::string g = std::string("/") + split;
    const Tensor src = f.read(g + "/src", DType::i32);
    CHECK(f.read(g + "/src_len", DType::i32).shape() == Shape{src.dim(0)});
    CHECK(f.read(g + "/tgt", DType::i32).dim(0) == src.dim(0));
    CHECK(f.attr_int(g, "lines") >= src.dim(0));
  }
  CHECK(f.exists("/test/tgt_text"));
  CHECK(!f.exists("/train/tgt_text"));
  CHECK(f.read_strings("/test/src_text") == Strings{"Ein Hund schläft."});
  CHECK(f.attr_string("/vocab", "tokenizer") == datasets::kTokenizerName);
  CHECK(f.attr_int("/vocab", "lowercase") == 1);
  CHECK(data::read_vocab(f, "/vocab/tgt").tokens() == d.tgt_vocab.tokens());
}

TEST_CASE("multi30k: the real corpus imports with the published split sizes", "[data][parallel-text]") {
  const auto root = test::data_dir();
  if (root.empty() || !std::filesystem::exists(root / "multi30k" / "train.de.gz")) {
    test::skip_test("the Multi30k data is not in " + (root.empty() ? std::string("ATTN_DATA_DIR") : root.string()));
    return;
  }
  const auto text = datasets::read_multi30k((root / "multi30k").string(), "de", "en");
  CHECK(text.train.src.size() == 29000);
  CHECK(text.valid.src.size() == 1014);
  CHECK(text.test.src.size() == 1000);
  CHECK(text.train.tgt[0] == "Two young, White males are outside near many bushes.");

  datasets::ParallelConfig cfg;
  cfg.tokenize.lowercase = true;
  cfg.src_vocab.min_freq = cfg.tgt_vocab.min_freq = 2;
  const datasets::ParallelData d = datasets::build_parallel(text, cfg);
  CHECK(d.splits.train.dropped == 0);
  CHECK(d.splits.train.tokens.src.dim(0) == 29000);
  CHECK(d.splits.valid.tokens.src.dim(0) == 1014);
  CHECK(d.splits.test.tokens.src.dim(0) == 1000);
  // The spaCy-tokenised tutorials report about 7.9k German and 5.9k English types at min_freq 2.
  INFO("vocabularies " << d.src_vocab.size() << " / " << d.tgt_vocab.size());
  CHECK(d.src_vocab.size() > 7000);
  CHECK(d.src_vocab.size() < 9000);
  CHECK(d.tgt_vocab.size() > 5000);
  CHECK(d.tgt_vocab.size() < 7000);
  CHECK(row(d.splits.train.tokens.tgt.all(), 0)[0] == d.tgt_vocab.id("two"));
  CHECK(d.splits.test.tgt_text.size() == 1000);
}

#include "attn/data/vocab.hpp"

#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using data::Vocab;
using Tokens = std::vector<std::string>;

namespace {
data::TokenCounts counts_of(const std::vector<Tokens>& sentences) {
  data::TokenCounts counts;
  for (const auto& s : sentences) data::count_tokens(s, counts);
  return counts;
}
}  // namespace

TEST_CASE("vocab: reserved ids, frequency order, ties by bytes, min_freq and max_size", "[unit][vocab]") {
  const auto counts = counts_of({{"the", "dog", "runs", "."}, {"the", "cat", "runs", "."}, {"the", "<unk>", "ant"}});
  // the:3  .:2  runs:2  ant:1  cat:1  dog:1  ("<unk>" is reserved and ignored)
  const Vocab all = Vocab::build(counts);
  CHECK(all.tokens() == Tokens{"<pad>", "<s>", "</s>", "<unk>", "the", ".", "runs", "ant", "cat", "dog"});
  CHECK(Vocab::build(counts, {.min_freq = 2}).tokens() == Tokens{"<pad>", "<s>", "</s>", "<unk>", "the", ".", "runs"});
  CHECK(Vocab::build(counts, {.min_freq = 1, .max_size = 6}).tokens() ==
        Tokens{"<pad>", "<s>", "</s>", "<unk>", "the", "."});
  CHECK(Vocab().size() == 4);
  CHECK(all.id("the") == 4);
  CHECK(all.id("zebra") == data::kUnk);
  CHECK(all.token(9) == "dog");
}

TEST_CASE("vocab: encode and decode", "[unit][vocab]") {
  const Vocab v = Vocab::build(counts_of({{"a", "a", "b"}}));   // a:4, b:5
  CHECK(v.encode({"b", "a", "zzz"}) == std::vector<int32_t>{5, 4, data::kUnk});
  const std::vector<int32_t> row = {data::kBos, 5, 4, data::kUnk, data::kEos, 4, data::kPad};
  CHECK(v.decode(row) == Tokens{"b", "a", "<unk>"});           // BOS skipped, stops at EOS
  CHECK(v.decode(std::vector<int32_t>{4, 0, 0}) == Tokens{"a"});
  REQUIRE_THROWS_WITH(v.decode(std::vector<int32_t>{4, 6}), Catch::Contains("id 6 is outside [0, 6)"));
  REQUIRE_THROWS_WITH(v.token(-1), Catch::Contains("id -1 is outside"));
}

TEST_CASE("vocab: bad options and bad stored vocabularies", "[unit][vocab]") {
  REQUIRE_THROWS_AS(Vocab::build({}, {.min_freq = 0}), ConfigError);
  REQUIRE_THROWS_WITH(Vocab::build({}, {.min_freq = 1, .max_size = 3}),
                      Catch::Contains("max_size must be 0 (no limit) or > 4"));
  REQUIRE_THROWS_WITH(Vocab::from_tokens({"<pad>", "<s>", "<unk>", "</s>"}, "f.h5"),
                      Catch::Contains("f.h5: id 2 is '<unk>', expected '</s>'"));
  REQUIRE_THROWS_WITH(Vocab::from_tokens({"<pad>", "<s>", "</s>", "<unk>", "x", "x"}),
                      Catch::Contains("token 'x' occurs twice (ids 4 and 5)"));
  REQUIRE_THROWS_WITH(Vocab::from_tokens({"<pad>", "<s>"}), Catch::Contains("expected at least the 4 reserved"));
}

TEST_CASE("vocab: store and load as a UTF-8 string dataset", "[io][vocab]") {
  test::TempDir dir;
  const std::string path = dir.file("v.h5");
  const Vocab v = Vocab::build(counts_of({{"Männer", "straße", "日本", "."}}));
  {
    io::File f = io::File::create(path);
    data::write_vocab(f, "/vocab/tgt", v);
    f.write_strings("/vocab/bad", {"<pad>", "x"});
    f.commit();
  }
  const io::File f = io::File::open_read(path);
  const Vocab back = data::read_vocab(f, "/vocab/tgt");
  CHECK(back.tokens() == v.tokens());
  CHECK(back.id("日本") == v.id("日本"));
  REQUIRE_THROWS_WITH(data::read_vocab(f, "/vocab/bad"),
                      Catch::Contains("v.h5: dataset '/vocab/bad': has 2 tokens"));
}

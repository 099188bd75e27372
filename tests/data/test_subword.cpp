// data::SubwordModel and train_subword_model (subword.hpp): attnlab's reserved ids, exact round
// trips and where normalisation changes text, reproducible training, and refusals.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "attn/core/error.hpp"
#include "attn/data/subword.hpp"
#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

// 40 short English sentences of a small world (enough text for a vocabulary of 100 pieces).
std::vector<std::string> small_corpus() {
  const std::vector<std::string> who{"A dog", "The black cat", "Two children", "A man in a red shirt", "Some people"};
  const std::vector<std::string> what{
      "runs across the field.",    "is sleeping on the sofa.", "plays in the snow.",  "walks down the busy street.",
      "jumps over a small fence.", "looks at the camera.",     "is eating an apple.", "waits for the bus."};
  std::vector<std::string> out;
  for (const std::string& a : who)
    for (const std::string& b : what) out.push_back(a + " " + b);
  return out;
}

data::SubwordModel small_model(data::SubwordType type = data::SubwordType::bpe, const std::string& norm = "nmt_nfkc") {
  data::SubwordTraining o;
  o.type = type;
  o.vocab_size = type == data::SubwordType::bpe ? 100 : 60;   // unigram: at most 61 pieces in this text
  o.normalization = norm;
  return data::SubwordModel::from_bytes(data::train_subword_model(small_corpus(), o), "small.model");
}

std::string join(const std::vector<std::string>& pieces) {
  std::string s;
  for (const std::string& p : pieces) s += (s.empty() ? "" : " ") + p;
  return s;
}

}  // namespace

TEST_CASE("subword models: attnlab's reserved ids, a vocabulary of pieces, exact round trips", "[data][subword]") {
  for (const data::SubwordType type : {data::SubwordType::bpe, data::SubwordType::unigram}) {
    INFO(data::subword_type_name(type));
    const data::SubwordModel m = small_model(type);
    const data::Vocab v = data::Vocab::from_tokens(m.pieces());
    CHECK(v.size() == (type == data::SubwordType::bpe ? 100 : 60));
    CHECK(v.token(data::kPad) == "<pad>");
    CHECK(v.token(data::kBos) == "<s>");
    CHECK(v.token(data::kEos) == "</s>");
    CHECK(v.token(data::kUnk) == "<unk>");
    for (const std::string& s : small_corpus()) {
      const std::vector<std::string> pieces = m.encode(s);
      REQUIRE(!pieces.empty());
      CHECK(pieces.front().rfind("\xE2\x96\x81", 0) == 0);   // a word start is marked "▁"
      for (const std::string& p : pieces) CHECK(v.id(p) >= data::kNumReserved);
      CHECK(m.decode(pieces) == s);
    }
    // A word never seen still encodes (pieces down to characters), and decodes back.
    CHECK(m.decode(m.encode("A cat sleeps.")) == "A cat sleeps.");
  }
}

TEST_CASE("subword models: what nmt_nfkc normalisation changes, and identity keeps", "[data][subword]") {
  const data::SubwordModel nfkc = small_model();
  // Runs of spaces become one; leading and trailing spaces go.
  CHECK(nfkc.decode(nfkc.encode("  A dog   runs. ")) == "A dog runs.");
  // NFKC folds compatibility characters: the ligature "ﬁ" is "fi", full-width "Ａ" is "A".
  CHECK(nfkc.decode(nfkc.encode("\xEF\xAC\x81"
                                "eld")) == "field");
  CHECK(nfkc.decode(nfkc.encode("\xEF\xBC\xA1 dog")) == "A dog");
  const data::SubwordModel identity = small_model(data::SubwordType::bpe, "identity");
  CHECK(identity.decode(identity.encode("\xEF\xAC\x81"
                                        "eld")) == "\xEF\xAC\x81"
                                                   "eld");
}

TEST_CASE("subword models: training is reproducible, the bytes load back, files load", "[data][subword]") {
  data::SubwordTraining o;
  o.vocab_size = 90;
  const std::string a = data::train_subword_model(small_corpus(), o), b = data::train_subword_model(small_corpus(), o);
  CHECK(a == b);
  const data::SubwordModel m = data::SubwordModel::from_bytes(a, "a.model");
  CHECK(m.bytes() == a);
  test::TempDir dir;
  {
    std::ofstream f(dir.file("m.model"), std::ios::binary);
    f << a;
  }
  const data::SubwordModel loaded = data::SubwordModel::load(dir.file("m.model"));
  CHECK(loaded.pieces() == m.pieces());
  CHECK(join(loaded.encode("The black cat plays.")) == join(m.encode("The black cat plays.")));
}

TEST_CASE("subword models: bad text, bad models and bad options are refused naming them", "[data][subword]") {
  const data::SubwordModel m = small_model();
  REQUIRE_THROWS_WITH(m.encode("caf\xE9"), Contains("small.model: the text is not UTF-8 (byte 3)"));
  REQUIRE_THROWS_AS(m.encode("caf\xE9"), DataError);
  REQUIRE_THROWS_WITH(data::SubwordModel::from_bytes("not a model", "x.model"),
                      Contains("x.model: not a SentencePiece model"));
  REQUIRE_THROWS_AS(data::SubwordModel::from_bytes("not a model", "x.model"), FormatError);
  REQUIRE_THROWS_AS(data::SubwordModel::load("/nonexistent/m.model"), IoError);
  std::vector<std::string> text = small_corpus();
  text[7] = "bad \xC3\x28 byte";
  REQUIRE_THROWS_WITH(data::train_subword_model(text, {}), Contains("training sentence 8 is not UTF-8 (byte 4)"));
  data::SubwordTraining o;
  o.vocab_size = 4;
  REQUIRE_THROWS_WITH(data::train_subword_model(small_corpus(), o), Contains("vocab_size must be in [5, 2^24], got 4"));
  o = {};
  o.character_coverage = 0.0;
  REQUIRE_THROWS_WITH(data::train_subword_model(small_corpus(), o), Contains("character_coverage"));
  o = {};
  o.vocab_size = 5000;   // more pieces than this text has
  REQUIRE_THROWS_AS(data::train_subword_model(small_corpus(), o), DataError);
  o = {};
  o.normalization = "no_such_rule";
  REQUIRE_THROWS_WITH(data::train_subword_model(small_corpus(), o), Contains("no_such_rule"));
  CHECK(data::valid_utf8("\xF0\x9F\x90\x95 dog"));   // 4-byte sequence
  CHECK_FALSE(data::valid_utf8("\xC0\xAF"));         // overlong
  CHECK_FALSE(data::valid_utf8("\xED\xA0\x80"));     // a UTF-16 surrogate
}

TEST_CASE("a subword vocabulary carries its model: write_vocab stores it, read_vocab checks it", "[data][subword]") {
  auto model = std::make_shared<const data::SubwordModel>(small_model());
  const data::Vocab v = data::Vocab::from_subword(model);
  REQUIRE(v.subword() == model.get());
  CHECK(v.tokens() == model->pieces());
  CHECK(v.detokenize(model->encode("A dog runs.")) == "A dog runs.");
  CHECK(data::Vocab().detokenize({"A", "dog", "runs", "."}) == "A dog runs.");   // words: the tokenizer's rules
  test::TempDir dir;
  {
    io::File f = io::File::create(dir.file("v.h5"));
    data::write_vocab(f, "/vocab/tgt", v);
    data::write_vocab(f, "/vocab/src", data::Vocab());   // a word vocabulary: no model
    // A model whose pieces are not the vocabulary's.
    data::write_vocab(f, "/other", data::Vocab::from_tokens(std::vector<std::string>(model->pieces())));
    f.write("/other_subword", f.read("/vocab/tgt_subword"), {.compress = false, .chunk_rows = 0, .as_uint8 = true});
    f.write_strings("/short", {"<pad>", "<s>", "</s>", "<unk>", "x"});
    f.write("/short_subword", f.read("/vocab/tgt_subword"), {.compress = false, .chunk_rows = 0, .as_uint8 = true});
    f.commit();
  }
  const io::File f = io::File::open_read(dir.file("v.h5"));
  CHECK(f.type_name("/vocab/tgt_subword") == "uint8");
  const data::Vocab back = data::read_vocab(f, "/vocab/tgt");
  REQUIRE(back.subword() != nullptr);
  CHECK(back.subword()->bytes() == model->bytes());
  CHECK(back.tokens() == v.tokens());
  CHECK(data::read_vocab(f, "/vocab/src").subword() == nullptr);
  CHECK(data::read_vocab(f, "/other").subword() != nullptr);   // the same pieces: accepted
  REQUIRE_THROWS_WITH(data::read_vocab(f, "/short"),
                      Contains("v.h5: dataset '/short_subword' is a SentencePiece model of 100 pieces that are not "
                               "'/short' (5 tokens)"));
}

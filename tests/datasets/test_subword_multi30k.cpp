// A joint BPE model of Multi30k's training text (data/subword.hpp) on the real corpus: the
// test2016 sentences round-trip exactly, and every training line that does not differs only in
// the white space SentencePiece's nmt_nfkc normalisation folds.
#include <filesystem>
#include <string>
#include <vector>

#include "attn/data/subword.hpp"
#include "attn/datasets/parallel_text.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

// What nmt_nfkc does to the white space of these lines: runs of spaces, tabs and no-break spaces
// (U+00A0) become one space, leading and trailing ones go.
std::string fold_spaces(const std::string& s) {
  std::string out;
  bool space = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool nbsp = s.compare(i, 2, "\xC2\xA0") == 0;
    if (s[i] == ' ' || s[i] == '\t' || nbsp) {
      space = true;
      i += nbsp ? 1 : 0;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += s[i];
  }
  return out;
}

}  // namespace

TEST_CASE("subword models on Multi30k: test2016 round-trips exactly, training lines up to folded white space",
          "[integration][data][subword]") {
  const auto root = test::data_dir();
  if (root.empty() || !std::filesystem::exists(root / "multi30k" / "train.de.gz")) {
    test::skip_test("the Multi30k data is not in " + (root.empty() ? std::string("ATTN_DATA_DIR") : root.string()));
    return;
  }
  const std::string dir = (root / "multi30k").string();
  std::vector<std::string> train;
  for (const char* lang : {"de", "en"})
    for (std::string& line : datasets::read_text_lines(dir + "/train." + lang + ".gz"))
      train.push_back(std::move(line));
  REQUIRE(train.size() == 58000);
  data::SubwordTraining o;
  o.vocab_size = 8000;
  const data::SubwordModel m = data::SubwordModel::from_bytes(data::train_subword_model(train, o), "joint8k");
  const data::Vocab vocab = data::Vocab::from_tokens(m.pieces());
  CHECK(vocab.size() == 8000);

  for (const char* lang : {"de", "en"})
    for (const std::string& s : datasets::read_text_lines(dir + "/test_2016_flickr." + lang + ".gz")) {
      const std::vector<std::string> pieces = m.encode(s);
      for (const std::string& p : pieces) CHECK(vocab.id(p) != data::kUnk);   // no <unk> in test2016
      CHECK(m.decode(pieces) == s);
    }
  int64_t changed = 0;
  for (const std::string& s : train) {
    const std::string back = m.decode(m.encode(s));
    if (back == s) continue;
    ++changed;
    INFO(s);
    CHECK(back == fold_spaces(s));
  }
  CHECK(changed == 130);   // of 58,000: double spaces, a trailing space, no-break spaces, a tab
}

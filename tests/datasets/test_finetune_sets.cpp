// The fine-tuning importers: bAbI questions as labelled sequences (datasets/babi_cls.hpp) on
// hand-written task files, and sentence pairs of a parallel text (datasets/sentence_pairs.hpp).
#include <algorithm>

#include "attn/datasets/babi_cls.hpp"
#include "attn/datasets/sentence_pairs.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;
using Strings = std::vector<std::string>;

namespace {

// Row i of a labelled split: its words, and its segments.
Strings words(const transformer::LabelledSplit& s, const data::Vocab& vocab, int64_t i) {
  const int32_t* p = s.src.all().idata() + i * s.src.dim(1);
  Strings out;
  for (int32_t t = 0; t < s.src_len.idata()[i]; ++t) out.push_back(vocab.token(p[t]));
  return out;
}
std::vector<int32_t> segments(const transformer::LabelledSplit& s, int64_t i) {
  const int32_t* p = s.segments.all().idata() + i * s.segments.dim(1);
  return {p, p + s.src_len.idata()[i]};
}

datasets::BabiTask task(const test::TempDir& dir, int number, const char* train, const char* test) {
  const std::string stem = dir.file("qa" + std::to_string(number) + "_hand_");
  test::write_text(stem + "train.txt", train);
  test::write_text(stem + "test.txt", test);
  return {number, datasets::read_babi_file(stem + "train.txt", 50), datasets::read_babi_file(stem + "test.txt", 50)};
}

}  // namespace

TEST_CASE("babi-cls: the memory as segment 0, the question as segment 1, the answer as the class, task 19 left out", "[unit][babi]") {
  test::TempDir dir;
  const datasets::BabiTask one = task(dir, 1,
      "1 Mary moved to the bathroom.\n2 Where is Mary? \tbathroom\t1\n3 John went to the hallway.\n"
      "4 Where is John? \thallway\t3\n",
      "1 John went to the bathroom.\n2 Where is John?\tbathroom\t1\n");
  const datasets::BabiTask nineteen = task(dir, 19,
      "1 The kitchen is north of the hallway.\n2 How do you go from the hallway to the kitchen?\tn,w\t1\n",
      "1 The kitchen is north of the hallway.\n2 How do you go from the hallway to the kitchen?\tn,w\t1\n");
  datasets::BabiConfig cfg;
  cfg.valid_fraction = 0.0;
  const datasets::BabiData qa = datasets::build_babi({one, nineteen}, cfg);
  const datasets::BabiClsData d = datasets::babi_classification(qa, nullptr);
  CHECK(d.tasks == std::vector<int>{1});
  CHECK(d.left_out == std::vector<int>{19});
  const transformer::LabelledSplit& tr = d.splits.train;
  REQUIRE(tr.size() == 2);
  CHECK(words(tr, d.vocab, 1) == Strings{"mary", "moved", "to", "the", "bathroom", "john", "went", "to", "the",
                                         "hallway", "where", "is", "john"});
  CHECK(segments(tr, 1) == std::vector<int32_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1});
  CHECK(d.labels.size() == 2);   // bathroom, hallway; n,w only answers the task left out
  CHECK(d.labels[static_cast<size_t>(tr.label.idata()[0])] == "bathroom");
  CHECK(d.labels[static_cast<size_t>(tr.label.idata()[1])] == "hallway");
  CHECK(d.splits.test.size() == 1);
  CHECK(d.task.test.idata()[0] == 1);
  CHECK(d.longest == 13);

  // Another data set's vocabulary: its ids, the words it lacks as <unk> and counted.
  const data::Vocab other = data::Vocab::from_tokens({"<pad>", "<s>", "</s>", "<unk>", "where", "is", "john", "mary"});
  const datasets::BabiClsData r = datasets::babi_classification(qa, &other);
  CHECK(words(r.splits.train, other, 0) == Strings{"mary", "<unk>", "<unk>", "<unk>", "<unk>", "where", "is", "mary"});
  CHECK(r.unknown_words == 4 + 8 + 4);   // train rows 0 and 1, then the test row

  REQUIRE_THROWS_WITH(datasets::babi_classification(datasets::build_babi({nineteen}, cfg), nullptr),
                      Contains("tasks 8 and 19 answer with lists"));
}

TEST_CASE("pairs: each line with its translation, then with another line's, one vocabulary, by the seed", "[unit][parallel]") {
  datasets::Splits<datasets::TextPairs> text;
  text.train = {{"a b", "c d e", "f", "g h"}, {"w x", "y", "z z", "v"}};
  text.test = {{"a", "c"}, {"x", "x"}};   // two lines with the same target: no negative to draw
  datasets::ParallelConfig cfg;
  cfg.vocab = datasets::joint_vocab(text, cfg.tokenize, {.min_freq = 1, .max_size = 0});
  CHECK(cfg.vocab->size() == 4 + 13);
  text.test = {};
  const datasets::PairsData d = datasets::sentence_pairs(datasets::build_parallel(text, cfg), 3);
  const transformer::LabelledSplit& tr = d.splits.train;
  REQUIRE(tr.size() == 8);
  for (int64_t i = 0; i < 4; ++i) {
    const Strings pos = words(tr, d.vocab, 2 * i), neg = words(tr, d.vocab, 2 * i + 1);
    CHECK(tr.label.idata()[2 * i] == 1);
    CHECK(tr.label.idata()[2 * i + 1] == 0);
    const size_t a_len = data::tokenize(text.train.src[static_cast<size_t>(i)]).size();
    CHECK(Strings(pos.begin(), pos.begin() + static_cast<std::ptrdiff_t>(a_len)) ==
          Strings(neg.begin(), neg.begin() + static_cast<std::ptrdiff_t>(a_len)));   // the same A
    CHECK(pos != neg);                                                             // another B
    const std::vector<int32_t> seg = segments(tr, 2 * i);
    CHECK(std::count(seg.begin(), seg.end(), 0) == static_cast<std::ptrdiff_t>(a_len));
    CHECK(seg.back() == 1);
  }
  const datasets::PairsData again = datasets::sentence_pairs(datasets::build_parallel(text, cfg), 3);
  CHECK(std::equal(tr.src.all().idata(), tr.src.all().idata() + tr.src.all().numel(), again.splits.train.src.all().idata()));

  text.test = {{"a", "c"}, {"x", "x"}};
  REQUIRE_THROWS_WITH(datasets::sentence_pairs(datasets::build_parallel(text, cfg), 3),
                      Contains("split test") && Contains("no two different targets"));
}

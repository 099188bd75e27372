// The bAbI question-answering layout (attn/families/memnet/qa_data.hpp): a written split reads back the
// same, gather cuts the memory and the widths to the selected rows, and damaged files are
// refused naming the file, dataset and row.
#include "attn/families/memnet/qa_data.hpp"

#include <vector>

#include "test_support.hpp"

using namespace attn;
using Catch::Contains;
using Ints = std::vector<int32_t>;

namespace {

constexpr int64_t kVocab = 10;   // ids 4..9 are words

// Two questions over a memory of Ms = 3 sentences of Ws = 3 words, questions of Wq = 2 words:
// row 0 remembers 2 sentences (the second slot supports it), row 1 all 3 (slots 0 and 2).
memnet::QaSplit two_questions() {
  memnet::QaSplit s;
  s.story = Tensor::from_ints({2, 3, 3}, {5, 6, 0,  7, 0, 0,  0, 0, 0,
                                          5, 0, 0,  6, 7, 8,  9, 0, 0});
  s.story_len = Tensor::from_ints({2}, {2, 3});
  s.question = Tensor::from_ints({2, 2}, {8, 9,  9, 0});
  s.answer = Tensor::from_ints({2}, {5, 6});
  s.support = Tensor::from_ints({2, 2}, {1, -1,  0, 2});
  s.task = Tensor::from_ints({2}, {1, 20});
  return s;
}

Ints ints(const Tensor& t) { return {t.idata(), t.idata() + t.numel()}; }

// Writes `s` as /<split> of dir/name and opens it for reading.
io::File written(const test::TempDir& dir, const memnet::QaSplit& s, const std::string& name = "qa.h5",
                 const std::string& split = "train") {
  {
    io::File f = io::File::create(dir.file(name));
    memnet::write_qa_split(f, split, s);
    f.commit();
  }
  return io::File::open_read(dir.file(name));
}

}  // namespace

TEST_CASE("qa data: write, read back, gather", "[io][qa_data]") {
  test::TempDir dir;
  const io::File f = written(dir, two_questions());
  const memnet::QaSplit s = memnet::read_qa_split(f, "train", kVocab);
  CHECK(s.size() == 2);
  CHECK(s.memory_size() == 3);
  CHECK(s.sentence_width() == 3);
  CHECK(s.question_width() == 2);
  const memnet::QaSplit want = two_questions();
  CHECK(ints(s.story.all()) == ints(want.story.all()));
  CHECK(ints(s.story_len) == Ints{2, 3});
  CHECK(ints(s.question.all()) == ints(want.question.all()));
  CHECK(ints(s.answer) == Ints{5, 6});
  CHECK(ints(s.support) == Ints{1, -1, 0, 2});
  CHECK(ints(s.task) == Ints{1, 20});
  REQUIRE_THROWS_WITH(memnet::read_qa_split(f, "test", kVocab), Contains("qa.h5: no split '/test' (found: /train)"));

  // Row 0 alone: 2 sentences of at most 2 words, a question of 2 words; Ks stays 2.
  const int64_t first[] = {0};
  const memnet::QaBatch a = s.gather(first);
  CHECK(a.story.shape() == Shape{1, 2, 2});
  CHECK(ints(a.story) == Ints{5, 6, 7, 0});
  CHECK(ints(a.question) == Ints{8, 9});
  CHECK(ints(a.support) == Ints{1, -1});
  CHECK(ints(a.story_len) == Ints{2});
  CHECK(ints(a.answer) == Ints{5});
  CHECK(ints(a.task) == Ints{1});
  // Row 1 then row 0: the widest of both, in that order.
  const int64_t both[] = {1, 0};
  const memnet::QaBatch b = s.gather(both);
  CHECK(b.story.shape() == Shape{2, 3, 3});
  CHECK(ints(b.story) == Ints{5, 0, 0, 6, 7, 8, 9, 0, 0,  5, 6, 0, 7, 0, 0, 0, 0, 0});
  CHECK(ints(b.question) == Ints{9, 0, 8, 9});
  CHECK(ints(b.task) == Ints{20, 1});
  CHECK(ints(b.support) == Ints{0, 2, 1, -1});
  // A question of one word and a one-word memory: everything cut to width 1.
  memnet::QaSplit t = two_questions();
  t.story_len.idata()[1] = 1;
  const int64_t second[] = {1};
  const memnet::QaBatch c = t.gather(second);
  CHECK(c.story.shape() == Shape{1, 1, 1});
  CHECK(c.question.shape() == Shape{1, 1});
  // No rows: an empty split of widths 1 that writes and reads back as /valid (bAbI's
  // --valid-fraction 0), and is refused as /train, which a run trains on.
  const memnet::QaBatch none = s.gather({});
  CHECK(none.size() == 0);
  CHECK(none.story.shape() == Shape{0, 1, 1});
  const memnet::QaSplit none_split{none.story, none.story_len, none.question, none.answer, none.support, none.task};
  const memnet::QaSplit back = memnet::read_qa_split(written(dir, none_split, "empty.h5", "valid"), "valid", kVocab);
  CHECK(back.size() == 0);
  CHECK(back.support.shape() == Shape{0, 2});
  REQUIRE_THROWS_WITH(memnet::read_qa_split(written(dir, none_split, "empty_train.h5"), "train", kVocab),
                      Catch::Contains("empty_train.h5: dataset '/train/story' has 0 rows; a training split needs at "
                                      "least 1"));
}

TEST_CASE("qa data: the vocabulary is /vocab/words", "[io][qa_data]") {
  test::TempDir dir;
  {
    io::File f = io::File::create(dir.file("v.h5"));
    data::TokenCounts counts{{"mary", 2}, {"kitchen", 1}};
    data::write_vocab(f, memnet::kQaVocab, data::Vocab::build(counts));
    f.commit();
  }
  const data::Vocab v = memnet::read_qa_vocab(io::File::open_read(dir.file("v.h5")));
  CHECK(v.tokens() == std::vector<std::string>{"<pad>", "<s>", "</s>", "<unk>", "mary", "kitchen"});
}

TEST_CASE("qa data: lengths, ids, answers, slots and tasks out of range are refused", "[io][qa_data]") {
  test::TempDir dir;
  auto refused = [&](const memnet::QaSplit& s) { return memnet::read_qa_split(written(dir, s), "train", kVocab); };
  memnet::QaSplit s = two_questions();
  s.story_len.idata()[0] = 0;
  REQUIRE_THROWS_AS(refused(s), DataError);
  REQUIRE_THROWS_WITH(refused(s), Contains("qa.h5: dataset '/train/story_len' row 0 is 0, "
                                           "expected a number of sentences in [1, 3]"));
  s = two_questions();
  s.story_len.idata()[1] = 4;
  REQUIRE_THROWS_WITH(refused(s), Contains("'/train/story_len' row 1 is 4, expected a number of sentences in [1, 3]"));
  s = two_questions();
  s.story.all().idata()[13] = 10;   // row 1, slot 1, word 1
  REQUIRE_THROWS_AS(refused(s), DataError);
  REQUIRE_THROWS_WITH(refused(s), Contains("qa.h5: dataset '/train/story' row 1 holds 10, expected word ids in [0, 10)"));
  s = two_questions();
  s.story.all().idata()[2] = -1;
  REQUIRE_THROWS_WITH(refused(s), Contains("'/train/story' row 0 holds -1, expected word ids in [0, 10)"));
  s = two_questions();
  s.question.all().idata()[3] = 12;
  REQUIRE_THROWS_WITH(refused(s), Contains("qa.h5: dataset '/train/question' row 1 holds 12, expected word ids in [0, 10)"));
  s = two_questions();
  s.answer.idata()[0] = data::kUnk;   // an answer must be a word of the vocabulary
  REQUIRE_THROWS_AS(refused(s), DataError);
  REQUIRE_THROWS_WITH(refused(s), Contains("qa.h5: dataset '/train/answer' row 0 holds 3, expected an answer id in [4, 10)"));
  s = two_questions();
  s.answer.idata()[1] = 10;
  REQUIRE_THROWS_WITH(refused(s), Contains("'/train/answer' row 1 holds 10, expected an answer id in [4, 10)"));
  s = two_questions();
  s.support.idata()[0] = 2;   // row 0 remembers 2 sentences: slots 0 and 1
  REQUIRE_THROWS_AS(refused(s), DataError);
  REQUIRE_THROWS_WITH(refused(s), Contains("qa.h5: dataset '/train/support' row 0 holds 2, "
                                           "expected a memory slot in [-1, story_len = 2)"));
  s = two_questions();
  s.support.idata()[3] = -2;
  REQUIRE_THROWS_WITH(refused(s), Contains("'/train/support' row 1 holds -2, expected a memory slot in [-1, story_len = 3)"));
  s = two_questions();
  s.task.idata()[1] = 21;
  REQUIRE_THROWS_AS(refused(s), DataError);
  REQUIRE_THROWS_WITH(refused(s), Contains("qa.h5: dataset '/train/task' row 1 holds 21, expected a bAbI task in [1, 20]"));
  s = two_questions();
  s.task.idata()[0] = 0;
  REQUIRE_THROWS_WITH(refused(s), Contains("'/train/task' row 0 holds 0, expected a bAbI task in [1, 20]"));
}

TEST_CASE("qa data: wrong dtypes, ranks, row counts and missing datasets are refused", "[io][qa_data]") {
  test::TempDir dir;
  auto refused = [&](const memnet::QaSplit& s) { return memnet::read_qa_split(written(dir, s), "train", kVocab); };
  memnet::QaSplit s = two_questions();
  s.answer = Tensor::from({2}, {5, 6});   // float32
  REQUIRE_THROWS_AS(refused(s), FormatError);
  REQUIRE_THROWS_WITH(refused(s), Contains("qa.h5: dataset '/train/answer' holds float32") &&
                                      Contains("expected"));
  s = two_questions();
  s.story_len = Tensor::from_ints({3}, {1, 1, 1});
  REQUIRE_THROWS_AS(refused(s), ShapeError);
  REQUIRE_THROWS_WITH(refused(s), Contains("qa.h5: dataset '/train/story_len' has shape [3], expected [2]"));
  s = two_questions();
  s.question = Tensor::from_ints({4}, {8, 9, 9, 0});
  REQUIRE_THROWS_AS(refused(s), ShapeError);
  REQUIRE_THROWS_WITH(refused(s), Contains("'/train/question' has shape [4], expected [2, *]"));
  s = two_questions();
  s.story = Tensor::from_ints({2, 9}, std::vector<int32_t>(18, 4));
  REQUIRE_THROWS_WITH(refused(s), Contains("'/train/story' has shape [2, 9], expected [*, *, *]"));
  s = two_questions();
  s.support = Tensor::from_ints({1, 2}, {0, -1});
  REQUIRE_THROWS_WITH(refused(s), Contains("'/train/support' has shape [1, 2], expected [2, *]"));

  {
    io::File f = io::File::create(dir.file("part.h5"));
    const memnet::QaSplit q = two_questions();
    f.write_all("/train/", {{"story", q.story.all()}, {"story_len", q.story_len}, {"question", q.question.all()},
                            {"answer", q.answer}, {"support", q.support}});
    f.commit();
  }
  REQUIRE_THROWS_AS(memnet::read_qa_split(io::File::open_read(dir.file("part.h5")), "train", kVocab), FormatError);
  REQUIRE_THROWS_WITH(memnet::read_qa_split(io::File::open_read(dir.file("part.h5")), "train", kVocab),
                      Contains("part.h5: no dataset '/train/task' (found: /train/answer, /train/question, "
                               "/train/story, /train/story_len, /train/support)"));
}

// The bAbI importer (datasets/babi.hpp): a hand-written story file parsed exactly (memory
// window, supporting facts inside and outside it, a question in the middle of a story, a
// two-word answer, a second story), malformed lines refused naming file and line, the
// held-out questions, and the real task files when the shared data is there.
#include "attn/datasets/babi.hpp"

#include <filesystem>
#include <set>

#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;
using Ints = std::vector<int32_t>;
using Strings = std::vector<std::string>;

namespace {


Ints ints(const Tensor& t) { return {t.idata(), t.idata() + t.numel()}; }

// Two stories. With a memory of 3 sentences: the question of line 3 sees 2 statements, the one
// of line 7 the last 3 of 5 (its first supporting fact, line 2, has left the window), and the
// second story's question sees only that story's 2 statements. Its answer "n,w" is one word.
constexpr const char* kTrain =
    "1 Mary moved to the bathroom.\n"
    "2 John went to the hallway.\n"
    "3 Where is Mary? \tbathroom\t1\n"
    "4 Daniel went back to the hallway.\n"
    "5 Sandra moved to the garden.\n"
    "6 John moved to the office.\n"
    "7 Where is John? \toffice\t2 6\n"
    "1 The kitchen is north of the hallway.\n"
    "2 The garden is west of the kitchen.\n"
    "3 How do you go from the hallway to the garden?\tn,w\t1 2\n";
// "travelled" and "fred" are not training words; the answer "cinema" is in no training file.
constexpr const char* kTest =
    "1 Mary travelled to the kitchen.\n"
    "2 Where is Mary?\tkitchen\t1\n"
    "3 Fred went to the cinema.\n"
    "4 Where is Fred?\tCinema\t3\n";

// kTrain's words by count (the 11, to 6, hallway 4, is 4, garden 3, ...), ties by bytes,
// then the test-only answer.
const Strings kVocab = {"<pad>", "<s>", "</s>", "<unk>",
                        "the", "to", "hallway", "is", "garden", "john", "moved",                        // 4-10
                        "bathroom", "kitchen", "mary", "of", "office", "went", "where",                 // 11-17
                        "back", "daniel", "do", "from", "go", "how", "n,w", "north", "sandra", "west",  // 18-27
                        "you", "cinema"};                                                               // 28-29

datasets::BabiTask hand_written_task(const test::TempDir& dir, int64_t memory_size) {
  test::write_text(dir.file("qa5_hand_train.txt"), kTrain);
  test::write_text(dir.file("qa5_hand_test.txt"), kTest);
  return {5, datasets::read_babi_file(dir.file("qa5_hand_train.txt"), memory_size),
          datasets::read_babi_file(dir.file("qa5_hand_test.txt"), memory_size)};
}

// The message of the FormatError parse_babi throws on `text` (named bad.txt), memory 50.
std::string refusal(const std::string& text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = text.find('\n', begin);
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  try {
    datasets::parse_babi(lines, "bad.txt", 50);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("babi_words: lower-cased, split at spaces, the final '.' or '?' removed", "[unit][babi]") {
  CHECK(datasets::babi_words("Mary moved to the bathroom.") == Strings{"mary", "moved", "to", "the", "bathroom"});
  CHECK(datasets::babi_words("Where is Mary? ") == Strings{"where", "is", "mary"});
  CHECK(datasets::babi_words("Is it  there ?") == Strings{"is", "it", "there"});
  CHECK(datasets::babi_words("Don't stop, Fred.") == Strings{"don't", "stop,", "fred"});   // kept inside words
  CHECK(datasets::babi_words(" . ").empty());
}

TEST_CASE("parse_babi: the memory window, support slots and stories of a hand-written file", "[unit][babi]") {
  test::TempDir dir;
  const datasets::BabiTask t = hand_written_task(dir, /*memory_size=*/3);
  const datasets::BabiFile& f = t.train;
  CHECK(f.path == dir.file("qa5_hand_train.txt"));
  REQUIRE(f.statements.size() == 7);   // question lines are not statements
  CHECK(f.statements[2] == Strings{"daniel", "went", "back", "to", "the", "hallway"});
  REQUIRE(f.questions.size() == 3);
  const datasets::BabiQuestion& a = f.questions[0];
  CHECK(a.line == 3);
  CHECK(a.memory_begin == 0);
  CHECK(a.memory_end == 2);
  CHECK(a.words == Strings{"where", "is", "mary"});
  CHECK(a.answer == "bathroom");
  CHECK(a.support == Ints{0});
  const datasets::BabiQuestion& b = f.questions[1];   // after the question of line 3, 5 statements
  CHECK(b.line == 7);
  CHECK(b.memory_begin == 2);
  CHECK(b.memory_end == 5);
  CHECK(b.support == Ints{-1, 2});   // line 2 fell out; line 6 is the newest slot
  const datasets::BabiQuestion& c = f.questions[2];   // a new story: nothing of the first one
  CHECK(c.line == 10);
  CHECK(c.memory_begin == 5);
  CHECK(c.memory_end == 7);
  CHECK(c.answer == "n,w");
  CHECK(c.support == Ints{0, 1});
  CHECK(t.test.questions[1].answer == "cinema");   // lower-cased

  // A larger window keeps the whole story.
  const datasets::BabiFile wide = datasets::read_babi_file(dir.file("qa5_hand_train.txt"), 50);
  CHECK(wide.questions[1].memory_begin == 0);
  CHECK(wide.questions[1].support == Ints{1, 4});
  REQUIRE_THROWS_AS(datasets::read_babi_file(dir.file("qa5_hand_train.txt"), 0), ConfigError);
}

TEST_CASE("build_babi encodes the hand-written task exactly", "[unit][babi]") {
  test::TempDir dir;
  datasets::BabiConfig cfg;
  cfg.valid_fraction = 0.0;
  const datasets::BabiData d = datasets::build_babi({hand_written_task(dir, 3)}, cfg);
  CHECK(d.vocab.tokens() == kVocab);
  CHECK(d.tasks == std::vector<int>{5});
  CHECK(d.test_only_answers == Strings{"cinema"});
  CHECK(d.unknown_test_words == 3);   // travelled, fred, fred

  const memnet::QaSplit& tr = d.splits.train;
  CHECK(tr.story.shape() == Shape{3, 3, 7});
  CHECK(ints(tr.story.all()) == Ints{
      13, 10, 5, 4, 11, 0, 0,    // mary moved to the bathroom
      9, 16, 5, 4, 6, 0, 0,      // john went to the hallway
      0, 0, 0, 0, 0, 0, 0,
      19, 16, 18, 5, 4, 6, 0,    // daniel went back to the hallway
      26, 10, 5, 4, 8, 0, 0,     // sandra moved to the garden
      9, 10, 5, 4, 15, 0, 0,     // john moved to the office
      4, 12, 7, 25, 14, 4, 6,    // the kitchen is north of the hallway
      4, 8, 7, 27, 14, 4, 12,    // the garden is west of the kitchen
      0, 0, 0, 0, 0, 0, 0});
  CHECK(ints(tr.story_len) == Ints{2, 3, 2});
  CHECK(tr.question.shape() == Shape{3, 10});
  CHECK(ints(tr.question.all()) == Ints{
      17, 7, 13, 0, 0, 0, 0, 0, 0, 0,      // where is mary
      17, 7, 9, 0, 0, 0, 0, 0, 0, 0,       // where is john
      23, 20, 28, 22, 21, 4, 6, 5, 4, 8}); // how do you go from the hallway to the garden
  CHECK(ints(tr.answer) == Ints{11, 15, 24});   // bathroom, office, n,w
  CHECK(tr.support.shape() == Shape{3, 2});
  CHECK(ints(tr.support) == Ints{0, -1, -1, 2, 0, 1});
  CHECK(ints(tr.task) == Ints{5, 5, 5});

  const memnet::QaSplit& te = d.splits.test;
  CHECK(te.story.shape() == Shape{2, 2, 5});
  CHECK(ints(te.story.all()) == Ints{
      13, 3, 5, 4, 12,    // mary <unk> to the kitchen
      0, 0, 0, 0, 0,
      13, 3, 5, 4, 12,
      3, 16, 5, 4, 29});  // <unk> went to the cinema
  CHECK(ints(te.story_len) == Ints{1, 2});
  CHECK(ints(te.question.all()) == Ints{17, 7, 13, 17, 7, 3});
  CHECK(ints(te.answer) == Ints{12, 29});
  CHECK(ints(te.support) == Ints{0, 1});
  CHECK(ints(te.task) == Ints{5, 5});

  const memnet::QaSplit& va = d.splits.valid;   // nothing held out
  CHECK(va.size() == 0);
  CHECK(va.story.shape() == Shape{0, 1, 1});

  // Written and read back through the checked reader.
  {
    io::File f = io::File::create(dir.file("b.h5"));
    datasets::write_babi(f, d);
    f.commit();
  }
  const io::File f = io::File::open_read(dir.file("b.h5"));
  const data::Vocab v = memnet::read_qa_vocab(f);
  CHECK(v.tokens() == kVocab);
  for (const char* split : {"train", "valid", "test"}) REQUIRE_NOTHROW(memnet::read_qa_split(f, split, v.size()));
  CHECK(ints(memnet::read_qa_split(f, "train", v.size()).story.all()) == ints(tr.story.all()));
  CHECK(f.attr_string("/", "tasks") == "5");
  CHECK(!f.has_attr("/", "tasks_left_out"));
  CHECK(f.attr_string("/vocab", "tokenizer") == datasets::kBabiTokenizer);
  CHECK(f.attr_int("/vocab", "test_only_answers") == 1);
  CHECK(f.attr_int("/test", "unknown_words") == 3);
}

TEST_CASE("build_babi holds out round(fraction * n) questions per task, chosen by the seed", "[unit][babi]") {
  test::TempDir dir;
  const datasets::BabiTask t = hand_written_task(dir, 3);
  datasets::BabiConfig cfg;
  cfg.valid_fraction = 0.34;   // 1 of 3
  const auto held = [&](uint64_t seed) {
    cfg.seed = seed;
    const datasets::BabiData d = datasets::build_babi({t}, cfg);
    REQUIRE(d.splits.train.size() == 2);
    REQUIRE(d.splits.valid.size() == 1);
    return d.splits.valid.answer.idata()[0];
  };
  const int32_t first = held(1);
  CHECK(held(1) == first);   // the same seed, the same question
  std::set<int32_t> seen;
  for (uint64_t seed = 1; seed <= 20; ++seed) seen.insert(held(seed));
  CHECK(seen == std::set<int32_t>{11, 15, 24});   // every question is held out by some seed

  // The same split, train keeps the file order: answers of the two others in order.
  cfg.seed = 1;
  const datasets::BabiData d = datasets::build_babi({t}, cfg);
  Ints rest;
  for (const int32_t a : {11, 15, 24})
    if (a != first) rest.push_back(a);
  CHECK(ints(d.splits.train.answer) == rest);

  cfg.valid_fraction = 0.9;   // round(2.7) = 3 of 3
  REQUIRE_THROWS_WITH(datasets::build_babi({t}, cfg), Contains("holding out 3 of the 3 training questions of task 5"));
  cfg.valid_fraction = 1.0;
  REQUIRE_THROWS_AS(datasets::build_babi({t}, cfg), ConfigError);

  // A training file of statements only: said so, naming it, whatever the fraction.
  datasets::BabiTask statements = t;
  statements.train.questions.clear();
  cfg.valid_fraction = 0.1;
  REQUIRE_THROWS_AS(datasets::build_babi({statements}, cfg), DataError);
  REQUIRE_THROWS_WITH(datasets::build_babi({statements}, cfg), Contains(t.train.path) &&
                                                                   Contains("no question in task 5's training file") &&
                                                                   !Contains("fraction"));
}

TEST_CASE("parse_babi refuses malformed lines naming the file and line", "[unit][babi]") {
  CHECK_THAT(refusal("1 Mary moved.\n2 Where is Mary?\n"),
             Contains("bad.txt: line 2: a question without its answer and supporting indices") &&
                 Contains("the line is '2 Where is Mary?'"));
  CHECK_THAT(refusal("1 Mary moved.\n2 Where is Mary?\tbathroom\n"),
             Contains("bad.txt: line 2: a question line has 2 tab-separated fields, expected 3"));
  CHECK_THAT(refusal("1 Mary moved.\nx John went.\n"),
             Contains("bad.txt: line 2: expected the line's index (a number from 1) and a space at the start"));
  CHECK_THAT(refusal("1 Mary moved.\n0 John went.\n"), Contains("bad.txt: line 2: expected the line's index"));
  CHECK_THAT(refusal("1 Mary moved.\n3 John went.\n"),
             Contains("bad.txt: line 2: index 3 does not continue the story (the previous line's index is 1; "
                      "a new story starts at 1)"));
  CHECK_THAT(refusal("2 Mary moved.\n"), Contains("bad.txt: line 1: index 2 does not continue the story"));
  CHECK_THAT(refusal("1 Mary moved.\n2 Where is Mary?\tbathroom\t3\n"),
             Contains("bad.txt: line 2: supporting index '3' is not an earlier line of the story (1-1)"));
  CHECK_THAT(refusal("1 Mary moved.\n2 Where is Mary?\tbathroom\t1b\n"),
             Contains("bad.txt: line 2: supporting index '1b' is not an earlier line of the story"));
  CHECK_THAT(refusal("1 Mary moved.\n2 Where?\tx\t1\n3 Where?\tx\t2\n"),
             Contains("bad.txt: line 3: supporting index 2 is a question, expected an earlier statement"));
  CHECK_THAT(refusal("1 Mary moved.\n2 Where?\tx\t1\n1 John went.\n2 Where?\tx\t3\n"),
             Contains("bad.txt: line 4: supporting index '3' is not an earlier line of the story"));
  CHECK_THAT(refusal("1 Mary moved.\n2 Where is Mary?\t \t1\n"),
             Contains("bad.txt: line 2: the answer (the second tab field) is empty"));
  CHECK_THAT(refusal("1 Mary moved.\n2 Where is Mary?\tbathroom\t \n"),
             Contains("bad.txt: line 2: no supporting indices (the third tab field is empty)"));
  CHECK_THAT(refusal("1 Mary moved.\n2 ?\tbathroom\t1\n"), Contains("bad.txt: line 2: the question has no words"));
  CHECK_THAT(refusal("1 .\n"), Contains("bad.txt: line 1: the sentence has no words"));
  CHECK_THAT(refusal("1 Mary moved.\n\n"), Contains("bad.txt: line 2: empty line"));
  CHECK(refusal("1 Mary moved.\n2 Where is Mary?\tbathroom\t1\n") == "(accepted)");

  test::TempDir dir;
  REQUIRE_THROWS_AS(datasets::read_babi_file(dir.file("none.txt"), 50), IoError);
  REQUIRE_THROWS_WITH(datasets::read_babi_file(dir.file("none.txt"), 50), Contains("none.txt"));
}

TEST_CASE("read_babi_tasks finds qa<N>_*_{train,test}.txt and leaves out tasks without training files",
          "[unit][babi]") {
  test::TempDir dir;
  const std::string story = "1 Mary moved to the bathroom.\n2 Where is Mary?\tbathroom\t1\n";
  test::write_text(dir.file("qa1_moves_train.txt"), story);
  test::write_text(dir.file("qa1_moves_test.txt"), story);
  test::write_text(dir.file("qa10_other_train.txt"), story);   // qa1_ must not match qa10_
  test::write_text(dir.file("qa10_other_test.txt"), story);
  test::write_text(dir.file("qa3_three_test.txt"), story);     // a test file alone, as en-10k's task 3

  const datasets::BabiTaskFiles one = datasets::find_babi_files(dir.path().string(), 1);
  CHECK(one.train == dir.file("qa1_moves_train.txt"));
  CHECK(one.test == dir.file("qa1_moves_test.txt"));
  CHECK(datasets::find_babi_files(dir.path().string(), 2).train.empty());

  const datasets::BabiTasks all = datasets::read_babi_tasks(dir.path().string(), 0, 50);
  REQUIRE(all.tasks.size() == 2);
  CHECK(all.tasks[0].task == 1);
  CHECK(all.tasks[1].task == 10);
  CHECK(all.left_out.size() == 18);
  CHECK(all.left_out[1] == 3);
  CHECK(datasets::task_ranges(all.left_out) == "2-9,11-20");
  CHECK(datasets::task_ranges({1, 2, 4, 5, 6, 20}) == "1-2,4-6,20");

  REQUIRE_THROWS_AS(datasets::read_babi_tasks(dir.path().string(), 3, 50), IoError);
  REQUIRE_THROWS_WITH(datasets::read_babi_tasks(dir.path().string(), 3, 50),
                      Contains("no training file qa3_*_train.txt for task 3 in '" + dir.path().string() + "'") &&
                          Contains("only its test file") && Contains("--task all imports the tasks present"));
  REQUIRE_THROWS_WITH(datasets::read_babi_tasks(dir.path().string(), 2, 50),
                      Contains("no training file qa2_*_train.txt for task 2"));
  REQUIRE_THROWS_AS(datasets::read_babi_tasks(dir.path().string(), 21, 50), ConfigError);
  REQUIRE_THROWS_AS(datasets::read_babi_tasks(dir.file("nowhere"), 1, 50), IoError);
  REQUIRE_THROWS_WITH(datasets::read_babi_tasks(dir.file("nowhere"), 1, 50), Contains("no folder"));

  test::write_text(dir.file("qa1_copy_train.txt"), story);
  REQUIRE_THROWS_WITH(datasets::find_babi_files(dir.path().string(), 1),
                      Contains("several files match qa1_*_train.txt"));
  test::write_text(dir.file("qa4_broken_train.txt"), "1 Mary moved.\n2 John went.\n4 Where?\tx\t1\n");
  test::write_text(dir.file("qa4_broken_test.txt"), story);
  REQUIRE_THROWS_AS(datasets::read_babi_tasks(dir.path().string(), 4, 50), FormatError);
  REQUIRE_THROWS_WITH(datasets::read_babi_tasks(dir.path().string(), 4, 50),
                      Contains(dir.file("qa4_broken_train.txt") + ": line 3: index 4 does not continue the story"));
}

TEST_CASE("bAbI en: task 1 and task 8 import with the published sizes", "[data][babi]") {
  const auto root = test::data_dir();
  if (root.empty() || !std::filesystem::exists(root / "babi" / "en" / "qa1_single-supporting-fact_train.txt")) {
    test::skip_test("the bAbI data is not in " + (root.empty() ? std::string("ATTN_DATA_DIR") : root.string()));
    return;
  }
  const std::string en = (root / "babi" / "en").string();
  const datasets::BabiTasks one = datasets::read_babi_tasks(en, 1, 50);
  REQUIRE(one.tasks.size() == 1);
  CHECK(one.tasks[0].train.questions.size() == 1000);
  CHECK(one.tasks[0].train.questions[0].words == Strings{"where", "is", "mary"});
  const datasets::BabiData d = datasets::build_babi(one.tasks, {});
  CHECK(d.splits.train.size() == 900);
  CHECK(d.splits.valid.size() == 100);
  CHECK(d.splits.test.size() == 1000);
  CHECK(d.unknown_test_words == 0);
  CHECK(d.test_only_answers.empty());
  CHECK(d.splits.train.memory_size() <= 50);
  CHECK(d.vocab.contains("bathroom"));

  const datasets::BabiTasks eight = datasets::read_babi_tasks(en, 8, 50);
  const datasets::BabiData e = datasets::build_babi(eight.tasks, {});
  int64_t comma_answers = 0;
  for (int k = 0; k < 3; ++k) {
    const memnet::QaSplit& s = e.splits[k];
    for (int64_t i = 0; i < s.size(); ++i)
      if (e.vocab.token(s.answer.idata()[i]).find(',') != std::string::npos) ++comma_answers;
  }
  CHECK(comma_answers > 0);
  CHECK(e.vocab.contains("apple,football"));
  CHECK(e.vocab.contains("football,apple"));
  // The one three-object answer of the test file is in no training question of task 8.
  CHECK(e.test_only_answers == Strings{"football,apple,milk"});
}

TEST_CASE("bAbI en-10k: task 3 has no training file and is left out of all", "[data][babi]") {
  const auto root = test::data_dir();
  if (root.empty() || !std::filesystem::exists(root / "babi" / "en-10k" / "qa1_single-supporting-fact_train.txt")) {
    test::skip_test("the bAbI 10k data is not in " + (root.empty() ? std::string("ATTN_DATA_DIR") : root.string()));
    return;
  }
  const std::string dir = (root / "babi" / "en-10k").string();
  CHECK(datasets::find_babi_files(dir, 3).train.empty());
  CHECK(!datasets::find_babi_files(dir, 3).test.empty());
  REQUIRE_THROWS_AS(datasets::read_babi_tasks(dir, 3, 50), IoError);
  const datasets::BabiTasks all = datasets::read_babi_tasks(dir, 0, 50);
  CHECK(all.tasks.size() == 19);
  CHECK(all.left_out == std::vector<int>{3});
  for (const datasets::BabiTask& t : all.tasks) {
    CHECK(t.train.questions.size() == 10000);
    CHECK(t.test.questions.size() == 1000);
  }
}

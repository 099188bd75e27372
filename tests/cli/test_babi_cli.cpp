// attn-data babi, run as a user would: the file it writes (described by attn-data info and
// read back by the checked reader), the one-line summary, usage errors (exit 2) and bad or
// missing data (exit 3). The sets are small hand-written folders in the bAbI layout; one case
// reads the real task 1 when the shared data is there.
#include <filesystem>

#include "attn/families/memnet/qa_data.hpp"
#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

using Result = test::ShellResult;

Result attn_data(const test::TempDir& dir, const std::string& args) {
  return test::run_shell(dir, test::quoted_tool("attn-data") + " " + args);
}


// dir/babi/en with tasks 1 and 2 (4 and 2 training questions), dir/babi/en-10k with task 1 and
// only the test file of task 3.
void write_sets(const test::TempDir& dir) {
  const std::string one =
      "1 Mary moved to the bathroom.\n2 Where is Mary?\tbathroom\t1\n3 John went to the hallway.\n"
      "4 Where is John?\thallway\t3\n1 Sandra moved to the garden.\n2 Where is Sandra?\tgarden\t1\n"
      "3 Mary went to the garden.\n4 Where is Mary?\tgarden\t3\n";
  const std::string two =
      "1 The kitchen is north of the hallway.\n2 How do you go from the hallway to the kitchen?\tn\t1\n"
      "3 The garden is west of the kitchen.\n4 How do you go from the hallway to the garden?\tn,w\t1 3\n";
  std::filesystem::create_directories(dir.path() / "babi" / "en");
  std::filesystem::create_directories(dir.path() / "babi" / "en-10k");
  test::write_text(dir.file("babi/en/qa1_single-supporting-fact_train.txt"), one);
  test::write_text(dir.file("babi/en/qa1_single-supporting-fact_test.txt"), one);
  test::write_text(dir.file("babi/en/qa2_paths_train.txt"), two);
  test::write_text(dir.file("babi/en/qa2_paths_test.txt"), two);
  test::write_text(dir.file("babi/en-10k/qa1_single-supporting-fact_train.txt"), one);
  test::write_text(dir.file("babi/en-10k/qa1_single-supporting-fact_test.txt"), one);
  test::write_text(dir.file("babi/en-10k/qa3_three-supporting-facts_test.txt"), one);
}

}  // namespace

TEST_CASE("attn-data babi writes the question-answering layout that attn-data info describes", "[cli][babi]") {
  test::TempDir dir;
  write_sets(dir);
  const Result r = attn_data(dir, "babi --task 1 --data-dir babi --valid-fraction 0.25 --out b.h5");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out == "attn-data babi: wrote b.h5 (en task 1: train 3, valid 1, test 4 questions; vocabulary 16, "
                 "memory 2 of at most 50 sentences, longest sentence 5 and question 3 words, 0 unknown test words)\n");
  CHECK_THAT(r.err, Contains("attn-data babi: configuration") && Contains("--memory-size"));

  const io::File f = io::File::open_read(dir.file("b.h5"));
  const io::FileInfo info = io::read_file_info(f);
  CHECK(info.format == "attnlab/dataset");
  CHECK(info.kind == "babi");
  CHECK(f.attr_string("/", "tasks") == "1");
  CHECK(f.attr_string("/config", "task") == "1");
  CHECK(f.attr_string("/config", "set") == "en");
  CHECK(f.attr_int("/config", "memory_size") == 50);
  CHECK(f.attr_double("/config", "valid_fraction") == 0.25);
  CHECK(f.attr_int("/config", "seed") == 1);
  const data::Vocab vocab = memnet::read_qa_vocab(f);
  CHECK(vocab.size() == 16);
  const memnet::QaSplit test = memnet::read_qa_split(f, "test", vocab.size());
  CHECK(test.size() == 4);
  CHECK(test.memory_size() == 2);   // the second question of each story remembers 2 statements
  CHECK(vocab.token(test.answer.idata()[0]) == "bathroom");

  const Result described = attn_data(dir, "info --data b.h5");
  INFO(described.err);
  REQUIRE(described.code == 0);
  CHECK_THAT(described.out, Contains("kind           babi") && Contains("tasks = 1") &&
                                Contains("/train/story ") && Contains("int32    [3, 2, 5]") &&
                                Contains("/test/support ") && Contains("/vocab/words ") &&
                                Contains("\"<pad>\" \"<s>\" \"</s>\" \"<unk>\""));
  CHECK_THAT(described.out, Contains("/test\n  unknown_words = 0"));
  CHECK_THAT(described.out, Contains("/vocab\n  test_only_answers = 0\n  tokenizer         = babi-words-1"));
}

TEST_CASE("attn-data babi --task all imports every task with a training file into one file", "[cli][babi]") {
  test::TempDir dir;
  write_sets(dir);
  Result r = attn_data(dir, "babi --task all --data-dir babi --out all.h5 --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("(en tasks 1-2, left out 3-20 (no training file): train 6, valid 0, test 6 questions; "
                             "vocabulary 27,"));
  const io::File f = io::File::open_read(dir.file("all.h5"));
  CHECK(f.attr_string("/", "tasks") == "1,2");
  CHECK(f.attr_string("/", "tasks_left_out") == "3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20");
  CHECK(f.attr_string("/config", "task") == "all");
  const Tensor task = f.read("/test/task", DType::i32);
  CHECK(std::vector<int32_t>(task.idata(), task.idata() + task.numel()) ==
        std::vector<int32_t>{1, 1, 1, 1, 2, 2});

  // en-10k lacks task 3's training file: all leaves it out and says so; task 3 alone is refused.
  r = attn_data(dir, "babi --task all --set en-10k --data-dir babi --out k.h5 --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("(en-10k task 1, left out 2-20 (no training file): train 4, valid 0, test 4"));
  const io::File k = io::File::open_read(dir.file("k.h5"));
  CHECK(k.attr_string("/", "tasks") == "1");
  CHECK(k.attr_string("/", "tasks_left_out") == "2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20");
  r = attn_data(dir, "babi --task 3 --set en-10k --data-dir babi --out t3.h5 --quiet");
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Contains("attn-data babi: bAbI: no training file qa3_*_train.txt for task 3") &&
                        Contains("only its test file") && Contains("qa3_three-supporting-facts_test.txt"));
  CHECK(!std::filesystem::exists(dir.file("t3.h5")));
}

TEST_CASE("attn-data babi: usage errors exit 2, missing or malformed data 3", "[cli][babi]") {
  test::TempDir dir;
  write_sets(dir);
  Result r = attn_data(dir, "babi --task 21 --data-dir babi --out x.h5");
  CHECK(r.code == 2);
  CHECK(r.err == "attn-data babi: --task must be a task number 1-20 or 'all', got '21'\n");
  r = attn_data(dir, "babi --task one --data-dir babi --out x.h5");
  CHECK(r.code == 2);
  r = attn_data(dir, "babi --data-dir babi --out x.h5");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--task") && Contains("required"));
  r = attn_data(dir, "babi --task 1 --set en-1k --data-dir babi --out x.h5");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--set must be one of en, en-10k, got 'en-1k'"));
  r = attn_data(dir, "babi --task 1 --data-dir babi --valid-fraction 1 --out x.h5");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("--valid-fraction must be in [0, 1), got 1"));
  r = attn_data(dir, "babi --task 1 --data-dir babi --memory-size 0 --out x.h5");
  CHECK(r.code == 2);

  r = attn_data(dir, "babi --task 1 --data-dir nowhere --out x.h5 --quiet");
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Contains("no folder 'nowhere/en'"));
  r = attn_data(dir, "babi --task 5 --data-dir babi --out x.h5 --quiet");
  CHECK(r.code == 3);
  CHECK_THAT(r.err, Contains("no training file qa5_*_train.txt for task 5 in 'babi/en'"));
  test::write_text(dir.file("babi/en/qa2_paths_test.txt"), "1 Mary moved.\n2 Where is Mary?\tbathroom\t1 2\n");
  r = attn_data(dir, "babi --task 2 --data-dir babi --out x.h5 --quiet");
  CHECK(r.code == 3);
  CHECK(r.err == "attn-data babi: babi/en/qa2_paths_test.txt: line 2: supporting index '2' is not an earlier line "
                 "of the story (1-1); the line is '2 Where is Mary?\tbathroom\t1 2'\n");
  CHECK(!std::filesystem::exists(dir.file("x.h5")));
}

TEST_CASE("attn-data babi imports the real task 1", "[data][babi]") {
  const auto root = test::data_dir();
  if (root.empty() || !std::filesystem::exists(root / "babi" / "en" / "qa1_single-supporting-fact_train.txt")) {
    test::skip_test("the bAbI data is not in " + (root.empty() ? std::string("ATTN_DATA_DIR") : root.string()));
    return;
  }
  test::TempDir dir;
  const Result r = attn_data(dir, "babi --task 1 --data-dir '" + (root / "babi").string() + "'" +
                                      " --out b.h5 --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("(en task 1: train 900, valid 100, test 1000 questions;") &&
                        Contains("0 unknown test words"));
  const io::File f = io::File::open_read(dir.file("b.h5"));
  const data::Vocab vocab = memnet::read_qa_vocab(f);
  for (const char* split : {"train", "valid", "test"}) REQUIRE_NOTHROW(memnet::read_qa_split(f, split, vocab.size()));
  CHECK(attn_data(dir, "info --data b.h5").code == 0);
}

// The bAbI question-answering tasks (Weston et al. 2015, "Towards AI-Complete Question
// Answering: A Set of Prerequisite Toy Tasks"), v1.2, imported into the question-answering
// layout (attn/families/memnet/qa_data.hpp) the way the end-to-end memory network reads them (Sukhbaatar
// et al. 2015, section 4; the preprocessing of their reference code).
//
// A file is a run of stories. Every line is `<index> <text>`; the index counts the story's
// lines from 1 and restarts at 1 for a new story. A statement's text is one sentence; a
// question's is `question<TAB>answer<TAB>supporting indices` (space-separated indices of
// earlier statements of the story). Statements enter the memory and question lines do not,
// but the story goes on after a question. A question's memory is the last `memory_size`
// statements of its story before it, oldest first; its support is the memory slot of each
// supporting statement, -1 for one that fell out of the window.
//
// Words (babi_words): the text lower-cased (ASCII), the final '.' or '?' removed, split at
// spaces. Any other character stays inside its word (bAbI v1.2 has none in its sentences).
// An answer is lower-cased and kept whole: the lists of tasks 8 and 19 ("n,w",
// "apple,football") are one vocabulary entry each.
//
// Layout (datasets/README.md, "bAbI"): /train, /valid, /test as in qa_data.hpp, one
// vocabulary /vocab/words, root attribute `tasks`.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "attn/data/vocab.hpp"
#include "attn/datasets/splits.hpp"
#include "attn/families/memnet/qa_data.hpp"

namespace attn::io { class File; }

namespace attn::datasets {

inline constexpr int kBabiTasks = 20;
// The name of the word rules below, stored as the /vocab attribute `tokenizer`.
inline constexpr const char* kBabiTokenizer = "babi-words-1";

// The words of a statement or question (see above): "Where is Mary? " -> where is mary.
std::vector<std::string> babi_words(std::string_view text);

struct BabiQuestion {
  int64_t line = 0;                       // 1-based line of the question in its file
  int64_t memory_begin = 0;               // its memory: statements [memory_begin, memory_end)
  int64_t memory_end = 0;                 //   of the file, oldest first, at most memory_size
  std::vector<std::string> words;         // the question's words
  std::string answer;                     // lower-cased, whole
  std::vector<int32_t> support;           // memory slot of each supporting statement, in the
                                          // file's order; -1 for one outside the memory
};

// One parsed file.
struct BabiFile {
  std::string path;
  std::vector<std::vector<std::string>> statements;   // every statement of the file, in order
  std::vector<BabiQuestion> questions;                // in order
};

// Parses the lines of one file (`path` names it in messages). Throws ConfigError when
// memory_size < 1 and FormatError "<path>: line <n>: <what is wrong>; the line is '<line>'"
// on: an empty line, a line not starting with `<index> `, an index that neither starts a
// story (1) nor continues it (the previous index + 1), a line with a '?' and no tab fields or
// with other than 3 tab fields, a sentence or question without words, an empty answer, no
// supporting index, or one that is not a number naming an earlier statement of the story.
BabiFile parse_babi(const std::vector<std::string>& lines, const std::string& path, int64_t memory_size);
// Reads (read_text_lines: IoError when missing, DataError on invalid UTF-8) and parses a file.
BabiFile read_babi_file(const std::string& path, int64_t memory_size);

// The files of one task in `dir`: the one match each of `qa<task>_*_train.txt` and
// `qa<task>_*_test.txt`, "" when there is none. IoError when `dir` is not a folder or when
// several files match.
struct BabiTaskFiles {
  int task = 0;
  std::string train, test;
};
BabiTaskFiles find_babi_files(const std::string& dir, int task);

struct BabiTask {
  int task = 0;
  BabiFile train, test;
};

// The tasks read from `dir`: task `task` alone, or (task 0) every task 1-20 whose training
// file is there (the shared en-10k lacks task 3's). Throws ConfigError for a task outside
// 0-20, IoError naming the folder and the pattern when the one task's training or test file
// is missing (saying so when only the training file is), when `all` finds no task or a task
// has a training file but no test file.
struct BabiTasks {
  std::vector<BabiTask> tasks;   // ascending task numbers
  std::vector<int> left_out;     // `all`: the tasks without a training file
};
BabiTasks read_babi_tasks(const std::string& dir, int task, int64_t memory_size);

struct BabiConfig {
  double valid_fraction = 0.1;   // of each task's training questions, held out as /valid: [0, 1)
  uint64_t seed = 1;             // which ones
};

struct BabiData {
  Splits<memnet::QaSplit> splits;
  data::Vocab vocab;                         // /vocab/words
  std::vector<int> tasks;                    // the tasks imported, ascending
  std::vector<int> left_out;                 // tasks asked for but absent (read_babi_tasks)
  int64_t unknown_test_words = 0;            // word occurrences of the test files (statements
                                             // and questions) not in the vocabulary: <unk>
  std::vector<std::string> test_only_answers;   // test answers no training file has
};

// Builds the layout from parsed tasks (ascending, distinct):
// - Vocabulary: every word of the training files' statements and questions and every answer,
//   counted once per occurrence in the file, ids by count descending then bytes ascending
//   (data::Vocab::build); then the test answers that no training file has (bytes ascending), so
//   that every answer has an id (none can be learnt: such questions count as errors). Test
//   words not in it are <unk> (3).
// - Validation: of each task's n training questions, k = round(valid_fraction * n) are held
//   out: the first k of a Fisher-Yates shuffle of 0..n-1 drawn from Rng(seed).fork(task).
//   Their stories stay in the training file, so a held-out question's story may be the memory
//   of training questions too (as the paper's held-out 10% of questions).
// - Rows: task by task in ascending order, each task's questions in file order; Ms, Ws, Wq, Ks
//   are the split's largest (at least 1).
// Throws ConfigError on valid_fraction outside [0, 1) or when it leaves a task no training
// question, DataError when there is no task.
BabiData build_babi(const std::vector<BabiTask>& tasks, const BabiConfig& cfg);

// Writes /train, /valid, /test (qa_data.hpp), /vocab/words with /vocab attributes `tokenizer`
// (kBabiTokenizer) and `test_only_answers` (int64: the last entries of /vocab/words that only
// test answers have), /test attribute `unknown_words`, and the root attributes `tasks` ("1,2,4")
// and, when some were left out, `tasks_left_out`. The caller has created the file and its root
// attributes.
void write_babi(io::File& file, const BabiData& data);

// "1-2,4-20": ascending task numbers with runs joined.
std::string task_ranges(const std::vector<int>& tasks);

}  // namespace attn::datasets

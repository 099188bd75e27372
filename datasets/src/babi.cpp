// bAbI import: parsing the story files, finding a task's files, the vocabulary, the held-out
// questions, encoding into the question-answering layout, writing (see babi.hpp).
#include "attn/datasets/babi.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <set>

#include "attn/core/error.hpp"
#include "attn/core/rng.hpp"
#include "attn/datasets/parallel_text.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::datasets {
namespace {

namespace fs = std::filesystem;

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// The whole of `s` as a non-negative integer, or -1.
int64_t parse_index(std::string_view s) {
  int64_t v = -1;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v < 0) return -1;
  return v;
}

std::vector<std::string_view> split_at(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  for (;;) {
    const size_t end = s.find(sep, begin);
    parts.push_back(s.substr(begin, end - begin));   // to the end when there is no `sep`
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

// Where the lines of one story are: the file position of the statement behind each index
// (-1 for a question line).
struct Story {
  int64_t last_index = 0;            // 0 before the file's first line
  int64_t first_statement = 0;       // the story's first statement in the file's list
  std::vector<int64_t> statement_at; // [index - 1] -> statement position, or -1
};

// One file's statements and questions as word ids.
struct EncodedFile {
  const BabiFile* file = nullptr;
  int task = 0;
  std::vector<std::vector<int32_t>> statements, questions;
  std::vector<int32_t> answers;
};

EncodedFile encode_file(const BabiFile& file, int task, const data::Vocab& vocab) {
  EncodedFile e{&file, task, {}, {}, {}};
  e.statements.reserve(file.statements.size());
  for (const auto& words : file.statements) e.statements.push_back(vocab.encode(words));
  e.questions.reserve(file.questions.size());
  for (const BabiQuestion& q : file.questions) {
    e.questions.push_back(vocab.encode(q.words));
    e.answers.push_back(vocab.id(q.answer));
  }
  return e;
}

int64_t count_unknown(const EncodedFile& e) {
  int64_t n = 0;
  for (const auto* list : {&e.statements, &e.questions})
    for (const auto& ids : *list) n += std::count(ids.begin(), ids.end(), data::kUnk);
  return n;
}

// One question of a split: the file and its question number.
struct Row {
  const EncodedFile* file;
  size_t question;
};

// The rows as a split: Ms, Ws, Wq, Ks the largest of the rows (at least 1).
memnet::QaSplit encode_rows(const std::vector<Row>& rows) {
  const int64_t n = static_cast<int64_t>(rows.size());
  size_t Ms = 1, Ws = 1, Wq = 1, Ks = 1;
  for (const Row& r : rows) {
    const BabiQuestion& q = r.file->file->questions[r.question];
    Ms = std::max(Ms, static_cast<size_t>(q.memory_end - q.memory_begin));
    for (int64_t m = q.memory_begin; m < q.memory_end; ++m)
      Ws = std::max(Ws, r.file->statements[static_cast<size_t>(m)].size());
    Wq = std::max(Wq, r.file->questions[r.question].size());
    Ks = std::max(Ks, q.support.size());
  }
  const auto ms = static_cast<int64_t>(Ms), ws = static_cast<int64_t>(Ws), wq = static_cast<int64_t>(Wq),
             ks = static_cast<int64_t>(Ks);
  memnet::QaSplit s;
  Tensor story({n, ms, ws}, DType::i32), question({n, wq}, DType::i32);
  s.story_len = Tensor({n}, DType::i32);
  s.answer = Tensor({n}, DType::i32);
  s.support = Tensor({n, ks}, DType::i32);
  s.task = Tensor({n}, DType::i32);
  std::fill(s.support.idata(), s.support.idata() + s.support.numel(), -1);
  for (int64_t i = 0; i < n; ++i) {
    const Row& r = rows[static_cast<size_t>(i)];
    const BabiQuestion& q = r.file->file->questions[r.question];
    for (int64_t m = q.memory_begin; m < q.memory_end; ++m) {
      const auto& ids = r.file->statements[static_cast<size_t>(m)];
      std::copy(ids.begin(), ids.end(), story.idata() + (i * ms + (m - q.memory_begin)) * ws);
    }
    s.story_len.idata()[i] = static_cast<int32_t>(q.memory_end - q.memory_begin);
    const auto& words = r.file->questions[r.question];
    std::copy(words.begin(), words.end(), question.idata() + i * wq);
    s.answer.idata()[i] = r.file->answers[r.question];
    std::copy(q.support.begin(), q.support.end(), s.support.idata() + i * ks);
    s.task.idata()[i] = r.file->task;
  }
  s.story = story;
  s.question = question;
  return s;
}

// The questions of `n` held out as validation (see build_babi): held[i] is true for those.
std::vector<bool> held_out(int64_t n, int64_t k, uint64_t seed, int task) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Rng rng = Rng(seed).fork(static_cast<uint64_t>(task));
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(rng.uniform_int(i + 1))]);
  std::vector<bool> held(static_cast<size_t>(n), false);
  for (int64_t i = 0; i < k; ++i) held[static_cast<size_t>(order[static_cast<size_t>(i)])] = true;
  return held;
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (const int x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s;
}

}  // namespace

std::vector<std::string> babi_words(std::string_view text) {
  text = trim_spaces(text);
  if (!text.empty() && (text.back() == '.' || text.back() == '?')) text.remove_suffix(1);
  std::vector<std::string> words;
  for (const std::string_view w : split_at(text, ' '))
    if (!w.empty()) words.push_back(lower_ascii(w));
  return words;
}

BabiFile parse_babi(const std::vector<std::string>& lines, const std::string& path, int64_t memory_size) {
  if (memory_size < 1) throw ConfigError("bAbI: memory_size must be >= 1, got " + std::to_string(memory_size));
  BabiFile out;
  out.path = path;
  Story story;
  for (size_t li = 0; li < lines.size(); ++li) {
    const std::string& line = lines[li];
    const int64_t line_no = static_cast<int64_t>(li) + 1;
    const auto bad = [&](const std::string& what) {
      return FormatError(path + ": line " + std::to_string(line_no) + ": " + what + "; the line is '" + line + "'");
    };
    if (trim_spaces(line).empty())
      throw bad("empty line; every line is '<index> <sentence>' or "
                "'<index> <question>\\t<answer>\\t<supporting indices>'");
    const size_t space = line.find(' ');
    const int64_t index = parse_index(std::string_view(line).substr(0, space));
    if (space == std::string::npos || index < 1)
      throw bad("expected the line's index (a number from 1) and a space at the start");
    if (index != 1 && index != story.last_index + 1)
      throw bad("index " + std::to_string(index) + " does not continue the story (the previous line's index is " +
                std::to_string(story.last_index) + "; a new story starts at 1)");
    if (index == 1) story = Story{0, static_cast<int64_t>(out.statements.size()), {}};
    story.last_index = index;

    const std::string_view text = std::string_view(line).substr(space + 1);
    const std::vector<std::string_view> fields = split_at(text, '\t');
    if (fields.size() == 1) {
      if (trim_spaces(text).ends_with('?'))
        throw bad("a question without its answer and supporting indices: expected "
                  "'<index> <question>\\t<answer>\\t<supporting indices>'");
      std::vector<std::string> words = babi_words(text);
      if (words.empty()) throw bad("the sentence has no words");
      story.statement_at.push_back(static_cast<int64_t>(out.statements.size()));
      out.statements.push_back(std::move(words));
      continue;
    }
    if (fields.size() != 3)
      throw bad("a question line has " + std::to_string(fields.size()) +
                " tab-separated fields, expected 3: question<TAB>answer<TAB>supporting indices");
    story.statement_at.push_back(-1);   // question lines are not sentences of the memory
    BabiQuestion q;
    q.line = line_no;
    q.words = babi_words(fields[0]);
    if (q.words.empty()) throw bad("the question has no words");
    q.answer = lower_ascii(trim_spaces(fields[1]));
    if (q.answer.empty()) throw bad("the answer (the second tab field) is empty");
    q.memory_end = static_cast<int64_t>(out.statements.size());
    q.memory_begin = std::max(story.first_statement, q.memory_end - memory_size);
    for (const std::string_view s : split_at(trim_spaces(fields[2]), ' ')) {
      if (s.empty()) continue;
      const int64_t at = parse_index(s);
      if (at < 1 || at >= index)
        throw bad("supporting index '" + std::string(s) + "' is not an earlier line of the story (1-" +
                  std::to_string(index - 1) + ")");
      if (story.statement_at[static_cast<size_t>(at - 1)] < 0)
        throw bad("supporting index " + std::string(s) + " is a question, expected an earlier statement");
      const int64_t pos = story.statement_at[static_cast<size_t>(at - 1)];
      q.support.push_back(pos >= q.memory_begin ? static_cast<int32_t>(pos - q.memory_begin) : -1);
    }
    if (q.support.empty()) throw bad("no supporting indices (the third tab field is empty)");
    out.questions.push_back(std::move(q));
  }
  return out;
}

BabiFile read_babi_file(const std::string& path, int64_t memory_size) {
  return parse_babi(read_text_lines(path), path, memory_size);
}

BabiTaskFiles find_babi_files(const std::string& dir, int task) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw IoError("bAbI: no folder '" + dir + "' (give the folder of the qa<N>_*_{train,test}.txt files)");
  BabiTaskFiles out;
  out.task = task;
  const std::string prefix = "qa" + std::to_string(task) + "_";
  fs::directory_iterator it(dir, ec);
  if (ec) throw IoError("bAbI: cannot list the folder '" + dir + "': " + ec.message());
  std::vector<std::string> names;
  for (const fs::directory_entry& e : it) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  using Kind = std::pair<std::string, std::string*>;
  for (auto [kind, found] : {Kind{"_train.txt", &out.train}, Kind{"_test.txt", &out.test}}) {
    for (const std::string& name : names) {
      if (!name.starts_with(prefix) || !name.ends_with(kind)) continue;
      const std::string file = (fs::path(dir) / name).string();
      if (!found->empty())
        throw IoError("bAbI: several files match " + prefix + "*" + kind + " in '" + dir + "': '" + *found +
                      "' and '" + file + "'");
      *found = file;
    }
  }
  return out;
}

BabiTasks read_babi_tasks(const std::string& dir, int task, int64_t memory_size) {
  if (task < 0 || task > kBabiTasks)
    throw ConfigError("bAbI: task must be in 1-20 (or 0 for all), got " + std::to_string(task));
  BabiTasks out;
  const int first = task == 0 ? 1 : task, last = task == 0 ? kBabiTasks : task;
  for (int t = first; t <= last; ++t) {
    const BabiTaskFiles files = find_babi_files(dir, t);
    const std::string pattern = "qa" + std::to_string(t) + "_*_";
    if (files.train.empty() && task == 0) {
      out.left_out.push_back(t);
      continue;
    }
    if (files.train.empty())
      throw IoError("bAbI: no training file " + pattern + "train.txt for task " + std::to_string(t) + " in '" + dir +
                    "'" +
                    (files.test.empty() ? std::string()
                                        : " (only its test file '" + files.test +
                                              "' is there: this copy of the set lacks task " + std::to_string(t) +
                                              "'s training data; --task all imports the tasks present)"));
    if (files.test.empty())
      throw IoError("bAbI: no test file " + pattern + "test.txt for task " + std::to_string(t) + " in '" + dir + "'");
    out.tasks.push_back({t, read_babi_file(files.train, memory_size), read_babi_file(files.test, memory_size)});
  }
  if (out.tasks.empty())
    throw IoError("bAbI: no task's training file (qa<N>_*_train.txt) in '" + dir + "'");
  return out;
}

BabiData build_babi(const std::vector<BabiTask>& tasks, const BabiConfig& cfg) {
  if (!(cfg.valid_fraction >= 0.0 && cfg.valid_fraction < 1.0))
    throw ConfigError("bAbI: valid_fraction must be in [0, 1), got " + std::to_string(cfg.valid_fraction));
  if (tasks.empty()) throw DataError("bAbI: no task to import");
  BabiData out;

  // The vocabulary: training words and answers, then the answers only the test files have.
  data::TokenCounts counts;
  for (const BabiTask& t : tasks) {
    for (const auto& words : t.train.statements) data::count_tokens(words, counts);
    for (const BabiQuestion& q : t.train.questions) {
      data::count_tokens(q.words, counts);
      data::count_tokens({q.answer}, counts);
    }
  }
  out.vocab = data::Vocab::build(counts);
  std::set<std::string> test_only;
  for (const BabiTask& t : tasks)
    for (const BabiQuestion& q : t.test.questions)
      if (!out.vocab.contains(q.answer)) test_only.insert(q.answer);
  if (!test_only.empty()) {
    std::vector<std::string> tokens = out.vocab.tokens();
    tokens.insert(tokens.end(), test_only.begin(), test_only.end());
    out.vocab = data::Vocab::from_tokens(std::move(tokens));
    out.test_only_answers.assign(test_only.begin(), test_only.end());
  }

  // Encode every file once; each split's rows are then copies of these ids.
  std::vector<EncodedFile> train, test;
  for (const BabiTask& t : tasks) {
    train.push_back(encode_file(t.train, t.task, out.vocab));
    test.push_back(encode_file(t.test, t.task, out.vocab));
    out.unknown_test_words += count_unknown(test.back());
    out.tasks.push_back(t.task);
  }
  Splits<std::vector<Row>> rows;
  for (size_t k = 0; k < tasks.size(); ++k) {
    const int64_t n = static_cast<int64_t>(tasks[k].train.questions.size());
    if (n == 0)
      throw DataError(tasks[k].train.path + ": no question in task " + std::to_string(tasks[k].task) +
                      "'s training file (a question line is '<index> <question>\\t<answer>\\t<supporting indices>')");
    const auto held_n = static_cast<int64_t>(std::llround(cfg.valid_fraction * static_cast<double>(n)));
    if (held_n >= n)
      throw ConfigError("bAbI: holding out " + std::to_string(held_n) + " of the " + std::to_string(n) +
                        " training questions of task " + std::to_string(tasks[k].task) +
                        " leaves none to train on; lower the validation fraction");
    const std::vector<bool> held = held_out(n, held_n, cfg.seed, tasks[k].task);
    for (size_t q = 0; q < held.size(); ++q) (held[q] ? rows.valid : rows.train).push_back({&train[k], q});
    for (size_t q = 0; q < tasks[k].test.questions.size(); ++q) rows.test.push_back({&test[k], q});
  }
  for (int k = 0; k < 3; ++k) out.splits[k] = encode_rows(rows[k]);
  return out;
}

void write_babi(io::File& file, const BabiData& data) {
  for (int k = 0; k < 3; ++k) memnet::write_qa_split(file, kSplitNames[k], data.splits[k]);
  data::write_vocab(file, memnet::kQaVocab, data.vocab);
  file.set_attr("/vocab", "tokenizer", kBabiTokenizer);
  file.set_attr("/vocab", "test_only_answers", static_cast<int64_t>(data.test_only_answers.size()));
  file.set_attr("/test", "unknown_words", data.unknown_test_words);
  file.set_attr("/", "tasks", join_ints(data.tasks));
  if (!data.left_out.empty()) file.set_attr("/", "tasks_left_out", join_ints(data.left_out));
}

std::string task_ranges(const std::vector<int>& tasks) {
  std::string s;
  for (size_t i = 0; i < tasks.size();) {
    size_t j = i;
    while (j + 1 < tasks.size() && tasks[j + 1] == tasks[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(tasks[i]);
    if (j > i) {
      s += '-';
      s += std::to_string(tasks[j]);
    }
    i = j + 1;
  }
  return s;
}

}  // namespace attn::datasets

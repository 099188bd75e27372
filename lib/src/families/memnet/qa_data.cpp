// The bAbI question-answering layout: gather, write, checked read (qa_data.hpp).
#include "attn/families/memnet/qa_data.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "attn/core/error.hpp"
#include "attn/data/splits.hpp"
#include "attn/data/vocab.hpp"

namespace attn::memnet {
namespace {

// 1 + the position of the last non-zero entry of `row[0, width)`; 0 when all are PAD.
int64_t used_width(const int32_t* row, int64_t width) {
  for (int64_t w = width; w > 0; --w)
    if (row[w - 1] != data::kPad) return w;
  return 0;
}

// Rows `index` of an int32 x [N, C], each cut to its first `cols` entries.
Tensor gather_cols(const Tensor& x, std::span<const int64_t> index, int64_t cols) {
  const int64_t C = x.dim(1);
  Tensor y({static_cast<int64_t>(index.size()), cols}, DType::i32);
  for (size_t b = 0; b < index.size(); ++b)
    std::memcpy(y.idata() + static_cast<int64_t>(b) * cols, x.idata() + index[b] * C,
                static_cast<size_t>(cols) * sizeof(int32_t));
  return y;
}

std::string row_prefix(const io::File& file, const std::string& dataset, int64_t row) {
  return file.display_name() + ": dataset '" + dataset + "' row " + std::to_string(row);
}

// Every value of x [N, ...] (rows `rows` of the dataset) in [lo, hi): DataError naming the row
// otherwise; `expected` says what belongs there ("word ids in [0, 40)").
void check_range(const io::File& file, const std::string& dataset, const Tensor& x, const io::RowSet& rows,
                 int64_t lo, int64_t hi, const std::string& expected) {
  const int64_t row = x.numel() / std::max<int64_t>(x.dim(0), 1);
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.idata()[i] < lo || x.idata()[i] >= hi)
      throw DataError(row_prefix(file, dataset, rows.file_row(i / row)) + " holds " + std::to_string(x.idata()[i]) +
                      ", expected " + expected);
}

}  // namespace

QaBatch QaSplit::gather(std::span<const int64_t> index) const {
  const int64_t n = static_cast<int64_t>(index.size());
  const int64_t Ms = memory_size(), Ws = sentence_width(), Wq = question_width();
  const Tensor stories = story.gather(index), questions = question.gather(index);   // [n, Ms, Ws], [n, Wq]
  QaBatch out;
  out.story_len = Tensor({n}, DType::i32);
  out.answer = Tensor({n}, DType::i32);
  out.task = Tensor({n}, DType::i32);
  int64_t ms = 1, ws = 1, wq = 1;
  for (int64_t b = 0; b < n; ++b) {
    const int64_t i = index[static_cast<size_t>(b)];
    const int32_t len = story_len.idata()[i];
    out.story_len.idata()[b] = len;
    out.answer.idata()[b] = answer.idata()[i];
    out.task.idata()[b] = task.idata()[i];
    ms = std::max<int64_t>(ms, len);
    for (int64_t m = 0; m < len; ++m)
      ws = std::max(ws, used_width(stories.idata() + (b * Ms + m) * Ws, Ws));
    wq = std::max(wq, used_width(questions.idata() + b * Wq, Wq));
  }
  out.story = Tensor({n, ms, ws}, DType::i32);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t m = 0; m < ms; ++m)
      std::memcpy(out.story.idata() + (b * ms + m) * ws, stories.idata() + (b * Ms + m) * Ws,
                  static_cast<size_t>(ws) * sizeof(int32_t));
  std::vector<int64_t> in_order(index.size());   // `questions` holds the batch's rows already
  std::iota(in_order.begin(), in_order.end(), int64_t{0});
  out.question = gather_cols(questions, in_order, wq);
  out.support = gather_cols(support, index, support.dim(1));
  return out;
}

void write_qa_split(io::File& file, const std::string& split, const QaSplit& s) {
  file.write_all("/" + split + "/", {{"story", s.story.all()}, {"story_len", s.story_len}, {"question", s.question.all()},
                                     {"answer", s.answer}, {"support", s.support}, {"task", s.task}});
}

QaSplit read_qa_split(const io::File& file, const std::string& split, int64_t vocab_size, const io::RowSet& rows) {
  const std::string g = "/" + split + "/";
  data::require_split(file, split);
  QaSplit s;
  const Tensor story = file.read(g + "story", DType::i32, {kAny, kAny, kAny}, rows);
  const int64_t N = file.shape(g + "story")[0], n = story.dim(0), Ms = story.dim(1);
  data::check_split_rows(file, split, g + "story", N);
  s.story_len = file.read(g + "story_len", DType::i32, {N}, rows);
  const Tensor question = file.read(g + "question", DType::i32, {N, kAny}, rows);
  s.answer = file.read(g + "answer", DType::i32, {N}, rows);
  s.support = file.read(g + "support", DType::i32, {N, kAny}, rows);
  s.task = file.read(g + "task", DType::i32, {N}, rows);

  const std::string V = std::to_string(vocab_size);
  const std::string ids = "word ids in [0, " + V + "), the vocabulary's size";
  for (int64_t i = 0; i < n; ++i) {
    const int32_t len = s.story_len.idata()[i];
    if (len < 1 || len > Ms)
      throw DataError(row_prefix(file, g + "story_len", rows.file_row(i)) + " is " + std::to_string(len) +
                      ", expected a number of sentences in [1, " + std::to_string(Ms) + "]");
  }
  check_range(file, g + "story", story, rows, 0, vocab_size, ids);
  check_range(file, g + "question", question, rows, 0, vocab_size, ids);
  check_range(file, g + "answer", s.answer, rows, data::kNumReserved, vocab_size,
              "an answer id in [4, " + V + "): a word of the vocabulary, not a reserved id");
  const int64_t Ks = s.support.dim(1);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < Ks; ++k) {
      const int32_t slot = s.support.idata()[i * Ks + k];
      if (slot < -1 || slot >= s.story_len.idata()[i])
        throw DataError(row_prefix(file, g + "support", rows.file_row(i)) + " holds " + std::to_string(slot) +
                        ", expected a memory slot in [-1, story_len = " + std::to_string(s.story_len.idata()[i]) +
                        ") (-1: no fact, or one outside the memory)");
    }
  check_range(file, g + "task", s.task, rows, 1, 21, "a bAbI task in [1, 20]");
  s.story = story;
  s.question = question;
  return s;
}

QaSplit open_qa_split(const io::File& file, const std::string& split, int64_t vocab_size, data::KeepData keep,
                      dist::Communicator& ranks) {
  const QaSplit layout = read_qa_split(file, split, vocab_size, io::RowSet::range(0, 0));
  const std::string g = "/" + split + "/";
  const int64_t n = file.shape(g + "story")[0];
  const int64_t row_bytes = (layout.memory_size() * layout.sentence_width() + layout.question_width() + 8) * 4;
  if (!data::keep_in_file(keep, n * row_bytes, ranks)) return read_qa_split(file, split, vocab_size);
  data::for_shared_blocks(n, row_bytes, ranks, [&](int64_t begin, int64_t end) {
    (void)read_qa_split(file, split, vocab_size, io::RowSet::range(begin, end));
  });
  QaSplit s;
  s.story = data::Rows(file, g + "story", DType::i32);
  s.story_len = file.read(g + "story_len", DType::i32, {n});
  s.question = data::Rows(file, g + "question", DType::i32);
  s.answer = file.read(g + "answer", DType::i32, {n});
  s.support = file.read(g + "support", DType::i32, {n, kAny});
  s.task = file.read(g + "task", DType::i32, {n});
  return s;
}

data::Vocab read_qa_vocab(const io::File& file) { return data::read_vocab(file, kQaVocab); }

}  // namespace attn::memnet

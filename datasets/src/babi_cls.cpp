// bAbI questions as labelled sequences (babi_cls.hpp).
#include "attn/datasets/babi_cls.hpp"

#include <algorithm>
#include <map>

#include "attn/core/error.hpp"
#include "attn/data/batching.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::datasets {

bool is_babi_list_task(int task) { return std::find(std::begin(kBabiListTasks), std::end(kBabiListTasks), task) != std::end(kBabiListTasks); }

BabiClsData babi_classification(const BabiData& qa, const data::Vocab* vocab) {
  BabiClsData out;
  out.vocab = vocab ? *vocab : qa.vocab;
  out.left_out = qa.left_out;
  for (int t : qa.tasks) (is_babi_list_task(t) ? out.left_out : out.tasks).push_back(t);
  std::sort(out.left_out.begin(), out.left_out.end());
  if (out.tasks.empty())
    throw DataError("babi-cls: no task left: tasks 8 and 19 answer with lists of words, not one class");

  // The classes: every answer of a kept question, in the order of its id in the bAbI vocabulary.
  std::map<int32_t, int32_t> class_of;
  for (int k = 0; k < 3; ++k) {
    const memnet::QaSplit& s = qa.splits[k];
    for (int64_t i = 0; i < s.size(); ++i)
      if (!is_babi_list_task(s.task.idata()[i])) class_of.emplace(s.answer.idata()[i], 0);
  }
  for (auto& [answer, cls] : class_of) {
    cls = static_cast<int32_t>(out.labels.size());
    out.labels.push_back(qa.vocab.token(answer));
  }
  auto encode = [&](int32_t id) {
    if (!vocab) return id;
    const int32_t mapped = vocab->id(qa.vocab.token(id));
    if (mapped == data::kUnk) ++out.unknown_words;
    return mapped;
  };

  for (int k = 0; k < 3; ++k) {
    const memnet::QaSplit& s = qa.splits[k];
    std::vector<std::vector<int32_t>> rows, segs;
    std::vector<int32_t> labels, tasks;
    const int64_t Ms = s.size() ? s.memory_size() : 0, Ws = s.size() ? s.sentence_width() : 0;
    const int64_t Wq = s.size() ? s.question_width() : 0;
    const Tensor story = s.story.all(), question = s.question.all();
    for (int64_t i = 0; i < s.size(); ++i) {
      const int32_t task = s.task.idata()[i];
      if (is_babi_list_task(task)) continue;
      std::vector<int32_t> row, seg;
      for (int64_t m = 0; m < s.story_len.idata()[i]; ++m)
        for (int64_t w = 0; w < Ws; ++w) {
          const int32_t id = story.idata()[(i * Ms + m) * Ws + w];
          if (id == data::kPad) break;
          row.push_back(encode(id));
          seg.push_back(0);
        }
      for (int64_t w = 0; w < Wq; ++w) {
        const int32_t id = question.idata()[i * Wq + w];
        if (id == data::kPad) break;
        row.push_back(encode(id));
        seg.push_back(1);
      }
      out.longest = std::max<int64_t>(out.longest, static_cast<int64_t>(row.size()));
      rows.push_back(std::move(row));
      segs.push_back(std::move(seg));
      labels.push_back(class_of.at(s.answer.idata()[i]));
      tasks.push_back(task);
    }
    const data::PaddedBatch src = data::pad_sequences(rows), seg = data::pad_sequences(segs, src.tokens.dim(1));
    const auto n = static_cast<int64_t>(rows.size());
    out.splits[k] = {.name = kSplitNames[k], .src = src.tokens, .src_len = src.lengths, .segments = seg.tokens,
                     .label = Tensor::from_ints({n}, labels)};
    out.task[k] = Tensor::from_ints({n}, tasks);
  }
  return out;
}

void write_babi_classification(io::File& file, const BabiClsData& data) {
  for (int k = 0; k < 3; ++k) {
    transformer::write_labelled_split(file, kSplitNames[k], data.splits[k]);
    file.write(std::string("/") + kSplitNames[k] + "/task", data.task[k]);
  }
  transformer::write_labels(file, data.labels);
  data::write_vocab(file, "/vocab/src", data.vocab);
  file.set_attr("/vocab", "tokenizer", kBabiTokenizer);
  file.set_attr("/", "tasks", task_ranges(data.tasks));
  if (!data.left_out.empty()) file.set_attr("/", "tasks_left_out", task_ranges(data.left_out));
}

}  // namespace attn::datasets

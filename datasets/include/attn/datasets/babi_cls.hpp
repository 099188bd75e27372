// bAbI as sequence classification (datasets/README.md, "bAbI as classification: babi-cls"): each
// question of the question-answering layout (babi.hpp) becomes one labelled example
// (families/transformer/labelled_data.hpp) for a fine-tuned Transformer: the words of its memory (the story's
// statements before it, oldest first) as sentence A, the question's words as sentence B, and the
// answer as the class, so that the Transformer answers the same questions, on the same test sets,
// as the memory network.
//
// Tasks 8 (lists) and 19 (path finding) answer with several words ("apple,football", "n,w"): not a
// single class among a few, so they are left out; the other 18 tasks answer with one word.
#pragma once
#include <string>
#include <vector>

#include "attn/data/vocab.hpp"
#include "attn/datasets/babi.hpp"
#include "attn/datasets/splits.hpp"
#include "attn/families/transformer/labelled_data.hpp"

namespace attn::datasets {

// The tasks whose answers are lists of words.
inline constexpr int kBabiListTasks[] = {8, 19};
bool is_babi_list_task(int task);

struct BabiClsData {
  Splits<transformer::LabelledSplit> splits;   // /train, /valid, /test
  Splits<Tensor> task;                   // int32 [N] per split: the bAbI task of each example
  data::Vocab vocab;                     // /vocab/src
  std::vector<std::string> labels;       // /labels: every answer, in the order of its vocabulary id
  std::vector<int> tasks;                // the tasks kept, ascending
  std::vector<int> left_out;             // asked for but left out: list answers (8, 19) or no training file
  int64_t longest = 0;                   // the longest example, in words
  int64_t unknown_words = 0;             // with `vocab`: words of the examples it does not hold (<unk>)
};

// The examples of `qa` (build_babi's output) without the list tasks. With `vocab` (another data
// set's, so that a model pre-trained on it can be fine-tuned here) the words are encoded with it,
// unknown ones as <unk>; otherwise with qa.vocab. Throws DataError when no task is left.
BabiClsData babi_classification(const BabiData& qa, const data::Vocab* vocab);

// Writes /train, /valid, /test (labelled_data.hpp) with /<split>/task, /labels, /vocab/src (and its
// attribute tokenizer kBabiTokenizer), root attributes tasks and, when some were left out,
// tasks_left_out. The caller has created the file and its root attributes.
void write_babi_classification(io::File& file, const BabiClsData& data);

}  // namespace attn::datasets

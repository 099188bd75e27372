// The question-answering layout of bAbI (datasets/README.md, "bAbI"): every question with the
// story before it as its memory. One definition, written by `attn-data babi` and read, checked,
// by the tools that train on it. Per split:
//   /<split>/story       int32 [N, Ms, Ws]  the memory: the story's sentences before the question,
//                                          the last Ms of them, oldest first; word ids, 0 (PAD)
//                                          after a sentence's last word and in unused slots
//   /<split>/story_len   int32 [N]          sentences in the memory, in [1, Ms]; slot i < story_len
//                                          is story sentence i, slot story_len - 1 the most recent
//   /<split>/question    int32 [N, Wq]      the question's word ids, 0 after its last word
//   /<split>/answer      int32 [N]          the answer's id in the vocabulary; an answer of several
//                                          words (tasks 8 and 19: "n,w", "apple,football") is one
//                                          vocabulary entry, kept as written
//   /<split>/support     int32 [N, Ks]      memory slots of the supporting facts in the file's order,
//                                          -1 after the last and for a fact outside the memory
//   /<split>/task        int32 [N]          the bAbI task, 1-20
//   /vocab/words         strings            one vocabulary for story, question and answer words
//                                          (data::Vocab, ids 0-3 reserved; lower-cased words)
// Splits: train, valid (held out of the training file), test (the task's test file).
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "attn/core/tensor.hpp"
#include "attn/data/rows.hpp"
#include "attn/data/vocab.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::memnet {

// The dataset of the one vocabulary.
inline constexpr const char* kQaVocab = "/vocab/words";

// Questions in memory: a batch, or a split gathered whole.
struct QaBatch {
  Tensor story;       // [B, Ms, Ws] int32
  Tensor story_len;   // [B]         int32
  Tensor question;    // [B, Wq]     int32
  Tensor answer;      // [B]         int32
  Tensor support;     // [B, Ks]     int32
  Tensor task;        // [B]         int32

  int64_t size() const { return story_len.numel(); }
};

// A split: stories and questions in memory or left in the data file (data/rows.hpp), the rest
// (a few numbers per question) in memory.
struct QaSplit {
  data::Rows story;   // [N, Ms, Ws] int32
  Tensor story_len;   // [N]         int32
  data::Rows question;   // [N, Wq]     int32
  Tensor answer;      // [N]         int32
  Tensor support;     // [N, Ks]     int32
  Tensor task;        // [N]         int32

  int64_t size() const { return story_len.numel(); }
  int64_t memory_size() const { return story.dim(1); }        // Ms
  int64_t sentence_width() const { return story.dim(2); }     // Ws
  int64_t question_width() const { return question.dim(1); } // Wq
  // Rows `index` (in that order); the memory cut to the most sentences any selected row has,
  // sentence and question widths to the widest selected (never below 1); support keeps Ks.
  QaBatch gather(std::span<const int64_t> index) const;
};

// Writes the six datasets of `split` ("train", ...).
void write_qa_split(io::File& file, const std::string& split, const QaSplit& s);

// Reads and checks one split: dtypes (integer datasets; io's FormatError otherwise), ranks and
// row counts (ShapeError); story_len in [1, Ms], every word id in [0, vocab_size), answers in
// [kNumReserved, vocab_size), support in [-1, story_len), task in [1, 20] (DataError naming the
// file, dataset and row); a missing split or dataset is a FormatError listing what the file has.
// Reads rows `rows` (all by default) into memory.
QaSplit read_qa_split(const io::File& file, const std::string& split, int64_t vocab_size,
                      const io::RowSet& rows = io::RowSet::all());
// A split for training, kept as `keep` says (data/rows.hpp): read whole into memory, or checked a
// block of rows at a time with stories and questions left in `file`, which must outlive it (the
// ranks of `ranks` each checking their share).
QaSplit open_qa_split(const io::File& file, const std::string& split, int64_t vocab_size, data::KeepData keep,
                      dist::Communicator& ranks = dist::world());

// Reads and checks /vocab/words (read_vocab); its size() is read_qa_split's vocab_size.
data::Vocab read_qa_vocab(const io::File& file);

}  // namespace attn::memnet

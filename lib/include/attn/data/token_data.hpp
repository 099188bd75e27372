// The token layout of translation and language-model data sets, one definition: written by
// attn-data's generators and importers, read and checked once by the tools that train on it so
// that the training loop can trust every id and length. Per split (datasets/README.md):
//   /<split>/src, src_len, tgt, tgt_len   int32 [N, S], [N], [N, T], [N], padded with 0; targets
//                                         end with EOS (2)
//   /<split>/segments                     integer [N, S], optional: 0 (sentence A) then 1
//                                         (sentence B) per source row, 0 after src_len; the
//                                         labelled layout's (labelled_data.hpp), read by a masked
//                                         LM so that it pre-trains its segment embeddings
// A labelled split (labelled_data.hpp: /src, src_len, segments, no /tgt) asked for its targets
// reads as language-model text: each row A | B as the targets A [SEP] B EOS ([SEP] = EOS), the
// text a fine-tuned lm reads, so an lm pre-trains on a labelled set as an mlm does.
//
// A split is read into memory (read_token_split), or opened for training (open_token_split):
// every row checked, the lengths in memory, the rows left in the file (data/rows.hpp).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/data/rows.hpp"
#include "attn/data/splits.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::data {

struct TokenSplit {
  std::string name;          // "train", "valid", "test"
  Rows src;                  // int32 [N, S]; empty when not read
  Tensor src_len;            // int32 [N]
  Rows tgt;                  // int32 [N, T]: targets ending with EOS; empty when not read
  Tensor tgt_len;            // int32 [N]
  Rows segments;             // int32 [N, S], 0/1; empty when not read or not in the file
  int64_t size() const { return src_len.empty() ? tgt_len.numel() : src_len.numel(); }
  bool has_src() const { return !src_len.empty(); }
  bool has_tgt() const { return !tgt_len.empty(); }
};

struct TokenSplitRequest {
  bool src = true;           // read /<split>/src and src_len
  bool tgt = true;           // read /<split>/tgt and tgt_len
  int64_t src_vocab = 0;     // > 0: every source id must be below it
  int64_t tgt_vocab = 0;     // > 0: every target id must be below it
  bool segments = false;     // with src: read /<split>/segments when the file has it
};


// Reads one split's rows `rows` (all of them by default) into memory. Every failure names the file and the dataset: a missing dataset or wrong
// rank (FormatError / ShapeError from io), rows that differ between src and tgt (ShapeError), a
// length outside [1, S] (src) or [1, T] (tgt), or an id outside [0, vocab) (DataError, with the
// row); segments not 0 then 1 within a row or not 0 after it (DataError).
// Messages name the file's row numbers.
TokenSplit read_token_split(const io::File& file, const std::string& split, const TokenSplitRequest& request,
                            const io::RowSet& rows = io::RowSet::all());

// A split for training, kept as `keep` says (data/rows.hpp): read whole into memory, or checked a
// block of rows at a time with the lengths in memory and the rows left in `file`, which must
// outlive it (the ranks of `ranks` each checking their share). A labelled split read as text is
// built in memory (its targets are not in the file).
TokenSplit open_token_split(const io::File& file, const std::string& split, const TokenSplitRequest& request,
                            KeepData keep, dist::Communicator& ranks = dist::world());

// Per row, whether it has a sentence B: its segment at position length - 1 is 1 (false for all
// when `segments` is empty). segments: int32 [N, S], in memory or in the file (read a block at a
// time, each rank of `ranks` its share); lengths: int32 [N].
std::vector<bool> has_sentence_b(const Rows& segments, const Tensor& lengths, dist::Communicator& ranks = dist::world());

// Writes /<split>/{src, src_len, tgt, tgt_len} of s (the four must be set).
void write_token_split(io::File& file, const std::string& split, const TokenSplit& s);

}  // namespace attn::data

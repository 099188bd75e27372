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
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "attn/core/tensor.hpp"
#include "attn/data/splits.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::data {

struct TokenSplit {
  std::string name;          // "train", "valid", "test"
  Tensor src, src_len;       // int32 [N, S], [N]; empty when not read
  Tensor tgt, tgt_len;       // int32 [N, T], [N]: targets ending with EOS; empty when not read
  Tensor segments;           // int32 [N, S], 0/1; empty when not read or not in the file
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


// Reads one split. Every failure names the file and the dataset: a missing dataset or wrong
// rank (FormatError / ShapeError from io), rows that differ between src and tgt (ShapeError), a
// length outside [1, S] (src) or [1, T] (tgt), or an id outside [0, vocab) (DataError, with the
// row); segments not 0 then 1 within a row or not 0 after it (DataError).
TokenSplit read_token_split(const io::File& file, const std::string& split, const TokenSplitRequest& request);

// Writes /<split>/{src, src_len, tgt, tgt_len} of s (the four must be set).
void write_token_split(io::File& file, const std::string& split, const TokenSplit& s);

}  // namespace attn::data

// Sequence-level knowledge distillation (Kim & Rush 2016, sec. 3.2): a token data set whose
// training targets are a teacher's translations of its training sources, the recipe every
// non-autoregressive model trains on (Gu et al. 2018; Ghazvininejad et al. 2019). attn-data
// distil builds it from the original data set and the translation file of its /train
// (`attn-transformer translate --split train --beam 4`, train/token_run.hpp's layout):
//   /train/src, src_len     the original's, unchanged (same rows, same order, same width)
//   /train/tgt, tgt_len     teacher row i's tokens then EOS, padded with 0; T = the longest + 1.
//                           An empty output keeps its row as EOS alone (tgt_len 1), which the
//                           token layout allows (data/token_data.hpp), so that row i stays the
//                           original's row i; their number is the attribute empty_targets
//   /valid, /test           copied: src, src_len, tgt, tgt_len, src_text, tgt_text (those present)
//   /vocab/src, /vocab/tgt  copied, with the /vocab attributes (tokenizer, lowercase)
//   /<split> attributes     copied (a parallel set's lines, dropped); /train's provenance
//                           attributes are replaced by this distillation's:
//     distilled_from            the original data set (as its path was given; stdin for -)
//     distilled_from_command    its root `command`, when it records one
//     teacher_translations      the translation file
//     teacher_model             the translation's /config `model`, when recorded
//     teacher_command           the translation's root `command`, when recorded
//     empty_targets             int64: teacher outputs with no token
// The layout and the verb are documented in datasets/README.md and docs/FORMATS.md.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attn/data/token_data.hpp"
#include "attn/data/vocab.hpp"
#include "attn/datasets/splits.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::datasets {

using Attributes = std::vector<std::pair<std::string, io::AttrValue>>;

// One split of the output: its token rows and what its group carries besides them.
struct DistilledSplit {
  bool present = false;                                                  // the original has it
  data::TokenSplit tokens;                                               // src, src_len, tgt, tgt_len
  std::vector<std::pair<std::string, std::vector<std::string>>> texts;   // "src_text", "tgt_text"
  Attributes attrs;                                                      // the group's attributes
};

struct DistilledData {
  Splits<DistilledSplit> splits;   // train always present; its attrs end with the provenance
  data::Vocab src_vocab, tgt_vocab;
  Attributes vocab_attrs;      // the /vocab group's attributes
  int64_t empty_targets = 0;   // teacher outputs without a token (kept as EOS alone)
};

// Checks the two inputs against each other and builds the distilled set (all in memory; nothing
// is written). `translations` must be a translation output (root kind `translation` when the
// file names its kind) of the split train (its /config `split`, when recorded) of exactly this
// data set: as many rows as /train, the same sources row for row (/src, /src_len), decoded with
// its vocabularies (/vocab/tgt and /vocab/src token for token), every predicted id in [UNK, V).
// Every refusal names the file and dataset, what was expected and what was found: FormatError for
// a file of another kind or without a dataset the layouts require, DataError for inputs that do
// not belong together or a value out of range (both: bad input, exit 3 in the tools).
DistilledData distil(const io::File& data, const io::File& translations);

// Writes the layout above (the caller has created the file and its root attributes) through the
// token layout's writer (data::write_token_split) and the vocabularies' (data::write_vocab).
void write_distilled(io::File& file, const DistilledData& distilled);

}  // namespace attn::datasets

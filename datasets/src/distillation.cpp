// Sequence-level knowledge distillation: the checks that a translation file is the teacher's
// output for a data set's training split, and the distilled set built from both (distillation.hpp).
#include "attn/datasets/distillation.hpp"

#include <algorithm>
#include <string_view>

#include "attn/core/error.hpp"
#include "attn/data/batching.hpp"
#include "attn/data/splits.hpp"

namespace attn::datasets {
namespace {

constexpr const char* kTranslateHint = "attn-transformer translate --data DATA --split train --beam 4 --out FILE";

// The /train attributes a distillation writes; those of an earlier one are not carried over.
constexpr std::string_view kProvenance[] = {"distilled_from", "distilled_from_command", "teacher_translations",
                                            "teacher_model",  "teacher_command",        "empty_targets"};

bool is_provenance(const std::string& key) {
  return std::find(std::begin(kProvenance), std::end(kProvenance), key) != std::end(kProvenance);
}

Attributes attributes_of(const io::File& file, const std::string& object) {
  Attributes out;
  for (const std::string& key : file.attr_names(object)) out.emplace_back(key, file.attr(object, key));
  return out;
}

std::string root_command(const io::File& file) {
  return file.has_attr("/", "command") ? file.attr_string("/", "command") : "";
}

// A translation output of the training split: its root kind (when the file names one) and its
// /config split (when recorded).
void check_translation_file(const io::File& tr) {
  if (tr.has_attr("/", "format")) {
    try {
      io::require_format(tr, "attnlab/output", "translation");
    } catch (const FormatError& e) {
      throw FormatError(std::string(e.what()) + "; distillation reads a translate verb's output of the " +
                        "training split (" + kTranslateHint + ")");
    }
  }
  if (tr.exists("/config") && tr.has_attr("/config", "split")) {
    const std::string split = tr.attr_string("/config", "split");
    if (split != "train")
      throw DataError(tr.display_name() + ": translates the split '" + split + "' (/config attribute split), " +
                      "expected 'train': distillation replaces the training targets by the teacher's (" +
                      kTranslateHint + ")");
  }
}

// The vocabulary `dataset` of the translation file is the data set's, token for token.
void check_same_vocab(const io::File& tr, const io::File& data, const std::string& dataset, const data::Vocab& want) {
  const data::Vocab got = data::read_vocab(tr, dataset);
  if (got.tokens() == want.tokens()) return;
  std::string found;
  if (got.size() != want.size()) {
    found = "has " + std::to_string(got.size()) + " tokens, expected the " + std::to_string(want.size()) + " of ";
  } else {
    size_t i = 0;
    while (got.tokens()[i] == want.tokens()[i]) ++i;
    found = "holds '" + got.tokens()[i] + "' at id " + std::to_string(i) + ", expected '" + want.tokens()[i] +
            "' as in ";
  }
  throw DataError(tr.display_name() + ": dataset '" + dataset + "' " + found + data.display_name() + "'s '" + dataset +
                  "': the teacher decoded with other vocabularies than the data set's (train it on this data set)");
}

// Row i of the translation file's /src, /src_len is row i of the data set's /train sources.
void check_same_sources(const io::File& tr, const io::File& data, const data::TokenSplit& train) {
  const int64_t N = train.size();
  const Tensor src = tr.read("/src", DType::i32, {N, kAny}), src_len = tr.read("/src_len", DType::i32, {N});
  const Tensor want = train.src.all();
  const int64_t S = src.dim(1), Sw = want.dim(1);
  for (int64_t i = 0; i < N; ++i) {
    const int32_t len = src_len.idata()[i], want_len = train.src_len.idata()[i];
    const bool same = len == want_len && len <= S &&
                      std::equal(src.idata() + i * S, src.idata() + i * S + len, want.idata() + i * Sw);
    if (!same)
      throw DataError(tr.display_name() + ": the source of row " + std::to_string(i) + " ('/src', '/src_len') " +
                      "differs from row " + std::to_string(i) + " of " + data.display_name() + "'s '/train/src': " +
                      "the file translates another data set's training split, or its rows in another order");
  }
}

// The teacher's outputs as targets: each row's tokens then EOS. Counts the empty ones.
data::PaddedBatch teacher_targets(const io::File& tr, int64_t N, int64_t V, int64_t& empty) {
  const Tensor pred = tr.read("/predictions", DType::i32, {N, kAny});
  const Tensor pred_len = tr.read("/predictions_len", DType::i32, {N});
  const int64_t L = pred.dim(1);
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(N));
  empty = 0;
  const std::string where = tr.display_name() + ": dataset '";
  for (int64_t i = 0; i < N; ++i) {
    const int32_t len = pred_len.idata()[i];
    if (len < 0 || len > L)
      throw DataError(where + "/predictions_len' row " + std::to_string(i) + " is " + std::to_string(len) +
                      ", expected a length in [0, " + std::to_string(L) + "] (the width of '/predictions')");
    const int32_t* ids = pred.idata() + i * L;
    for (int32_t t = 0; t < len; ++t)
      if (ids[t] < data::kUnk || ids[t] >= V)
        throw DataError(where + "/predictions' row " + std::to_string(i) + " position " + std::to_string(t) +
                        " holds id " + std::to_string(ids[t]) + ", expected a token of '/vocab/tgt' in [" +
                        std::to_string(data::kUnk) + ", " + std::to_string(V) +
                        ") (a decoder never emits PAD, BOS or EOS)");
    std::vector<int32_t>& row = rows[static_cast<size_t>(i)];
    row.assign(ids, ids + len);
    row.push_back(data::kEos);
    empty += len == 0;
  }
  return data::pad_sequences(rows);
}

}  // namespace

DistilledData distil(const io::File& data, const io::File& translations) {
  const io::File& tr = translations;
  check_translation_file(tr);
  for (const char* dataset : {"/vocab/src", "/vocab/tgt"})
    if (!data.exists(dataset))
      throw FormatError(data.display_name() + ": no dataset '" + dataset + "': distillation needs a " +
                        "translation data set, with a source and a target vocabulary (attn-data reverse, sort, " +
                        "multi30k, parallel)");
  DistilledData out;
  out.src_vocab = data::read_vocab(data, "/vocab/src");
  out.tgt_vocab = data::read_vocab(data, "/vocab/tgt");
  out.vocab_attrs = attributes_of(data, "/vocab");

  const data::TokenSplit train = data::read_token_split(data, "train",
                                                        {.src = true, .tgt = false, .src_vocab = out.src_vocab.size()});
  const int64_t N = train.size();
  const Shape pred = tr.shape("/predictions");
  if (pred.size() != 2 || pred[0] != N)
    throw DataError(tr.display_name() + ": dataset '/predictions' has shape " + to_string(pred) + ", expected [" +
                    std::to_string(N) + ", *]: one row for each of the " + std::to_string(N) + " rows of " +
                    data.display_name() + "'s '/train', in its order (" + kTranslateHint + ")");
  check_same_vocab(tr, data, "/vocab/tgt", out.tgt_vocab);
  check_same_vocab(tr, data, "/vocab/src", out.src_vocab);
  check_same_sources(tr, data, train);

  DistilledSplit& t = out.splits.train;
  t.present = true;
  const data::PaddedBatch targets = teacher_targets(tr, N, out.tgt_vocab.size(), out.empty_targets);
  t.tokens = train;   // name, src, src_len
  t.tokens.tgt = targets.tokens;
  t.tokens.tgt_len = targets.lengths;
  for (auto& [key, value] : attributes_of(data, "/train"))
    if (!is_provenance(key)) t.attrs.emplace_back(key, std::move(value));
  t.attrs.emplace_back("distilled_from", data.display_name());
  if (const std::string c = root_command(data); !c.empty()) t.attrs.emplace_back("distilled_from_command", c);
  t.attrs.emplace_back("teacher_translations", tr.display_name());
  if (tr.exists("/config") && tr.has_attr("/config", "model"))
    t.attrs.emplace_back("teacher_model", tr.attr_string("/config", "model"));
  if (const std::string c = root_command(tr); !c.empty()) t.attrs.emplace_back("teacher_command", c);
  t.attrs.emplace_back("empty_targets", out.empty_targets);

  for (int k = 1; k < 3; ++k) {
    const std::string split = kSplitNames[k], g = "/" + split;
    if (!data::has_split(data, split)) continue;
    DistilledSplit& s = out.splits[k];
    s.present = true;
    s.tokens = data::read_token_split(data, split,
                                      {.src_vocab = out.src_vocab.size(), .tgt_vocab = out.tgt_vocab.size()});
    for (const char* text : {"src_text", "tgt_text"})
      if (data.exists(g + "/" + text)) s.texts.emplace_back(text, data.read_strings(g + "/" + text));
    s.attrs = attributes_of(data, g);
  }
  return out;
}

void write_distilled(io::File& file, const DistilledData& d) {
  for (int k = 0; k < 3; ++k) {
    const DistilledSplit& s = d.splits[k];
    if (!s.present) continue;
    const std::string g = std::string("/") + kSplitNames[k];
    data::write_token_split(file, kSplitNames[k], s.tokens);
    for (const auto& [name, values] : s.texts) file.write_strings(g + "/" + name, values);
    for (const auto& [key, value] : s.attrs) file.set_attr(g, key, value);
  }
  data::write_vocab(file, "/vocab/src", d.src_vocab);
  data::write_vocab(file, "/vocab/tgt", d.tgt_vocab);
  for (const auto& [key, value] : d.vocab_attrs) file.set_attr("/vocab", key, value);
}

}  // namespace attn::datasets

// What the sequence-model families (transformer_run.hpp, seq2seq_run.hpp) share on token data
// sets: their batches, teacher-forced evaluation sums, the vocabularies a model file carries,
// and decoding a split into a translation output file.
//
// A model file of a sequence-model family is a checkpoint (io/checkpoint.hpp, with the
// trainer's /state and /metrics) plus the vocabularies /vocab/src and /vocab/tgt of its data
// (ModelFile in memory, load_token_model).
//
// A translation output file (format "attnlab/output", kind "translation") holds, for the N
// sentences of a split in data-set order:
//   /predictions        int32 [N, Lmax] target ids, without BOS and EOS, padded with 0
//   /predictions_len    int32 [N]       tokens per row
//   /predictions_text   string [N]      the tokens joined by single spaces (what attn-bleu scores)
//   /predictions_detok  string [N]      detokenised sentences, for reading
//   /scores             float32 [N]     the decoder's log-probability (beam: length-normalised)
//   /src, /src_len      int32 [N, S], [N]   the source sentences (labels for attention plots)
//   /vocab/src, /vocab/tgt  string      copies, so the file stands alone
//   /attention/<name>   float32 [N, ..., T, S]   the model's attention weights, when asked
//                       (transformer_run.hpp, seq2seq_run.hpp say which); zero beyond a
//                       sentence's lengths
//   /<name>             [N, ...]   any further results of the family's decoder
//                       (decode::Decoded::outputs; a cmlm's /iterations), zero-padded
//   /metrics  attributes sentences, and with references sequence_accuracy, token_accuracy
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/data/batching.hpp"
#include "attn/data/token_batch.hpp"
#include "attn/data/token_data.hpp"
#include "attn/data/vocab.hpp"
#include "attn/decode/decoding.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/metrics/accuracy.hpp"
#include "attn/metrics/bleu.hpp"
#include "attn/nn/param.hpp"
#include "attn/train/model_file.hpp"
#include "attn/train/split_run.hpp"
#include "attn/train/trainer.hpp"

namespace attn::train {

// What a training run reads: /train and, when the file has it, /valid, each opened and kept as
// `keep` says (data::open_token_split; in the file, `file` must outlive them).
struct TrainingData {
  data::TokenSplit train;
  std::optional<data::TokenSplit> valid;
  const data::TokenSplit* valid_or_null() const { return valid ? &*valid : nullptr; }
};
TrainingData read_training_data(const io::File& file, const data::TokenSplitRequest& request,
                                data::KeepData keep = data::KeepData::memory);


// A token task's BatchStats: loss and count over the counted target tokens, units = tokens,
// sums {nll, correct} (kTokenSums).
BatchStats to_stats(const data::LossStats& s);
inline const std::vector<std::string> kTokenSums = {"nll", "correct"};
// exp(nll / tokens) and correct / tokens of a token task's sums (NaN when nothing was counted).
double perplexity(const BatchStats& s);
double token_accuracy(const BatchStats& s);
// Declares a sequence model's unit (tokens), sums and metrics (perplexity, token accuracy) on
// its task.
void describe_token_task(TrainTask& task);

// The padded batch of rows `index` of `split`: src/src_len (and segments when read) when the
// split was read with its sources, tgt/tgt_len when with its targets.
data::TokenBatch gather_token_batch(const data::TokenSplit& split, std::span<const int64_t> index);

// Teacher-forced argmax per token and per sentence (EOS included) against batch.tgt: all tokens
// right is exactly when greedy decoding reproduces the target. logits: [B, T, V].
metrics::AccuracyCounts argmax_accuracy(const Tensor& logits, const data::TokenBatch& batch);

struct EvalResult {
  BatchStats stats;                    // loss, perplexity, token accuracy (teacher forced)
  metrics::AccuracyCounts accuracy;    // argmax_accuracy over the split (encoder-decoders, lm)
};

// The eval verbs' loop: run(batch) for every batch, the results summed over the split (on
// several ranks each batch runs on one and the sums come back in batch order: split_run.hpp).
EvalResult evaluate_split(int64_t n, const std::vector<std::vector<int64_t>>& batches,
                          const std::function<EvalResult(std::span<const int64_t>)>& run);

struct Vocabs {
  data::Vocab src, tgt;
};
// The vocabularies of a token data set: /vocab/src and /vocab/tgt (without one of them, as
// language-model text or a labelled set, the other's for both).
Vocabs read_data_vocabs(const io::File& data);
// /vocab/src and /vocab/tgt.
void write_vocabs(io::File& file, const data::Vocab& src_vocab, const data::Vocab& tgt_vocab);

// The vocabularies of a model file, checked against the model's sizes (0: not checked;
// FormatError naming the file otherwise).
Vocabs read_model_vocabs(const io::File& file, int64_t src_vocab, int64_t tgt_vocab);

// A model file of a sequence family: the model and the vocabularies of its data.
template <class Model>
struct ModelFile {
  Model model;
  data::Vocab src_vocab, tgt_vocab;
  io::Checkpoint checkpoint;   // everything but the parameters (moved into the model)
};
// load_model (model_file.hpp), then the vocabularies, checked against src_size(model) and
// tgt_size(model).
template <class Model>
ModelFile<Model> load_token_model(const std::string& path, const std::string& kind, int64_t (*src_size)(const Model&),
                                  int64_t (*tgt_size)(const Model&)) {
  const io::File file = io::File::open_read(path);
  LoadedModel<Model> m = load_model<Model>(file, kind);
  Vocabs v = read_model_vocabs(file, src_size(m.model), tgt_size(m.model));
  return {std::move(m.model), std::move(v.src), std::move(v.tgt), std::move(m.checkpoint)};
}

// The split after checking that the data set's /vocab/src and /vocab/tgt are the model's (token
// ids would mean other words otherwise; FormatError naming the file; a null vocabulary is not
// checked), opened as training opens it (data::open_token_split with KeepData::automatic: a large
// split stays in `data`, which must outlive it, and each rank of a data-parallel job then checks
// a share of its rows and reads only the rows of its batches).
data::TokenSplit read_model_split(const io::File& data, const std::string& split, const data::TokenSplitRequest& request,
                            const data::Vocab* src_vocab, const data::Vocab* tgt_vocab);

// Checks that the vocabulary sizes of a checkpoint's /config (attributes src_vocab and
// tgt_vocab; 0: not used) are those of `vocabs`, read from the data set `data`, and that the
// checkpoint's /vocab/src and /vocab/tgt (when it has them) hold the same tokens in the same
// order: a vocabulary of the same size but other words (a data set rebuilt, or a file edited)
// would train on silently remapped ids. FormatError naming both files otherwise.
void check_resumed_vocabs(const std::map<std::string, io::AttrValue>& config, const std::string& checkpoint,
                          const io::File& data, const Vocabs& vocabs);
// The /config of the checkpoint of `kind` that a run resumes from, checked so.
std::map<std::string, io::AttrValue> resumed_config(const std::string& checkpoint, const std::string& kind,
                                                    const io::File& data, const Vocabs& vocabs);

// A decoded split: what write_translation stores.
struct Translation {
  std::vector<std::vector<int32_t>> tokens;                // per sentence, in split order
  std::vector<float> scores;
  NamedTensors attention;   // "/attention/<name>", [N, ..., T, S]
  NamedTensors outputs;     // "/<name>", [N, ...]: decode::Decoded::outputs
  metrics::AccuracyCounts accuracy;   // against the split's targets (EOS included), when present
};

// A model's decoder on one batch of sources: [B, ..., Tb, Sb] attention tensors, if any.
using BatchDecoder = std::function<decode::Decoded(const data::PaddedBatch& src)>;

// The generation limit of a decoding batch: max_len when > 0, else the batch's longest source
// + 50 (Vaswani et al. 2017, sec. 6.1).
int64_t generation_limit(int64_t max_len, const data::PaddedBatch& src);

// One batch of sources through a family's greedy search (options.beam 1) or beam search (the
// greedy / beam_search of its model's namespace, found by argument-dependent lookup: the caller
// includes its family's decode.hpp), generating at most generation_limit(options.max_len, src) tokens.
template <class Model>
decode::Decoded decode_batch(const Model& model, const data::PaddedBatch& src, decode::DecodeOptions options) {
  options.max_len = generation_limit(options.max_len, src);
  return options.beam > 1 ? beam_search(model, src.tokens, src.lengths, options)
                          : greedy(model, src.tokens, src.lengths, options);
}

// How a split is decoded.
struct TranslateOptions {
  decode::DecodeOptions decode;   // max_len <= 0: the batch's longest source + 50 (generation_limit)
  int64_t max_tokens = 4096;      // source tokens per decoding batch
};

// Decodes the sources of `split` in batches of about max_tokens source tokens of similar lengths
// and puts the results back in split order. Each named attention tensor becomes one [N, ..., T, S]
// with T and S the largest of any batch (at least 1), zero where a batch had less. With targets
// in the split, the exact-match accuracy of tokens + EOS is counted. ConfigError without sources.
Translation translate_split(const data::TokenSplit& split, int64_t max_tokens, const BatchDecoder& decode);

// The epoch metric "bleu" (the curve valid_bleu): corpus BLEU-4 (x 100) of translate(valid)
// against valid's targets, compared as token ids with EOS removed. The ids are the data set's
// tokens (subwords when it was built with them), so the curve follows attn-bleu's detokenised
// score without equalling it. `valid` and what `translate` refers to must outlive the task.
EpochMetric valid_bleu(const data::TokenSplit& valid, std::function<Translation(const data::TokenSplit&)> translate);

// Writes a translation into an open output file in the layout above (root attributes and
// /config are the caller's).
void write_translation(io::File& file, const Translation& translation, const data::TokenSplit& split,
                       const data::Vocab& src_vocab, const data::Vocab& tgt_vocab);

}  // namespace attn::train

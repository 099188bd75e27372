// The Transformer on token data sets: its TrainTask for the model-agnostic trainer, evaluation
// (loss, perplexity, token and sequence accuracy), translation with attention weights, model
// files with their vocabularies, and checkpoint averaging. attn-transformer's verbs are thin
// front ends over these functions.
//
// Which data each architecture reads (datasets/README.md):
//   encdec  /<split>/src, src_len and tgt, tgt_len;  a pair costs max(S_i, T_i) tokens
//   lm      /<split>/tgt, tgt_len                    (the target side as running text)
//   mlm     /<split>/src, src_len                    (masked per batch: models::mask_tokens)
//
// A Transformer model file is a checkpoint of kind "transformer" (io/checkpoint.hpp, with the
// trainer's /state and /metrics) plus the vocabularies /vocab/src and /vocab/tgt of its data.
//
// A translation output file (format "attnlab/output", kind "translation") holds, for the N
// sentences of a split in data-set order:
//   /predictions        int32 [N, L]    target ids, without BOS and EOS, padded with 0
//   /predictions_len    int32 [N]       tokens per row
//   /predictions_text   string [N]      the tokens joined by single spaces (what attn-bleu scores)
//   /predictions_detok  string [N]      detokenised sentences, for reading
//   /scores             float32 [N]     the decoder's log-probability (beam: length-normalised)
//   /src, /src_len      int32 [N, S], [N]   the source sentences (labels for attention plots)
//   /vocab/src, /vocab/tgt  string      copies, so the file stands alone
//   /attention/self/layer<i>   float32 [N, H, T, T]   with dump_attention: decoder self-attention;
//   /attention/cross/layer<i>  float32 [N, H, T, S]   and cross-attention. Row t is the decoder
//                              position fed t-th (BOS, y_0, ...), zero rows/columns beyond a
//                              sentence's lengths
//   /metrics  attributes sentences, and with references sequence_accuracy, token_accuracy
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "attn/data/vocab.hpp"
#include "attn/decode/decode.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/metrics/accuracy.hpp"
#include "attn/models/transformer.hpp"
#include "attn/train/token_data.hpp"
#include "attn/train/trainer.hpp"

namespace attn::train {

// What `arch` reads of a split (see above), with the vocabulary bounds of `config`.
TokenSplitRequest transformer_request(const models::TransformerConfig& config);

// The cost of each example of `split` in a batch (see above).
std::vector<int32_t> transformer_lengths(models::TransformerArch arch, const TokenSplit& split);

// The padded batch of rows `index` of `split` for `arch` (mlm: not yet masked).
models::TokenBatch make_token_batch(models::TransformerArch arch, const TokenSplit& split,
                                    std::span<const int64_t> index);

// The trainer's view of a Transformer on token splits: kind "transformer", config =
// model.config().to_attrs(), the vocabularies written with every saved file. mlm batches are
// masked with the trainer's stream (training) or a stream fixed by the batch (validation, so it
// is the same every epoch). model, train, valid and the vocabularies must outlive the task;
// valid may be null.
TrainTask transformer_task(models::Transformer& model, const TokenSplit& train, const TokenSplit* valid,
                           const data::Vocab& src_vocab, const data::Vocab& tgt_vocab);

// A model file in memory.
struct TransformerFile {
  models::Transformer model;
  data::Vocab src_vocab, tgt_vocab;
  io::Checkpoint checkpoint;   // everything but the parameters (moved into the model)
};
// Reads a model file written by the trainer (or average_transformers). Throws FormatError /
// ShapeError naming the file when it is not a Transformer model or does not fit its config.
TransformerFile load_transformer(const std::string& path);

struct EvalResult {
  BatchStats stats;                    // loss, perplexity, token accuracy (teacher forced)
  metrics::AccuracyCounts accuracy;    // encdec/lm: teacher-forced argmax per token and per
                                       // sentence (EOS included); all tokens right is exactly
                                       // when greedy decoding reproduces the target
};
// Forward passes over every example of `split`, batched by max_tokens in length order.
EvalResult evaluate_transformer(const models::Transformer& model, const TokenSplit& split, int64_t max_tokens);

struct TranslateOptions {
  decode::DecodeOptions decode;        // beam 1: greedy; want_attention: dump the weights;
                                       // max_len <= 0: the batch's longest source + 50 (paper
                                       // sec. 6.1)
  int64_t max_tokens = 4096;           // source tokens per decoding batch
};
struct Translation {
  std::vector<std::vector<int32_t>> tokens;           // per sentence, in split order
  std::vector<float> scores;
  std::vector<Tensor> self_attention, cross_attention;   // per layer [N, H, T, T] / [N, H, T, S]
  metrics::AccuracyCounts accuracy;   // against the split's targets (EOS included), when present
};
// Decodes the sources of `split` (encdec), in batches of similar lengths.
Translation translate(const models::Transformer& model, const TokenSplit& split, const TranslateOptions& options);

// Writes a translation into an open output file in the layout above (root attributes and
// /config are the caller's).
void write_translation(io::File& file, const Translation& translation, const TokenSplit& split,
                       const data::Vocab& src_vocab, const data::Vocab& tgt_vocab);

// average_checkpoints over Transformer model files, saved with the vocabularies of the last
// file into `out` (an open output file; the caller commits). created_by/command: provenance.
void average_transformers(const std::vector<std::string>& inputs, io::File& out, const std::string& created_by,
                          const std::string& command);

}  // namespace attn::train

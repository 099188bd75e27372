// The Transformer on token data sets: its TrainTask for the model-agnostic trainer, evaluation
// (loss, perplexity, token and sequence accuracy), translation with attention weights, model
// files with their vocabularies, and checkpoint averaging. attn-transformer's verbs are thin
// front ends over these functions.
//
// Which data each architecture reads (datasets/README.md):
//   encdec  /<split>/src, src_len and tgt, tgt_len;  a pair costs max(S_i, T_i) tokens
//   cmlm    the same (trained on cmlm_mask's masks; validation and evaluation mask each example
//           with a stream fixed per example, as mlm)
//   lm      /<split>/tgt, tgt_len                    (the target side as running text)
//   mlm     /<split>/src, src_len (and segments      (read as [CLS] A [SEP] (B [SEP]), the input
//           when the file has them)                   of fine-tuning: transformer::bert_input; then
//                                                     masked: transformer::mask_tokens in training,
//                                                     mask_examples, fixed per example, in
//                                                     validation and evaluation; [CLS] = BOS and
//                                                     [SEP] = EOS are never masked)
//
// A Transformer model file is a checkpoint of kind "transformer" plus the vocabularies of its
// data (token_run.hpp). Its translations are token_run.hpp's output file with, when asked
// (dump_attention), every decoder layer's weights:
//   /attention/self/layer<i>   float32 [N, NH, T, T]   decoder self-attention
//   /attention/cross/layer<i>  float32 [N, NH, T, S]   cross-attention
// Row t is the decoder position fed t-th (BOS, y_0, ...), zero rows/columns beyond a sentence's
// lengths.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/data/token_data.hpp"
#include "attn/data/vocab.hpp"
#include "attn/families/transformer/decode.hpp"
#include "attn/families/transformer/model.hpp"
#include "attn/families/transformer/nat.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/train/token_run.hpp"
#include "attn/train/trainer.hpp"

namespace attn::transformer {

// What `arch` reads of a split (see above), with the vocabulary bounds of `config`.
data::TokenSplitRequest transformer_request(const TransformerConfig& config);

// A data set's vocabularies as a model of `arch` uses them: an mlm model reads the source side
// with its one vocabulary (config.tgt_vocab), so that both are the source's; the others use
// them as they are. A model file stores these.
train::Vocabs transformer_vocabs(TransformerArch arch, const train::Vocabs& data);

// The positions a model trained on `data` handles (TransformerConfig::max_len): `wanted` when it is
// > 0 (ConfigError if it is less than the longest example + 3), else the longest example + 3 (BOS or
// EOS; an mlm's [CLS] and two [SEP]s), at least 256, so that decoding a little past the longest
// training example still has learned positions.
int64_t transformer_max_len(const train::TrainingData& data, int64_t wanted = 0);

// The cost of each example of `split` in a batch (see above).
std::vector<int32_t> transformer_lengths(TransformerArch arch, const data::TokenSplit& split);

// The trainer's view of a Transformer on token splits: kind "transformer", config =
// model.config().to_attrs(), the vocabularies written with every saved file. mlm batches are
// masked with the trainer's stream (training) or a stream fixed per example (validation, so it is
// the same every epoch and whatever the batches), both with `masking`. train and valid are read with
// transformer_request(config); they, the model and the vocabularies must outlive the task; valid may be null.
train::TrainTask transformer_task(Transformer& model, const data::TokenSplit& train, const data::TokenSplit* valid,
                                  const data::Vocab& src_vocab, const data::Vocab& tgt_vocab,
                                  const MaskingOptions& masking = {});

// MaskingOptions::only for the words of a text file (separated by white space; a line starting with
// '#' is a comment): one flag per id of `vocab`. A word that is not in the vocabulary, or a file
// without words, throws FormatError naming the file and the word.
std::vector<bool> read_mask_words(const std::string& path, const data::Vocab& vocab);

using TransformerFile = train::ModelFile<Transformer>;
// Reads a model file written by the trainer (or average_transformers). Throws FormatError /
// ShapeError naming the file when it is not a Transformer model or does not fit its config.
TransformerFile load_transformer(const std::string& path);

// Forward passes over every example of `split`, batched by max_tokens in length order.
train::EvalResult evaluate_transformer(const Transformer& model, const data::TokenSplit& split, int64_t max_tokens);

// Decodes the sources of `split` (encdec, cmlm), in batches of similar lengths; options.decode's
// want_attention dumps the weights (decode.hpp). A cmlm model decodes with mask-predict (nat.hpp)
// as `nat` says, options.decode.max_len (> 0) capping its lengths; it refuses a beam > 1 and
// want_attention (ConfigError). Its translation also holds the refinement, outputs
// "iterations/tokens" and "iterations/masked" (nat.hpp).
train::Translation translate(const Transformer& model, const data::TokenSplit& split,
                             const train::TranslateOptions& options, const MaskPredictOptions& nat = {});

// average_checkpoints over Transformer model files, saved with the vocabularies of the last
// file into `out` (an open output file; the caller commits). created_by/command: provenance.
void average_transformers(const std::vector<std::string>& inputs, io::File& out, const std::string& created_by,
                          const std::string& command);

}  // namespace attn::transformer

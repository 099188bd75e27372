// The RNN encoder-decoder (families/seq2seq/model.hpp) on token data sets: its TrainTask for the
// model-agnostic trainer, evaluation (loss, perplexity, token and sequence accuracy),
// translation with the alignment matrix, and model files with their vocabularies.
// attn-seq2seq's verbs are thin front ends over these functions.
//
// It reads /<split>/src, src_len and tgt, tgt_len (datasets/README.md); a pair costs
// max(S_i, T_i) tokens in a batch.
//
// A seq2seq model file is a checkpoint of kind "seq2seq" plus the vocabularies of its data
// (token_run.hpp). Its translations are token_run.hpp's output file with
//   /attention/alignment  float32 [N, T, S]  row t: the decoder's attention weights over the
//                         source when it emitted token t of /predictions (T = the width of
//                         /predictions, S = the longest source); zero beyond a sentence's
//                         predicted and source lengths. Rows sum to 1 within the source length
//                         with global attention. Local attention's rows sum to at most 1: local-p
//                         weighs them by a Gaussian without renormalising (Luong et al. 2015), and
//                         a local-m window that has passed the end of the source (t > S_b + P - 1)
//                         sees no word, so its row is 0. Absent with attention `none`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/data/token_data.hpp"
#include "attn/data/vocab.hpp"
#include "attn/families/seq2seq/decode.hpp"
#include "attn/families/seq2seq/model.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/train/token_run.hpp"
#include "attn/train/trainer.hpp"

namespace attn::seq2seq {

// Sources and targets, with the vocabulary bounds of `config`.
data::TokenSplitRequest seq2seq_request(const Seq2SeqConfig& config);

// The longest source of the training and validation splits: what max_src_len must cover for
// location scores.
int64_t longest_source(const train::TrainingData& data);

// The trainer's view of a seq2seq model on token splits: kind "seq2seq", config =
// model.config().to_attrs(), the vocabularies written with every saved file. Dropout and the
// teacher-forcing draws use the trainer's stream. train and valid are read with
// seq2seq_request(config); they, the model and the vocabularies must outlive the task; valid may
// be null.
train::TrainTask seq2seq_task(Seq2Seq& model, const data::TokenSplit& train, const data::TokenSplit* valid,
                              const data::Vocab& src_vocab, const data::Vocab& tgt_vocab);

using Seq2SeqFile = train::ModelFile<Seq2Seq>;
// Reads a model file written by the trainer. Throws FormatError / ShapeError naming the file
// when it is not a seq2seq model or does not fit its config.
Seq2SeqFile load_seq2seq(const std::string& path);

// Teacher-forced forward passes over every example of `split`, batched by max_tokens in length
// order.
train::EvalResult evaluate_seq2seq(const Seq2Seq& model, const data::TokenSplit& split, int64_t max_tokens);

// Decodes the sources of `split` in batches of similar lengths, with the alignment (above) when
// options.decode.want_attention.
train::Translation translate(const Seq2Seq& model, const data::TokenSplit& split,
                             const train::TranslateOptions& options);

}  // namespace attn::seq2seq

// The verbs of attn-data, one function each (argv[0] is the verb), and the options and
// output code the generators share. The verb table is in main.cpp.
#pragma once
#include <cstdint>
#include <string>

#include "attn/datasets/splits.hpp"
#include "common/options.hpp"

namespace attn::data_tool {

inline constexpr const char* kTool = "attn-data";
inline constexpr const char* kDatasetFormat = "attnlab/dataset";

// NTM tasks (ntm_verbs.cpp).
int cmd_copy(int argc, char** argv);
int cmd_repeat_copy(int argc, char** argv);
int cmd_assoc_recall(int argc, char** argv);
int cmd_priority_sort(int argc, char** argv);
// Toy translation (toy_verbs.cpp).
int cmd_reverse(int argc, char** argv);
int cmd_sort(int argc, char** argv);
// The sinusoidal positional-encoding table (posenc.cpp).
int cmd_posenc(int argc, char** argv);
// Parallel text (text_verbs.cpp).
int cmd_multi30k(int argc, char** argv);
int cmd_parallel(int argc, char** argv);
// SentencePiece subword models (subword_verb.cpp).
int cmd_subword(int argc, char** argv);
// Sequence-level knowledge distillation of a translation set (distil_verb.cpp).
int cmd_distil(int argc, char** argv);
// The bAbI question-answering tasks (babi_verb.cpp).
int cmd_babi(int argc, char** argv);
// Image captioning (image_verbs.cpp).
int cmd_mnist_strips(int argc, char** argv);
int cmd_shapes(int argc, char** argv);
// Pre-training and fine-tuning data (finetune_verbs.cpp).
int cmd_babi_cls(int argc, char** argv);
int cmd_text(int argc, char** argv);
int cmd_pairs(int argc, char** argv);
// Any attnlab file (info.cpp).
int cmd_info(int argc, char** argv);

// The options every generator has: --out, --seed, --n (training examples), --valid-n, --test-n.
void add_generator_options(cli::Options& opts, int64_t default_n, int64_t default_eval_n);
datasets::SplitSizes split_sizes(const cli::Options& opts);
uint64_t seed(const cli::Options& opts);
// "attn-data copy: wrote copy.h5 (train 10000, valid 1000, test 1000 examples)".
void print_written(const cli::Options& opts, const datasets::SplitSizes& sizes);

}  // namespace attn::data_tool

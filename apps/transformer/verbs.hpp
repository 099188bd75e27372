// The verbs of attn-transformer, one function each (argv[0] is the verb). The verb table is in
// main.cpp; every verb parses its options and calls the library
// (attn/families/transformer/run.hpp).
#pragma once
#include "common/options.hpp"

namespace attn::transformer_tool {

inline constexpr const char* kTool = "attn-transformer";

int cmd_train(int argc, char** argv);       // train_verb.cpp
int cmd_eval(int argc, char** argv);        // run_verbs.cpp
int cmd_translate(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_average(int argc, char** argv);
int cmd_finetune(int argc, char** argv);    // finetune_verbs.cpp
int cmd_classify(int argc, char** argv);
// The eval verb's path for a fine-tuned classifier (options parsed by cmd_eval).
int eval_classifier(const cli::Options& opts);

}  // namespace attn::transformer_tool

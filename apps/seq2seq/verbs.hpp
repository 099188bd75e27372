// The verbs of attn-seq2seq, one function each (argv[0] is the verb). The verb table is in
// main.cpp; every verb parses its options and calls the library
// (attn/families/seq2seq/run.hpp).
#pragma once

namespace attn::seq2seq_tool {

inline constexpr const char* kTool = "attn-seq2seq";

int cmd_train(int argc, char** argv);       // train_verb.cpp
int cmd_eval(int argc, char** argv);        // run_verbs.cpp
int cmd_translate(int argc, char** argv);

}  // namespace attn::seq2seq_tool

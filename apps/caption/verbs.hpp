// The verbs of attn-caption, one function each (argv[0] is the verb). The verb table is in
// main.cpp; every verb parses its options and calls the library
// (attn/families/caption/run.hpp).
#pragma once

namespace attn::caption_tool {

inline constexpr const char* kTool = "attn-caption";

int cmd_train(int argc, char** argv);     // train_verb.cpp
int cmd_eval(int argc, char** argv);      // run_verbs.cpp
int cmd_caption(int argc, char** argv);

}  // namespace attn::caption_tool

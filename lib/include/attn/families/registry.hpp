// The model families of attnlab, one entry each: the list that every conformance test covering all
// families iterates over (tests/conformance, the fuzzers, data-parallel equivalence, the reload of
// model files without attnlab). It is generated from cmake/Families.cmake, the one list a family
// joins; a family's own code lives in attn/families/<name>/ and defines attn::<name>::family().
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace attn::families {

struct Family {
  std::string name;                       // its folder, namespace and tool: "ntm" -> attn-ntm
  std::string summary;                    // one line: what the family's models are
  std::vector<std::string> model_kinds;   // the root `kind` of the model files its tools write
  // Reads a model file of one of model_kinds as the family's tools do (configuration, parameters,
  // vocabularies, state), throwing what they throw for a file that is not one (FormatError,
  // ShapeError, DataError naming the file).
  void (*load_model)(const std::string& path) = nullptr;

  std::string tool() const { return "attn-" + name; }
};

// Every family, in the order of cmake/Families.cmake.
const std::vector<Family>& all();
// The family whose tools write model files of root kind `kind`; nullptr when none does.
const Family* of_model_kind(std::string_view kind);

}  // namespace attn::families

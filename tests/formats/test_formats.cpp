// Model files read without attnlab (docs/FORMATS.md, "Checking a reader"): what is not one
// family's. tests/formats/reload.py (h5py and numpy only) is the shared core: reading a model
// file, the parameter bookkeeping, the numpy pieces and the command line; each family's numpy
// model is its module tests/families/<family>/reload.py, found from the family list
// (cmake/Families.cmake), and each family's cases, which train models with the real tools and
// compare reload.py's numbers with the library's, are in tests/families/<family>/test_reload.cpp
// (through tests/support/reload_support.hpp; "formats: ..." in CTest, like these). Here:
// `reload.py --kinds` must list every model kind of every family of the registry
// (attn/families/registry.hpp), and no other. $PYTHON (default /usr/bin/python3) runs the script;
// without it, or without h5py or numpy, the case is reported as skipped.
#include <set>
#include <sstream>
#include <string>

#include "attn/families/registry.hpp"
#include "reload_support.hpp"
#include "test_support.hpp"

using namespace attn;

TEST_CASE("formats: reload.py reloads every model kind of every family of the registry", "[integration][formats]") {
  // reload.py --kinds lists the root kinds its family modules have a reader for (their READERS):
  // a family added to cmake/Families.cmake, or a kind added to a family, fails here until its
  // module tests/families/<family>/reload.py (and a case of its test_reload.cpp) learns its files.
  test::TempDir dir;
  const test::Reload r = test::reload(dir, {}, " --kinds");
  if (r.code == -1) return;
  INFO(r.report);
  REQUIRE(r.code == 0);
  std::set<std::string> kinds;
  std::istringstream lines(r.report);
  for (std::string kind; std::getline(lines, kind);)
    if (!kind.empty()) kinds.insert(kind);
  REQUIRE_FALSE(families::all().empty());
  for (const families::Family& family : families::all()) {
    INFO("family " << family.name << " (its reader: tests/families/" << family.name << "/reload.py)");
    CHECK_FALSE(family.model_kinds.empty());
    for (const std::string& kind : family.model_kinds) {
      INFO("model kind " << kind);
      CHECK(kinds.count(kind) == 1);
    }
  }
  for (const std::string& kind : kinds) {   // and no kind that no family writes
    INFO("reload.py lists " << kind);
    CHECK(families::of_model_kind(kind) != nullptr);
  }
}

// What every model family must do, checked for each family of the registry
// (attn/families/registry.hpp, generated from cmake/Families.cmake) on its conformance recipe
// (tests/families/<family>/recipe.txt): a family added to the list joins these tests, and one
// whose folder, tool, tests or recipe is missing fails them. The other tests that cover every
// family iterate over the same registry: data-parallel equivalence (tests/mpi_cli), the fuzzers'
// model readers (tests/fuzz) and the reload of model files without attnlab (tests/formats).
#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <tuple>

#include "attn/core/error.hpp"
#include "attn/families/registry.hpp"
#include "attn/io/hdf5_file.hpp"
#include "family_recipes.hpp"
#include "reload_support.hpp"
#include "test_support.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

const fs::path kRoot = fs::path(ATTN_TESTS_DIR).parent_path();   // the source tree

std::set<std::string> folders(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory()) names.insert(entry.path().filename().string());
  return names;
}

void require_ok(const test::ShellResult& r) {
  INFO(r.err);
  REQUIRE(r.code == 0);
}

// Writes dir/out: dir/in with one split cut down by tests/conformance/cut_split.py (`how`: "--rows
// K" or "--one-step"), with h5py as a user's filter script would. False, the case reported
// skipped, without h5py and numpy.
bool cut_split(const test::TempDir& dir, const std::string& in, const std::string& out, const std::string& split,
               const std::string& how) {
  const test::ShellResult r = test::run_shell(dir, test::reload_python() + " '" + ATTN_TESTS_DIR +
                                                       "/conformance/cut_split.py' " + in + " " + out + " " + split +
                                                       " " + how);
  if (r.code == 77 || r.code == 127) {
    test::skip_test("cut_split.py needs " + test::reload_python() + " with h5py and numpy");
    return false;
  }
  INFO(r.err);
  REQUIRE(r.code == 0);
  return true;
}

}  // namespace

TEST_CASE("families: the registry lists every family folder, and every family has its parts", "[unit]") {
  std::set<std::string> registered, kinds;
  for (const families::Family& f : families::all()) {
    INFO("family " << f.name);
    CHECK(registered.insert(f.name).second);
    CHECK(fs::is_regular_file(kRoot / "lib/src/families" / f.name / "family.cpp"));
    CHECK(fs::is_directory(kRoot / "lib/include/attn/families" / f.name));
    CHECK(fs::is_regular_file(kRoot / "apps" / f.name / "sources.cmake"));
    CHECK(fs::is_regular_file(kRoot / "tests/families" / f.name / "tests.cmake"));
    CHECK(fs::is_regular_file(kRoot / "tests/families" / f.name / "recipe.txt"));
    CHECK(!f.summary.empty());
    CHECK(f.load_model != nullptr);
    REQUIRE(!f.model_kinds.empty());
    for (const std::string& kind : f.model_kinds) {
      CHECK(kinds.insert(kind).second);   // one family per kind
      CHECK(families::of_model_kind(kind) == &f);
    }
  }
  // A folder that is not in cmake/Families.cmake would build nothing and be tested by nothing.
  CHECK(folders(kRoot / "lib/src/families") == registered);
  CHECK(folders(kRoot / "lib/include/attn/families") == registered);
  CHECK(folders(kRoot / "tests/families") == registered);
  CHECK(families::of_model_kind("no-such-kind") == nullptr);
}

TEST_CASE("families: each trains from its recipe, resumes to the same bits, and its model file is read by its "
          "loader and attn-data info and refused by the other families' loaders",
          "[integration]") {
  for (const test::FamilyRecipe& recipe : test::family_recipes()) {
    INFO("family " << recipe.family);
    test::TempDir dir;
    if (!test::make_recipe_data(dir, recipe, "d.h5")) continue;
    // 4 steps with a checkpoint after 2, then steps 3 and 4 again from it: the tool's own
    // optimizer, dropout and data order must continue bit for bit.
    const std::string steps = "--steps 4 --checkpoint-every 2 --seed 5 --threads 1 --quiet";
    require_ok(test::run_shell(dir, test::recipe_train_command(recipe, "d.h5", "m.h5", steps)));
    require_ok(test::run_shell(
        dir, test::recipe_train_command(recipe, "d.h5", "r.h5", steps + " --resume m.step000000002.h5")));
    CHECK(test::same_params(dir.file("m.h5"), dir.file("r.h5")));
    // A model file given as the data set: refused before training, saying what it is.
    const test::ShellResult model_as_data = test::run_shell(dir,
                                                            test::recipe_train_command(recipe, "m.h5", "x.h5", steps));
    CHECK(model_as_data.code == 3);
    CHECK_THAT(model_as_data.err, Catch::Contains("m.h5: format is 'attnlab/model', expected 'attnlab/dataset'"));

    const families::Family& family = *families::of_model_kind(
        io::File::open_read(dir.file("m.h5")).attr_text("/", "kind"));
    CHECK(family.name == recipe.family);
    CHECK_NOTHROW(family.load_model(dir.file("m.h5")));
    const test::ShellResult info = test::run_tools(dir, "{data} info --data m.h5", {{"{data}", "attn-data"}});
    require_ok(info);
    CHECK_THAT(info.out,
               Catch::Contains("family         " + recipe.family + " (attn-" + recipe.family + "): reads it"));
    for (const families::Family& other : families::all()) {
      if (other.name == family.name) continue;
      INFO("read by the loader of " << other.name);
      try {
        other.load_model(dir.file("m.h5"));
        FAIL("another family's loader read the model file");
      } catch (const Error& e) {
        CHECK_THAT(std::string(e.what()), Catch::Contains("m.h5"));
      }
    }
  }
}

// Issue 51: an empty /train written by h5py crashed attn-ntm (SIGSEGV) while the other families
// refused it in the trainer without naming the file. Every family's split reader now refuses it,
// and the smallest splits that make sense train.
TEST_CASE("families: an empty /train is refused naming the file and dataset, one row, one step and an empty /valid "
          "train, an empty /test is not evaluated",
          "[integration]") {
  for (const test::FamilyRecipe& recipe : test::family_recipes()) {
    INFO("family " << recipe.family);
    test::TempDir dir;
    if (!test::make_recipe_data(dir, recipe, "d.h5")) continue;
    if (!cut_split(dir, "d.h5", "empty.h5", "train", "--rows 0")) return;
    const std::string steps = "--steps 2 --seed 5 --threads 1 --quiet";
    const test::ShellResult empty = test::run_shell(dir, test::recipe_train_command(recipe, "empty.h5", "e.h5", steps));
    INFO(empty.err);
    CHECK(empty.code == 3);
    CHECK_THAT(empty.err, Catch::Contains("empty.h5: dataset '/train/") &&
                              Catch::Contains("' has 0 rows; a training split needs at least 1"));
    CHECK(!fs::exists(dir.file("e.h5")));

    for (const auto& [file, split, how] :
         {std::tuple{"one_row.h5", "train", "--rows 1"}, std::tuple{"one_step.h5", "train", "--one-step"},
          std::tuple{"no_valid.h5", "valid", "--rows 0"}}) {
      INFO(file);
      REQUIRE(cut_split(dir, "d.h5", file, split, how));
      require_ok(test::run_shell(dir, test::recipe_train_command(recipe, file, "m.h5", steps)));
    }

    REQUIRE(cut_split(dir, "d.h5", "no_test.h5", "test", "--rows 0"));
    const test::ShellResult eval = test::run_tools(
        dir, "{tool} eval --data no_test.h5 --model m.h5 --split test --threads 1 --quiet",
        {{"{tool}", "attn-" + recipe.family}});
    INFO(eval.err);
    CHECK(eval.code == 3);
    CHECK_THAT(eval.err, Catch::Contains("no_test.h5: split '/test' holds no examples; there is nothing to evaluate"));
  }
}

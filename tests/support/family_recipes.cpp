#include "family_recipes.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attn/families/registry.hpp"

namespace attn::test {
namespace {

FamilyRecipe read_recipe(const std::string& family) {
  const std::filesystem::path path = std::filesystem::path(ATTN_TESTS_DIR) / "families" / family / "recipe.txt";
  std::ifstream in(path);
  INFO("the family '" << family << "' needs a conformance recipe, " << path.string() << " (tests/families/README.md)");
  REQUIRE(in.good());
  FamilyRecipe r;
  r.family = family;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(':');
    REQUIRE(colon != std::string::npos);
    const std::string key = line.substr(0, colon);
    const std::string value = line.substr(line.find_first_not_of(' ', colon + 1));
    if (key == "needs")
      r.needs = value;
    else if (key == "data")
      r.data = value;
    else if (key == "train")
      r.train = value;
    else if (key == "stateful")
      r.stateful = value;
    else
      FAIL(path.string() << ": unknown key '" << key << "'");
  }
  REQUIRE(!r.data.empty());
  REQUIRE(!r.train.empty());
  return r;
}

}  // namespace

std::vector<FamilyRecipe> family_recipes() {
  std::vector<FamilyRecipe> recipes;
  for (const families::Family& f : families::all()) recipes.push_back(read_recipe(f.name));
  REQUIRE(!recipes.empty());
  return recipes;
}

FamilyRecipe with_stateful_options(FamilyRecipe recipe) {
  auto words = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  };
  auto is_option = [](const std::string& word) { return word.starts_with("--"); };
  const std::vector<std::string> extra = words(recipe.stateful);
  std::string train;
  const std::vector<std::string> kept = words(recipe.train);
  for (size_t i = 0; i < kept.size();) {
    const bool replaced = is_option(kept[i]) && std::find(extra.begin(), extra.end(), kept[i]) != extra.end();
    if (!replaced) {
      train += (train.empty() ? "" : " ") + kept[i++];
      continue;
    }
    for (++i; i < kept.size() && !is_option(kept[i]);) ++i;   // its value words go with it
  }
  recipe.train = train + (train.empty() || recipe.stateful.empty() ? "" : " ") + recipe.stateful;
  return recipe;
}

bool make_recipe_data(const TempDir& dir, const FamilyRecipe& recipe, const std::string& file) {
  std::string data = recipe.data;
  if (!recipe.needs.empty()) {
    const std::filesystem::path shared = data_dir();
    if (shared.empty() || !std::filesystem::is_directory(shared / recipe.needs)) {
      skip_test("the " + recipe.family + " recipe needs the shared data folder '" + recipe.needs + "' (ATTN_DATA_DIR)");
      return false;
    }
    std::string quoted = "'";   // appended piecewise: GCC 12 sees a false overlap (-Wrestrict) in a + b + c
    quoted += shared.string();
    quoted += "'";
    for (size_t at = data.find("{shared}"); at != std::string::npos; at = data.find("{shared}"))
      data.replace(at, 8, quoted);
  }
  const ShellResult r = run_tools(dir, "{data} " + data + " --out " + file + " --quiet", {{"{data}", "attn-data"}});
  INFO(r.err);
  REQUIRE(r.code == 0);
  return true;
}

std::string recipe_train_command(const FamilyRecipe& recipe, const std::string& data, const std::string& model,
                                 const std::string& options) {
  return quoted_tool("attn-" + recipe.family) + " train --data " + data + " --model " + model + " " + recipe.train +
         " " + options;
}

}  // namespace attn::test

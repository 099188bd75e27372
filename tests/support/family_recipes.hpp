// The conformance recipes of the model families (tests/families/<family>/recipe.txt): a small
// data set and a small model of each family of the registry (attn/families/registry.hpp), which
// the tests that must cover every family build. A family added without a recipe fails them.
#pragma once
#include <string>
#include <vector>

#include "test_support.hpp"

namespace attn::test {

struct FamilyRecipe {
  std::string family;   // the registry's name: the tool is attn-<family>
  std::string needs;    // the shared data folder the data set is made from ("" none)
  std::string data;     // an attn-data verb and its options, without --out
  std::string train;    // options of `attn-<family> train` besides --data and --model
  // Options that give a run more to carry over on --resume than parameters, optimizer and data
  // order: draws from the trainer's random stream (dropout, noise, a random memory), a task's
  // state (a curriculum's level), start phases, buffers. They make a run that is no longer the
  // same bits under mpirun, so only the tests of resumption add them (with_stateful_options).
  std::string stateful;
};

// The recipe of every family of the registry, in its order. FAILs the test when one is missing
// or lacks its data or train line.
std::vector<FamilyRecipe> family_recipes();

// The recipe with its `stateful` options added to `train`, each replacing the option of the same
// name there (with the value words that follow it): "--dropout 0" gives way to "--dropout 0.1".
FamilyRecipe with_stateful_options(FamilyRecipe recipe);

// Writes the recipe's data set to dir/file: false, the case reported skipped, when the shared
// data it needs is absent; REQUIREs that attn-data succeeded.
bool make_recipe_data(const TempDir& dir, const FamilyRecipe& recipe, const std::string& file);

// The tool's command line that trains the recipe's model on dir/data into dir/model, with
// `options` appended (steps, optimizer, threads ...).
std::string recipe_train_command(const FamilyRecipe& recipe, const std::string& data, const std::string& model,
                                 const std::string& options);

}  // namespace attn::test

// Issue 51, item 7: resuming to the same bits after SIGKILL, for every family of the registry on
// its conformance recipe (tests/families/<family>/recipe.txt) with its stateful options (dropout,
// noise, a curriculum, start phases, buffers). test_families.cpp resumes from a checkpoint of a
// run that ended normally; here the run is killed by SIGKILL at whatever point it has reached
// after writing a checkpoint inside its second epoch (inside a step, a checkpoint's write, an
// epoch's validation), and the user's command is run again with --resume on the newest checkpoint
// left. Its final model must hold the uninterrupted run's bits (parameters, optimizer state,
// curves, state), and the kill must leave no damaged file behind.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "attn/families/registry.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/train/checkpoints.hpp"
#include "family_recipes.hpp"
#include "test_support.hpp"

using namespace attn;
namespace fs = std::filesystem;

namespace {

// The run killed and resumed: a checkpoint every 3 steps, fewer than any recipe's epoch has
// batches (4 and more), and 60 steps, so that the run crosses epoch ends and goes on for tens of
// steps and several checkpoint writes after the checkpoint it is killed at, while the test looks at
// the folder every 0.2 ms. It is killed once it has saved a checkpoint in its second epoch, so that
// the one resumed from holds a finished epoch (curves, a curriculum's level, a start phase ended)
// as well as a position inside an epoch.
constexpr int64_t kSteps = 60;
constexpr int64_t kEvery = 3;
constexpr const char* kOptions = "--steps 60 --checkpoint-every 3 --seed 5 --threads 1 --quiet";
// Attempts at killing the run inside an epoch, in case the machine delays the test's look at the
// folder for so long that the run has ended, or saved a checkpoint at an epoch's end, by the kill.
constexpr int kAttempts = 3;

void require_ok(const test::ShellResult& r) {
  INFO(r.err);
  REQUIRE(r.code == 0);
}

// Starts `command` (a shell command line) in `dir` without waiting for it, its output in
// dir/stdout.txt and dir/stderr.txt. The shell execs the command's program, so the pid returned is
// the program's own and a signal sent to it reaches the trainer, not a shell around it.
pid_t start_shell(const fs::path& dir, const std::string& command) {
  const std::string where = dir.string();
  const std::string script = "exec " + command + " >stdout.txt 2>stderr.txt";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {   // only async-signal-safe calls until exec
    if (::chdir(where.c_str()) != 0) ::_exit(127);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

// The periodic checkpoints of dir/m.h5 (m.step<9 digits>.h5), oldest first: the names sort in step
// order, which is how a user finds the newest.
std::vector<std::string> checkpoints(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("m.step") && name.ends_with(".h5")) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Temporary files of the atomic writes (.<name>.tmp.<pid>.<n>) left in dir.
std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp.") != std::string::npos) names.push_back(name);
  }
  return names;
}

int64_t step_of(const std::string& checkpoint) { return std::stoll(checkpoint.substr(6, 9)); }

// What happened to a run killed once a checkpoint of step `step` or later was in the folder.
enum class Kill { mid_run, too_late };

Kill kill_after_checkpoint(const fs::path& dir, const std::string& command, int64_t step) {
  const pid_t pid = start_shell(dir, command);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  auto saved = [&] {
    const std::vector<std::string> names = checkpoints(dir);
    return !names.empty() && step_of(names.back()) >= step;
  };
  int status = 0;
  bool exited = false;
  while (!saved()) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) break;   // killed below, then failed
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (!exited) {
    ::kill(pid, SIGKILL);
    REQUIRE(::waitpid(pid, &status, 0) == pid);
  }
  INFO("stderr of the run: " << test::slurp((dir / "stderr.txt").string()));
  REQUIRE(saved());
  if (WIFEXITED(status)) {   // it ended before the kill: its own verdict, then too late
    REQUIRE(WEXITSTATUS(status) == 0);
    return Kill::too_late;
  }
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
  return Kill::mid_run;
}

// What differs between two model files but the wall time spent training: the names of the
// datasets (parameters, optimizer state, learning curves, vocabularies, buffers) and /state
// attributes whose bits differ.
std::vector<std::string> differences(const std::string& a_path, const std::string& b_path) {
  const io::File a = io::File::open_read(a_path), b = io::File::open_read(b_path);
  const std::vector<std::string> names = a.list_datasets("/");
  REQUIRE(names == b.list_datasets("/"));
  std::vector<std::string> differ;
  for (const std::string& name : names) {
    const std::string dataset = "/" + name;
    if (dataset == "/metrics/train_seconds") continue;
    if (a.type_name(dataset) == "string") {
      if (a.read_strings(dataset) != b.read_strings(dataset)) differ.push_back(dataset);
      continue;
    }
    const Tensor x = a.read(dataset), y = b.read(dataset);
    if (x.shape() != y.shape() || std::memcmp(x.data(), y.data(), static_cast<size_t>(x.numel()) * 4) != 0)
      differ.push_back(dataset);
  }
  const std::vector<std::string> keys = a.attr_names("/state");
  REQUIRE(keys == b.attr_names("/state"));
  for (const std::string& key : keys)
    if (key != "train_seconds" && a.attr_text("/state", key) != b.attr_text("/state", key))
      differ.push_back("/state " + key);
  return differ;
}

}  // namespace

TEST_CASE("families: a run killed by SIGKILL mid-epoch resumes from its newest checkpoint to the bits of an "
          "uninterrupted run, leaving no temporary or damaged file",
          "[integration]") {
  for (const test::FamilyRecipe& plain : test::family_recipes()) {
    // Dropout, noise, a curriculum, start phases: all that a resumed run must pick up again.
    const test::FamilyRecipe recipe = test::with_stateful_options(plain);
    INFO("family " << recipe.family << ", trained with " << recipe.train);
    const auto named = [&](const families::Family& f) { return f.name == recipe.family; };
    const families::Family& family = *std::find_if(families::all().begin(), families::all().end(), named);
    test::TempDir dir;
    if (!test::make_recipe_data(dir, recipe, "d.h5")) continue;
    // The same command line, run in two folders: whole/ to the end, killed/ killed and resumed.
    const fs::path whole = dir.path() / "whole", killed = dir.path() / "killed";
    const std::string command = test::recipe_train_command(recipe, "../d.h5", "m.h5", kOptions);
    fs::create_directory(whole);
    require_ok(test::run_shell(dir, "cd whole && " + command));

    // Batches per epoch, from where the uninterrupted run ended: step = epoch * batches + epoch_batch.
    const io::File end = io::File::open_read((whole / "m.h5").string());
    const int64_t epochs = end.attr_int("/state", "epoch"), ended_at = end.attr_int("/state", "epoch_batch");
    REQUIRE(end.attr_int("/state", "step") == kSteps);
    REQUIRE(epochs >= 2);   // the run crosses epoch ends
    REQUIRE((kSteps - ended_at) % epochs == 0);
    const int64_t epoch_batches = (kSteps - ended_at) / epochs;
    INFO(epoch_batches << " batches per epoch");
    // The run is killed after the first checkpoint of its second epoch, and goes on well after it.
    REQUIRE(epoch_batches > kEvery);
    const int64_t kill_from = (epoch_batches / kEvery + 1) * kEvery;
    REQUIRE(kill_from + 5 * kEvery <= kSteps);

    std::string newest;
    for (int attempt = 1; newest.empty(); ++attempt) {
      INFO("attempt " << attempt);
      REQUIRE(attempt <= kAttempts);   // the run ended (or passed an epoch's end) before every kill
      fs::remove_all(killed);
      fs::create_directory(killed);
      if (kill_after_checkpoint(killed, command, kill_from) == Kill::too_late) continue;

      // What the kill left: no final model (or a whole one, the kill landing after its rename),
      // every checkpoint whole, at most the one temporary file of the write it interrupted.
      const bool model_written = fs::exists(killed / "m.h5");
      if (model_written) CHECK_NOTHROW(family.load_model((killed / "m.h5").string()));
      const std::vector<std::string> left = checkpoints(killed);
      for (const std::string& name : left) {
        INFO("checkpoint " << name);
        CHECK_NOTHROW(family.load_model((killed / name).string()));
      }
      CHECK(temp_files(killed).size() <= 1);
      if (model_written) continue;   // killed while finishing: not mid-run
      const io::File last = io::File::open_read((killed / left.back()).string());
      if (last.attr_int("/state", "epoch_batch") >= epoch_batches) continue;   // at an epoch's end
      // A user's --resume finds the same newest file.
      CHECK(fs::path(train::latest_checkpoint((killed / "m.h5").string())).filename() == left.back());
      newest = left.back();
    }

    INFO("resumed from " << newest);
    require_ok(test::run_shell(dir, "cd killed && " + command + " --resume " + newest));
    CHECK(test::same_params((whole / "m.h5").string(), (killed / "m.h5").string()));
    CHECK(differences((whole / "m.h5").string(), (killed / "m.h5").string()) == std::vector<std::string>{});
    // The resumed run rewrote the interrupted write's file, which removed its temporary file.
    CHECK(temp_files(killed).empty());
    CHECK(temp_files(whole).empty());
  }
}

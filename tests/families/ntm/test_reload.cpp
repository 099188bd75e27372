// NTM model files read without attnlab (docs/FORMATS.md, "Checking a reader"): the real tool
// trains each model a few steps on the copy task and runs it on the test split, and
// tests/formats/reload.py, which imports only h5py and numpy, rebuilds the model from the file's
// /config and /params with this family's module tests/families/ntm/reload.py and must reproduce
// what `attn-ntm run` wrote (outputs, every head's weighting, the cost in bits) to 1e-4, for every
// controller and memory init. Pairs of checkpoints one SGD step apart check the training
// conventions the page states: the step against the gradient of the objective (central
// differences in reload.py) under both clippings; the objective in bits and the norm clipped
// first must be noticed. The shared steps are in tests/support/reload_support.hpp; the cases are
// "formats: ..." in CTest.
#include <string>
#include <utility>

#include "reload_support.hpp"
#include "test_support.hpp"

using namespace attn;
using test::batch_file;
using test::check_broken;
using test::check_reload;
using test::model_file;
using test::step_file;

namespace {

// The copy task with 3 bits, sequences of 1 to 4 vectors: 8 training sequences, one batch of a
// step (--batch-size 8 --epoch-size 8), so that a step's gradient is the whole split's.
const char* kNtmData =
    "{data} copy --width 3 --min-len 1 --max-len 4 --n 8 --valid-n 4 --test-n 6 --seed 3 --quiet --out ntm.data.h5";
const char* kNtmSteps = " --batch-size 8 --epoch-size 8 --seed 2 --threads 1 --quiet";

// Runs attn-ntm `verb_and_options` in the dir, ntm.data.h5 made first unless there.
void ntm_tool(const test::TempDir& dir, const std::string& verb_and_options) {
  std::string line = "{ test -f ntm.data.h5 || ";   // appended piecewise (GCC 12, -Wrestrict)
  line += kNtmData;
  line += "; } && {ntm} ";
  line += verb_and_options;
  const test::ShellResult r = test::run_tools(dir, line, {{"{data}", "attn-data"}, {"{ntm}", "attn-ntm"}});
  INFO(line << "\n" << r.err);
  REQUIRE(r.code == 0);
}

// Trains an NTM with `options` (three Adam steps at 0.01, so that every weight moves), then runs
// it on the test split in batches of `run_batch` sequences: the run file is the case's batch
// file (its outputs, weightings and cost are what reload.py reproduces).
void ntm_case(const test::TempDir& dir, const std::string& name, const std::string& options, int run_batch = 4) {
  ntm_tool(dir, "train --data ntm.data.h5 --model " + model_file(name) + " " + options +
                    " --optimizer adam --lr 0.01 --steps 3" + kNtmSteps);
  ntm_tool(dir, "run --model " + model_file(name) + " --data ntm.data.h5 --split test --batch-size " +
                    std::to_string(run_batch) + " --out " + batch_file(name) + " --threads 1 --quiet");
}

}  // namespace

TEST_CASE("formats: numpy reloads NTMs (LSTM and feed-forward controllers, several heads, every memory init) and "
          "reproduces attn-ntm run",
          "[integration][formats]") {
  test::TempDir dir;
  ntm_case(dir, "ntm_lstm",
           "--controller lstm --controller-layers 2 --controller-size 5 --memory 6,4 --read-heads 2 "
           "--write-heads 2 --memory-init constant");
  ntm_case(dir, "ntm_ff",
           "--controller ff --controller-layers 2 --controller-size 5 --memory 7,3 --read-heads 1 "
           "--write-heads 2 --shift-range 2 --memory-init learned");
  // random: the 6 test sequences run in batches of 4 and 2, each batch from the stream's start, so
  // that a sequence's M_0 depends on its place in its batch (FORMATS.md); 160 values a batch, of
  // which some lie outside [-1, 1] and are drawn again.
  ntm_case(dir, "ntm_random",
           "--controller lstm --controller-size 4 --memory 8,5 --read-heads 2 --write-heads 1 "
           "--memory-init random",
           4);
  ntm_case(dir, "ntm_baseline", "--baseline lstm --baseline-layers 2 --controller-size 4 --memory 6,4");
  const std::string report = check_reload(dir, {"ntm_lstm", "ntm_ff", "ntm_random", "ntm_baseline"});
  if (report.empty()) return;
  CHECK(report.find("memory_init random, M_0 drawn in batches of 4") != std::string::npos);
  CHECK(report.find("(0 values drawn again)") == std::string::npos);
}

TEST_CASE("formats: an NTM's SGD step is the documented objective's gradient, clipped by value, then by norm",
          "[integration][formats]") {
  test::TempDir dir;
  const std::string model = "--controller lstm --controller-size 4 --memory 5,3 --read-heads 1 --write-heads 2 "
                            "--memory-init learned";
  // Two plain SGD steps at rate 1 (each over the whole training split), then a third, resumed,
  // with clipping to [-0.01, 0.01] and then to norm 0.02, both below the gradient's.
  ntm_tool(dir, "train --data ntm.data.h5 --model ntm_sgd.model.h5 " + model +
                    " --optimizer sgd --lr 1 --clip-value 0 --steps 2 --checkpoint-every 1" + kNtmSteps);
  ntm_tool(dir, "train --data ntm.data.h5 --model ntm_clip.model.h5 --resume ntm_sgd.model.h5 --optimizer sgd --lr 1 "
                "--clip-value 0.01 --clip 0.02 --steps 3" +
                    std::string(kNtmSteps));
  const std::pair<std::string, std::string> plain{step_file("ntm_sgd", 1), "ntm_sgd.model.h5"};
  const std::pair<std::string, std::string> clipped{"ntm_sgd.model.h5", "ntm_clip.model.h5"};
  const std::string report = check_reload(dir, {plain, clipped});
  if (report.empty()) return;
  CHECK(report.find("no clipping") != std::string::npos);      // the first step
  CHECK(report.find("scaled to 0.02") != std::string::npos);   // the clipped step: both rules acted
  CHECK(report.find(" 0 entries clamped") == std::string::npos);
  check_broken(dir, plain, "ntm-loss-bits");       // the objective in bits, not nats
  check_broken(dir, clipped, "clip-norm-first");   // the norm clipped before the values
}

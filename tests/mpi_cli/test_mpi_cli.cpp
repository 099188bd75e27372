// Data-parallel training as a user runs it: `mpirun -np 2 attn-<tool> train ...` against the same
// command in one process. Two ranks must give one process's parameters on the same global batches
// (to kTolerance: the shards' sums are associated differently), two 2-rank runs the same bits,
// a checkpoint must resume with another number of ranks, and a rank that is killed or hangs must
// end the job with a non-zero exit status within a bounded time. Ranks started differently (MPMD:
// `mpirun -np 1 A : -np 1 B`) must stop at start-up, naming the rank, the option or file and both
// values (train/rank_agreement.hpp).
//
// The comparisons train with SGD, whose update is the gradient times the rate, so a parameter
// difference is the gradients' round-off itself. Adam and RMSProp divide by the gradient's running
// size: a parameter whose gradient is zero in exact arithmetic but ~1e-10 of round-off in practice
// (an attention key bias: adding q.b_k to every score of a row leaves the softmax unchanged) moves
// by +-lr on the noise's sign in one process as well, so there the two runs legitimately differ by
// the rate; the Adam case below leaves the key biases out.
//
// mpirun runs as root in CI containers only with Open MPI's two consent variables; they are set
// here, on the test's own command lines, never in the user's environment or docs. --oversubscribe
// and --bind-to none let two such tests share the machine's cores under ctest -j2. Every case is
// reported skipped by a build without MPI or on a machine without mpirun.
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "attn/dist/world.hpp"
#include "attn/families/registry.hpp"
#include "attn/io/checkpoint.hpp"
#include "attn/io/hdf5_file.hpp"
#include "family_recipes.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

using Result = test::ShellResult;

// Bound on the largest difference between 2 ranks' and one process's parameters after the runs
// below, as |a - b| / (1 + |b|). Measured (README "Training on several machines"): at most 1e-9
// with SGD, 1.1e-7 with Adam on the parameters it does not amplify noise in; the bound keeps an
// order of magnitude of margin over the latter.
constexpr double kTolerance = 1e-6;

// Under the sanitizers (make test-asan), LeakSanitizer needs whole stacks to match the Open MPI
// suppressions of tests/support/lsan.supp: MPI's allocations are made through components it has
// unloaded by exit, which the fast unwinder cannot walk past.
const char* kMpirun = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                      "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0 "
                      "mpirun --oversubscribe --bind-to none";

// Whether 2-rank jobs can run here; reports the case skipped when not.
bool mpi_ready() {
  if (!dist::built_with_mpi()) {
    test::skip_test("this build has no MPI (cmake -DATTN_MPI=OFF, or Open MPI not installed)");
    return false;
  }
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) {
    test::skip_test("mpirun is not installed (Debian: openmpi-bin)");
    return false;
  }
  return true;
}

// "{np2}" is mpirun -np 2, "{np1}" mpirun -np 1; {data}, {<family>} (every family of the registry) and
// {tf}, {s2s}, {ntm}, {cap}, {mem} the tools.
Result run(const test::TempDir& dir, std::string command) {
  for (const auto& [key, n] : {std::pair{"{np2}", "2"}, std::pair{"{np1}", "1"}})
    for (size_t at = command.find(key); at != std::string::npos; at = command.find(key))
      command.replace(at, 5, std::string(kMpirun) + " -np " + n);
  std::vector<std::pair<std::string, std::string>> tools = {{"{data}", "attn-data"},   {"{tf}", "attn-transformer"},
                                                            {"{s2s}", "attn-seq2seq"}, {"{ntm}", "attn-ntm"},
                                                            {"{cap}", "attn-caption"}, {"{mem}", "attn-memnet"}};
  for (const families::Family& f : families::all()) tools.emplace_back("{" + f.name + "}", f.tool());
  return test::run_tools(dir, command, tools);
}

void require_ok(const Result& r) {
  INFO(r.err);
  REQUIRE(r.code == 0);
}

// max over every parameter element of |a - b| / (1 + |b|); infinity when the names differ.
// Parameters whose name ends with `skip` (when given) are left out.
double param_difference(const std::string& a_path, const std::string& b_path, const std::string& skip = "") {
  const io::Checkpoint a = io::load_checkpoint(a_path), b = io::load_checkpoint(b_path);
  if (a.params.size() != b.params.size()) return INFINITY;
  double worst = 0;
  for (const auto& [name, x] : a.params) {
    if (!skip.empty() && name.ends_with(skip)) continue;
    const auto it = b.params.find(name);
    if (it == b.params.end() || it->second.shape() != x.shape()) return INFINITY;
    for (int64_t i = 0; i < x.numel(); ++i)
      worst = std::max(worst, std::abs(double(x.at(i)) - it->second.at(i)) / (1.0 + std::abs(double(it->second.at(i)))));
  }
  return worst;
}

// 2 ranks and one process, the same command: the parameters agree to kTolerance.
void check_two_ranks_match_one(const test::TempDir& dir, const std::string& tool, const std::string& train,
                               const std::string& skip = "") {
  require_ok(run(dir, "{np2} " + tool + " train --model two.h5 " + train));
  require_ok(run(dir, tool + " train --model one.h5 " + train));
  const double d = param_difference(dir.file("two.h5"), dir.file("one.h5"), skip);
  WARN(tool << ": 2 ranks against 1 process, largest parameter difference " << d
             << (skip.empty() ? "" : " (but *" + skip + ")"));
  CHECK(d > 0);            // a difference of round-off only: different sums, so not the same bits...
  CHECK(d < kTolerance);   // ...yet the same training
}

const char* kReverse = "{data} reverse --vocab 10 --min-len 2 --max-len 6 --n 200 --valid-n 20 --test-n 20 --seed 3 "
                       "--out d.h5 --quiet";
// A tiny Transformer (on d.h5) and its SGD run without dropout (N ranks draw other dropout masks
// than one process).
const std::string kTfModel = "--d-model 16 --heads 2 --d-ff 32 --layers 1 --max-tokens 128 --seed 2 --threads 1 --quiet";
const std::string kTf = "--data d.h5 " + kTfModel + " --optimizer sgd --lr 0.1 --dropout 0";
// The tool's default optimizer (Adam with warm-up) with dropout.
const std::string kTfAdam = "--data d.h5 " + kTfModel + " --warmup 4 --lr 0.01 --dropout 0.1";
// SGD, for the families' conformance recipes and other cases.
const std::string kSgd = " --optimizer sgd --lr 0.1 --seed 2 --threads 1 --quiet";

// `from` copied to `to` (datasets, and the attributes of the root, /config and the datasets'
// groups) with the first element of row `row` of the float dataset `path` set to NaN.
void copy_with_nan(const std::string& from, const std::string& to, const std::string& path, int64_t row) {
  const io::File in = io::File::open_read(from);
  io::File out = io::File::create(to);
  auto copy_attrs = [&](const std::string& object) {
    for (const std::string& key : in.attr_names(object)) out.set_attr(object, key, in.attr(object, key));
  };
  copy_attrs("/");
  if (in.exists("/config")) copy_attrs("/config");
  for (const std::string& rel : in.list_datasets("/")) {
    const std::string dataset = "/" + rel;
    Tensor t = in.read(dataset);
    if (dataset == path) {
      t = t.clone();
      t.data()[row * (t.numel() / t.dim(0))] = NAN;
    }
    out.write(dataset, t);
    copy_attrs(dataset.substr(0, dataset.rfind('/')));
  }
  out.commit();
}

}  // namespace

TEST_CASE("mpirun -np 2: a Transformer trains to one process's parameters on the same batches", "[integration][mpi]") {
  if (!mpi_ready()) return;
  test::TempDir dir;
  require_ok(run(dir, kReverse));
  // SGD: the registry's case below. Adam: the same but for the key biases (see the top of the file).
  check_two_ranks_match_one(dir, "{tf}", "--data d.h5 " + kTfModel + " --warmup 4 --lr 0.01 --dropout 0 --steps 8", "b_k");
  // Rank 0 alone speaks: one summary line, which gives the global rate and the exchange.
  const Result two = run(dir, "{np2} {tf} train --model two.h5 " + kTf + " --steps 2");
  require_ok(two);
  CHECK_THAT(two.out, Contains("2 steps") && Contains("2 ranks, exchange"));
  CHECK(two.out.find("2 steps") == two.out.rfind("2 steps"));
  CHECK(io::File::open_read(dir.file("two.h5")).attr_int("/state", "step") == 2);
}

TEST_CASE("mpirun -np 2: two runs give the same bits, dropout included", "[integration][mpi]") {
  if (!mpi_ready()) return;
  test::TempDir dir;
  require_ok(run(dir, kReverse));
  const std::string train = kTfAdam + " --steps 6";
  require_ok(run(dir, "{np2} {tf} train --model a.h5 " + train));
  require_ok(run(dir, "{np2} {tf} train --model b.h5 " + train));
  CHECK(test::same_params(dir.file("a.h5"), dir.file("b.h5")));
  // mpirun with one rank is the single process, bit for bit.
  require_ok(run(dir, "{np1} {tf} train --model c.h5 " + train));
  require_ok(run(dir, "{tf} train --model e.h5 " + train));
  CHECK(test::same_params(dir.file("c.h5"), dir.file("e.h5")));
}

TEST_CASE("mpirun: a checkpoint resumes with another number of ranks", "[integration][mpi]") {
  if (!mpi_ready()) return;
  test::TempDir dir;
  require_ok(run(dir, kReverse));
  const std::string train = kTf + " --steps 8 --checkpoint-every 4";
  require_ok(run(dir, "{np2} {tf} train --model two.h5 " + train));
  require_ok(run(dir, "{tf} train --model one.h5 " + train));
  // 2 -> 1 and 1 -> 2: each continues to the uninterrupted run's parameters, to round-off.
  require_ok(run(dir, "{tf} train --model from2.h5 --resume two.step000000004.h5 " + train));
  require_ok(run(dir, "{np2} {tf} train --model from1.h5 --resume one.step000000004.h5 " + train));
  CHECK(param_difference(dir.file("from2.h5"), dir.file("two.h5")) < kTolerance);
  CHECK(param_difference(dir.file("from1.h5"), dir.file("one.h5")) < kTolerance);
  CHECK(io::File::open_read(dir.file("from1.h5")).attr_int("/state", "step") == 8);
  // 2 -> 2, dropout on: the same bits as the uninterrupted 2-rank run.
  const std::string noisy = kTfAdam + " --steps 8 --checkpoint-every 4";
  require_ok(run(dir, "{np2} {tf} train --model n.h5 " + noisy));
  require_ok(run(dir, "{np2} {tf} train --model n2.h5 --resume n.step000000004.h5 " + noisy));
  CHECK(test::same_params(dir.file("n.h5"), dir.file("n2.h5")));
}

TEST_CASE("mpirun -np 2: every family trains to one process's parameters", "[integration][mpi]") {
  if (!mpi_ready()) return;
  // Each family of the registry on its conformance recipe (tests/families/<family>/recipe.txt).
  for (const test::FamilyRecipe& recipe : test::family_recipes()) {
    INFO("family " << recipe.family);
    test::TempDir dir;
    if (!test::make_recipe_data(dir, recipe, "d.h5")) continue;
    check_two_ranks_match_one(dir, "{" + recipe.family + "}", "--data d.h5 " + recipe.train + " --steps 6" + kSgd);
  }
}

TEST_CASE("mpirun -np 2 --keep-data file: the ranks share the checks of the rows, and a bad row ends the job",
          "[integration][mpi]") {
  if (!mpi_ready()) return;
  test::TempDir dir;
  require_ok(run(dir, "{data} copy --width 4 --min-len 1 --max-len 4 --n 300 --valid-n 20 --test-n 20 --seed 3 "
                      "--out c.h5 --quiet"));
  // A NaN in row 290 of 300: in rank 1's share (rows 150-299), so rank 1 finds it and its error
  // ends the job; the message names the file's row, and no model is written.
  copy_with_nan(dir.file("c.h5"), dir.file("bad.h5"), "/train/inputs", 290);
  const std::string model = " --model m.h5 --controller-size 16 --memory 16,6 --steps 2 --keep-data file" + kSgd;
  const Result one = run(dir, "{ntm} train --data bad.h5" + model);
  CHECK(one.code == 3);
  CHECK_THAT(one.err, Contains("bad.h5") && Contains("row 290"));
  const Result two = run(dir, "{np2} {ntm} train --data bad.h5" + model);
  CHECK(two.code == 3);
  CHECK_THAT(two.err, Contains("bad.h5") && Contains("row 290"));
  CHECK_FALSE(std::filesystem::exists(dir.file("m.h5")));
  require_ok(run(dir, "{np2} {ntm} train --data c.h5" + model));
}

TEST_CASE("mpirun -np 2 --keep-data file: each rank reads its shard's rows from the file, to the bits of rows in memory",
          "[integration][mpi]") {
  if (!mpi_ready()) return;
  test::TempDir dir;
  require_ok(run(dir, kReverse));
  // Every family, 2 ranks: the data kept in the file (read a batch's rows at a time) against the
  // data read whole into memory; then one process the same way.
  auto same_either_way = [&](const std::string& tool, const std::string& train) {
    for (const char* np : {"{np2} ", ""}) {
      require_ok(run(dir, std::string(np) + tool + " train --model in_file.h5 --keep-data file " + train));
      require_ok(run(dir, std::string(np) + tool + " train --model in_memory.h5 --keep-data memory " + train));
      CHECK(test::same_params(dir.file("in_file.h5"), dir.file("in_memory.h5")));
    }
  };
  SECTION("transformer, Adam with dropout") { same_either_way("{tf}", kTfAdam + " --steps 4"); }
  SECTION("transformer, masked LM") { same_either_way("{tf}", kTfAdam + " --arch mlm --steps 4"); }
  SECTION("every family of the registry, on its conformance recipe") {
    for (const test::FamilyRecipe& recipe : test::family_recipes()) {
      INFO("family " << recipe.family);
      if (!test::make_recipe_data(dir, recipe, recipe.family + ".h5")) continue;
      same_either_way("{" + recipe.family + "}",
                      "--data " + recipe.family + ".h5 " + recipe.train + " --steps 4" + kSgd);
    }
  }
}

namespace {

// Whether every dataset of `a` except the root's attributes holds the same bits in `b`.
bool same_datasets(const std::string& a_path, const std::string& b_path) {
  const io::File a = io::File::open_read(a_path), b = io::File::open_read(b_path);
  const std::vector<std::string> names = a.list_datasets("/");
  if (names != b.list_datasets("/") || names.empty()) return false;
  for (const std::string& name : names) {
    const std::string path = "/" + name;
    if (a.type_name(path) == "string") {
      if (a.read_strings(path) != b.read_strings(path)) return false;
      continue;
    }
    const Tensor x = a.read(path), y = b.read(path);
    if (x.shape() != y.shape() || x.dtype() != y.dtype()) return false;
    for (int64_t i = 0; i < x.numel(); ++i)
      if (x.dtype() == DType::i32 ? x.idata()[i] != y.idata()[i]
                                  : std::memcmp(x.data() + i, y.data() + i, sizeof(float)) != 0)
        return false;
  }
  return true;
}

// `verb` on 2 ranks and on one process: the same summary line, and the same output file.
void check_verb_on_two_ranks(const test::TempDir& dir, const std::string& tool, const std::string& verb,
                             const std::string& args, bool writes) {
  const std::string out2 = writes ? " --out two.h5" : "", out1 = writes ? " --out one.h5" : "";
  const Result two = run(dir, "{np2} " + tool + " " + verb + " " + args + out2);
  const Result one = run(dir, tool + " " + verb + " " + args + out1);
  require_ok(two);
  require_ok(one);
  INFO(tool << " " << verb << ": " << one.out);
  CHECK(!one.out.empty());
  std::string summary_two = two.out, summary_one = one.out;   // the same but for the file named
  for (auto* s : {&summary_two, &summary_one})
    for (const char* file : {"two.h5", "one.h5"})
      if (const size_t at = s->find(file); at != std::string::npos) s->replace(at, 6, "OUT");
  CHECK(summary_two == summary_one);
  if (writes) CHECK(same_datasets(dir.file("two.h5"), dir.file("one.h5")));
}

}  // namespace

TEST_CASE("mpirun -np 2: eval, translate and the run verbs share out the batches and give one process's results",
          "[integration][mpi]") {
  if (!mpi_ready()) return;
  test::TempDir dir;
  require_ok(run(dir, kReverse));
  require_ok(run(dir, "{tf} train --model m.h5 " + kTf + " --steps 4"));
  // 20 test pairs in batches of at most 32 tokens: several batches, odd ones on rank 1.
  check_verb_on_two_ranks(dir, "{tf}", "eval", "--model m.h5 --data d.h5 --max-tokens 32 --threads 1", false);
  check_verb_on_two_ranks(dir, "{tf}", "translate", "--model m.h5 --data d.h5 --max-tokens 32 --threads 1", true);
  check_verb_on_two_ranks(dir, "{tf}", "translate", "--model m.h5 --data d.h5 --max-tokens 32 --beam 3 --threads 1",
                          true);
  require_ok(run(dir, "{s2s} train --model s.h5 --data d.h5 --embed-dim 8 --hidden 8 --max-tokens 128 --steps 2" + kSgd));
  check_verb_on_two_ranks(dir, "{s2s}", "eval", "--model s.h5 --data d.h5 --max-tokens 32 --threads 1", false);
  require_ok(run(dir, "{data} copy --width 4 --min-len 1 --max-len 4 --n 100 --valid-n 10 --test-n 15 --seed 3 "
                      "--out c.h5 --quiet"));
  require_ok(run(dir, "{ntm} train --model n.h5 --data c.h5 --controller-size 16 --memory 16,6 --epoch-size 40 "
                      "--batch-size 4 --steps 2" + kSgd));
  check_verb_on_two_ranks(dir, "{ntm}", "eval", "--model n.h5 --data c.h5 --batch-size 4 --threads 1", false);
  check_verb_on_two_ranks(dir, "{ntm}", "run", "--model n.h5 --data c.h5 --batch-size 4 --threads 1", true);
  require_ok(run(dir, "{data} shapes --n 32 --valid-n 8 --test-n 12 --out s.h5 --quiet"));
  require_ok(run(dir, "{cap} train --model cap.h5 --data s.h5 --encoder conv4x3,pool4 --embed-dim 8 --hidden 8 "
                      "--attention-dim 8 --batch-size 16 --steps 2" + kSgd));
  check_verb_on_two_ranks(dir, "{cap}", "eval", "--model cap.h5 --data s.h5 --batch-size 5 --threads 1", false);
  check_verb_on_two_ranks(dir, "{cap}", "caption", "--model cap.h5 --data s.h5 --batch-size 5 --threads 1", true);
  // --repeats scores every run on the test split after training: all ranks take part (a rank 0
  // alone would wait for the others until --rank-timeout).
  const Result repeats = run(dir, "{np2} {cap} train --model r.h5 --data s.h5 --encoder conv4x3,pool4 --embed-dim 8 "
                                  "--hidden 8 --attention-dim 8 --batch-size 16 --steps 2 --repeats 2 --rank-timeout 30" +
                                      kSgd);
  require_ok(repeats);
  CHECK(std::filesystem::exists(dir.file("r.repeats.h5")));
}

TEST_CASE("mpirun -np 2: verbs that run as one process, and --data -, are usage errors", "[integration][mpi]") {
  if (!mpi_ready()) return;
  test::TempDir dir;
  require_ok(run(dir, kReverse));
  require_ok(run(dir, "{tf} train --model m.h5 " + kTf + " --steps 1"));
  const Result average = run(dir, "{np2} {tf} average --inputs m.h5 m.h5 --out a.h5 --quiet");
  CHECK(average.code == 2);
  CHECK_THAT(average.err, Contains("attn-transformer average runs as one process") && Contains("mpirun -np 2"));
  CHECK(!std::filesystem::exists(dir.file("a.h5")));
  const Result piped = run(dir, "cat d.h5 | {np2} {tf} train --model p.h5 --data - " + kTfModel + " --steps 1");
  CHECK(piped.code == 2);
  CHECK_THAT(piped.err, Contains("only rank 0 has standard input"));
}

namespace {

// Starts a long 2-rank training in the background, waits until it has written a checkpoint (any
// step: at hundreds of steps a second, step 20's file may be rotated away between two looks),
// sends `signal` to rank `victim` (the child of mpirun whose OMPI_COMM_WORLD_RANK it is), and
// waits for mpirun; prints "checkpointed=<0|1> rc=<status>". A watchdog kills mpirun after 120 s
// (and leaves the file watchdog-fired), so the test cannot hang even if the job would.
std::string signal_a_rank(const std::string& signal, const std::string& extra, int victim = 1) {
  return std::string(kMpirun) + " -np 2 {tf} train --model $PWD/m.h5 " + kTf + extra +
         " --steps 1000000 --checkpoint-every 20 & mp=$!; "
         "( sleep 120; touch watchdog-fired; kill -KILL $mp ) 2>/dev/null & dog=$!; "
         "saved=0; for i in $(seq 600); do ls m.step*.h5 >/dev/null 2>&1 && saved=1 && break; sleep 0.1; done; "
         "victim=; for p in $(ps -o pid= --ppid $mp); do "
         "tr '\\0' '\\n' < /proc/$p/environ | grep -qx OMPI_COMM_WORLD_RANK=" +
         std::to_string(victim) + " && victim=$p; done; kill -" + signal +
         " $victim; "
         "wait $mp; rc=$?; kill $dog 2>/dev/null; kill -KILL $victim 2>/dev/null; "
         "echo \"checkpointed=$saved rc=$rc\"";
}

int field(const std::string& out, const std::string& key) {
  const size_t at = out.find(key + "=");
  return at == std::string::npos ? -1 : std::atoi(out.c_str() + at + key.size() + 1);
}

}  // namespace

TEST_CASE("mpirun -np 2: a killed rank ends the job with a non-zero status, the checkpoint intact",
          "[integration][mpi]") {
  if (!mpi_ready()) return;
  test::TempDir dir;
  require_ok(run(dir, kReverse));
  const Result r = run(dir, signal_a_rank("KILL", ""));
  INFO(r.out << r.err);
  REQUIRE(field(r.out, "checkpointed") == 1);
  CHECK(field(r.out, "rc") > 0);          // 137: mpirun reports the rank's SIGKILL as 128 + 9
  CHECK(!std::filesystem::exists(dir.file("watchdog-fired")));   // mpirun ended the job itself
  // Every checkpoint left loads (rank 0 may have written and rotated several past step 20 before
  // the kill landed).
  int64_t checkpoints = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("m.step") || !name.ends_with(".h5")) continue;
    INFO(name);
    CHECK(io::load_checkpoint(entry.path().string()).step == std::stoll(name.substr(6, 9)));
    ++checkpoints;
  }
  CHECK(checkpoints >= 1);
}

// Issue 51: the message named the stalled and the waiting rank the wrong way round. It is printed
// by the waiting rank (rank 1's line under the prefix "rank 1 of 2:"), so it names the stalled rank
// as its subject and the printing rank as the one that waited; the stalled rank says nothing.
TEST_CASE("mpirun -np 2: a hung rank makes the others stop after --rank-timeout, named as the stalled one",
          "[integration][mpi]") {
  if (!mpi_ready()) return;
  for (const int victim : {1, 0}) {
    INFO("rank " << victim << " stopped");
    test::TempDir dir;
    require_ok(run(dir, kReverse));
    const Result r = run(dir, signal_a_rank("STOP", " --rank-timeout 3", victim));
    INFO(r.out << r.err);
    REQUIRE(field(r.out, "checkpointed") == 1);
    CHECK(field(r.out, "rc") == 1);   // the waiting rank's runtime failure, through MPI_Abort
    CHECK(!std::filesystem::exists(dir.file("watchdog-fired")));
    const std::string stalled = std::to_string(victim), waiting = std::to_string(1 - victim);
    CHECK_THAT(r.err, Contains("dist: rank " + stalled +
                               " of 2 stalled (it died or hung, or is busy for longer than "
                               "--rank-timeout): rank " +
                               waiting +
                               ", the waiting rank, had no answer from it for 3 s; "
                               "stopping the job"));
    CHECK_THAT(r.err, !Contains("rank " + waiting + " of 2 stalled") && !Contains("rank " + stalled + ", the waiting"));
  }
}

namespace {

// `mpirun -np 1 A : -np 1 B` (MPMD: rank 0 runs A, rank 1 runs B), timed. Each side is a tool
// placeholder and its arguments ("{tf} train ..."); `wdir_a`/`wdir_b`, when given, are the ranks'
// working folders (mpirun --wdir), which stand for two machines' file systems.
struct Timed {
  Result result;
  double seconds = 0;
};
Timed run_mpmd(const test::TempDir& dir, const std::string& a, const std::string& b, const std::string& wdir_a = "",
               const std::string& wdir_b = "") {
  auto wdir = [](const std::string& w) { return w.empty() ? std::string() : " --wdir " + w; };
  const auto t0 = std::chrono::steady_clock::now();
  Result r = run(dir, "{np1}" + wdir(wdir_a) + " " + a + " : -np 1" + wdir(wdir_b) + " " + b);
  return {std::move(r), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
}

// The job stopped at start-up, with `code` and a message holding `what`, within seconds (not after
// training, nor after --rank-timeout, which is 120 here), and wrote no model.
void check_refused(const test::TempDir& dir, const Timed& t, int code, const std::string& what) {
  INFO(t.result.out << t.result.err);
  CHECK(t.result.code == code);
  CHECK_THAT(t.result.err, Contains(what));
  CHECK(t.seconds < 60);
  CHECK_FALSE(std::filesystem::exists(dir.file("m.h5")));
}

// The Transformer of kTf without the options the cases vary (--model, --lr, --steps, --max-tokens),
// and a --rank-timeout long enough that a job that did not stop at start-up would show in the time.
const std::string kTfBase = "--d-model 16 --heads 2 --d-ff 32 --layers 1 --seed 2 --threads 1 --quiet "
                            "--optimizer sgd --dropout 0 --rank-timeout 120";

}  // namespace

// Issue 51: ranks on different files of the same shape trained on a silent mix of both, exit 0.
TEST_CASE("mpirun MPMD: ranks on different data stop at start-up naming both files (exit 3)", "[integration][mpi]") {
  if (!mpi_ready()) return;
  test::TempDir dir;
  require_ok(run(dir, kReverse));
  std::string other = kReverse;   // the same shape, another seed
  other.replace(other.find("--seed 3 --out d.h5"), 19, "--seed 4 --out e.h5");
  require_ok(run(dir, other));
  const std::string train = kTfBase + " --lr 0.1 --max-tokens 128 --steps 4", model = " --model m.h5";
  check_refused(dir,
                run_mpmd(dir, "{tf} train --data d.h5 " + train + model, "{tf} train --data e.h5 " + train + model), 3,
                "rank 1: the training data is 'e.h5' (train fingerprint ");
  check_refused(dir,
                run_mpmd(dir, "{tf} train --data d.h5 " + train + model, "{tf} train --data e.h5 " + train + model), 3,
                "), rank 0's is 'd.h5' (train fingerprint ");
  // One path, other contents (a file system that differs between the machines).
  for (const auto& [host, file] : {std::pair{"host_a", "d.h5"}, std::pair{"host_b", "e.h5"}}) {
    std::filesystem::create_directory(dir.file(host));
    std::filesystem::copy_file(dir.file(file), dir.file(std::string(host) + "/data.h5"));
  }
  const std::string in_dir = " --model " + dir.file("m.h5");
  check_refused(dir,
                run_mpmd(dir, "{tf} train --data data.h5 " + train + in_dir,
                         "{tf} train --data data.h5 " + train + in_dir, "host_a", "host_b"),
                3, "rank 1: the training data is 'data.h5' (train fingerprint ");
  check_refused(dir,
                run_mpmd(dir, "{tf} train --data data.h5 " + train + in_dir,
                         "{tf} train --data data.h5 " + train + in_dir, "host_a", "host_b"),
                3, "the same name, other contents (does the file differ between the machines?)");
  // What may differ: the data's name (the same bits), the model file, threads and the timeout.
  std::filesystem::copy_file(dir.file("d.h5"), dir.file("copy.h5"));
  std::string local = train;
  local.replace(local.find("--threads 1"), 11, "--threads 2 --fixed-threads");
  local.replace(local.find("--rank-timeout 120"), 18, "--rank-timeout 30");
  const Timed alike = run_mpmd(dir, "{tf} train --data d.h5 " + train + model,
                               "{tf} train --data copy.h5 --model elsewhere.h5 " + local);
  require_ok(alike.result);
  CHECK_THAT(alike.result.out, Contains("4 steps") && Contains("2 ranks"));
  CHECK(std::filesystem::exists(dir.file("m.h5")));
  CHECK_FALSE(std::filesystem::exists(dir.file("elsewhere.h5")));   // rank 0 writes
}

// Issue 51: --lr was caught only after all of training ("parameters differ"), --steps and the
// batch size only by --rank-timeout, --controller-size as "parameters differ after initialisation".
TEST_CASE("mpirun MPMD: ranks started with other options stop at start-up naming the option and both values (exit 2)",
          "[integration][mpi]") {
  if (!mpi_ready()) return;
  test::TempDir dir;
  require_ok(run(dir, kReverse));
  const std::string tf = "{tf} train --data d.h5 --model m.h5 " + kTfBase;
  check_refused(dir,
                run_mpmd(dir, tf + " --lr 0.1 --max-tokens 128 --steps 4", tf + " --lr 0.2 --max-tokens 128 --steps 4"),
                2, "rank 1: --lr is 0.2, rank 0's is 0.1");
  check_refused(dir,
                run_mpmd(dir, tf + " --lr 0.1 --max-tokens 128 --steps 4", tf + " --lr 0.1 --max-tokens 128 --steps 6"),
                2, "rank 1: --steps is 6, rank 0's is 4");
  check_refused(dir,
                run_mpmd(dir, tf + " --lr 0.1 --max-tokens 128 --steps 4", tf + " --lr 0.1 --max-tokens 64 --steps 4"),
                2, "rank 1: --max-tokens is 64, rank 0's is 128");
  check_refused(dir,
                run_mpmd(dir, tf + " --lr 0.1 --max-tokens 128 --steps 4",
                         "{s2s} train --data d.h5 --model m.h5 --embed-dim 8 --hidden 8 --max-tokens 128 --steps 4"),
                2, "rank 1: the tool is attn-seq2seq train, rank 0's is attn-transformer train");

  require_ok(run(dir, "{data} copy --width 4 --min-len 1 --max-len 4 --n 100 --valid-n 10 --test-n 15 --seed 3 "
                      "--out c.h5 --quiet"));
  const std::string ntm = "{ntm} train --data c.h5 --model m.h5 --memory 16,6 --epoch-size 40 --steps 2 "
                          "--rank-timeout 120" +
                          kSgd;
  check_refused(
      dir, run_mpmd(dir, ntm + " --controller-size 16 --batch-size 4", ntm + " --controller-size 32 --batch-size 4"), 2,
      "rank 1: --controller-size is 32, rank 0's is 16");
  check_refused(
      dir, run_mpmd(dir, ntm + " --controller-size 16 --batch-size 4", ntm + " --controller-size 16 --batch-size 8"), 2,
      "rank 1: --batch-size is 8, rank 0's is 4");
}

// What the train verbs cannot see in the options, train::fit compares once resolved: here what
// each rank's --resume checkpoint holds.
TEST_CASE("mpirun MPMD: ranks resuming different checkpoints stop before the first step", "[integration][mpi]") {
  if (!mpi_ready()) return;
  test::TempDir dir;
  require_ok(run(dir, kReverse));
  const std::string base = "--data d.h5 --model m.h5 " + kTfBase + " --lr 0.1 --max-tokens 128";
  const std::string train = base + " --steps 12";
  require_ok(run(dir, "{tf} train " + base + " --steps 8 --checkpoint-every 4"));
  const std::string four = "m.step000000004.h5", eight = "m.step000000008.h5";
  // Whether a rank resumes is an option every rank must have alike; from which file is compared by
  // what the file holds.
  const Timed one_resumes = run_mpmd(dir, "{tf} train " + train + " --resume " + four, "{tf} train " + train);
  INFO(one_resumes.result.err);
  CHECK(one_resumes.result.code == 2);
  CHECK_THAT(one_resumes.result.err, Contains("rank 1: --resume is not given, rank 0's is '" + four + "'"));
  // Rank 0 would remove the checkpoints after the step it resumes from (those of the run it
  // replaces): the ranks compare before, so step 8's file stays.
  const Timed other_step = run_mpmd(dir, "{tf} train " + train + " --resume " + four,
                                    "{tf} train " + train + " --resume " + eight);
  INFO(other_step.result.err);
  CHECK(other_step.result.code == 3);
  CHECK_THAT(other_step.result.err, Contains("rank 1: the step it starts from is 8 (epoch 1, batch 8) of '" + eight +
                                             "', rank 0's is 4 (epoch 1, batch 4) of '" + four + "'"));
  CHECK(other_step.seconds < 60);
  CHECK(std::filesystem::exists(dir.file(eight)));
  // Another model's checkpoint: its /config, from the file.
  require_ok(run(dir, "{tf} train --data d.h5 --model big.h5 --d-model 32 --heads 2 --d-ff 32 --layers 1 --seed 2 "
                      "--threads 1 --quiet --optimizer sgd --lr 0.1 --max-tokens 128 --steps 4"));
  const Timed other_model = run_mpmd(dir, "{tf} train " + train + " --resume " + four,
                                     "{tf} train " + train + " --resume big.h5");
  INFO(other_model.result.err);
  CHECK(other_model.result.code == 2);
  CHECK_THAT(other_model.result.err, Contains("rank 1: /config d_model is 32, rank 0's is 16"));
  // The same checkpoint under two names resumes.
  std::filesystem::copy_file(dir.file(four), dir.file("four.h5"));
  require_ok(
      run_mpmd(dir, "{tf} train " + train + " --resume " + four, "{tf} train " + train + " --resume four.h5").result);
  CHECK(io::File::open_read(dir.file("m.h5")).attr_int("/state", "step") == 12);
}

TEST_CASE("a build without MPI, started by mpirun with several ranks, refuses instead of training N copies",
          "[integration][mpi]") {
  if (dist::built_with_mpi()) {   // MPI_Init would look for the launcher that the variable pretends
    test::skip_test("this build has MPI; the case is for builds without it");
    return;
  }
  test::TempDir dir;
  require_ok(run(dir, kReverse));
  // What Open MPI's mpirun sets in each rank's environment.
  const Result r = run(dir, "OMPI_COMM_WORLD_SIZE=2 {tf} train --model m.h5 " + kTf + " --steps 1");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Contains("started by mpirun with 2 ranks, but this attnlab was built without MPI"));
  CHECK(!std::filesystem::exists(dir.file("m.h5")));
}

// The attn-complexity executable, run as a user would: exit codes, messages and the HDF5 file
// it writes. $ATTN_BIN_DIR is the build's apps folder (set by tests/CMakeLists.txt).
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

using test::slurp;

using Result = test::ShellResult;

// Runs attn-complexity with `args` in `dir`, stdout and stderr captured.
Result run(const test::TempDir& dir, const std::string& args) {
  return test::run_shell(dir, test::quoted_tool("attn-complexity") + " " + args);
}

// The smallest run that still has every part: two layers, two sizes per sweep, a path probe.
const char* kTiny = "measure --quick --layers self_attention,lstm --n-max 128 --d-max 32 --path-n-max 16 --quiet";

}  // namespace

TEST_CASE("attn-complexity measure prints the table and writes every measurement", "[cli][complexity]") {
  test::TempDir dir;
  const Result r = run(dir, std::string(kTiny) + " --out c.h5");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("| self-attention | O(n^2·d) | n^2.00 d^1.00 | O(1) | 1 at n = 128"));
  CHECK_THAT(r.out, Catch::Contains("| recurrent (LSTM) | O(n·d^2) | n^1.00 d^2.00 | O(n) | 128 at n = 128"));
  CHECK_THAT(r.out, Catch::Contains("self-attention vs recurrent (LSTM), flops_forward"));

  const io::File f = io::File::open_read(dir.file("c.h5"));
  const io::FileInfo info = io::read_file_info(f);
  CHECK(info.format == "attnlab/output");
  CHECK(info.kind == "complexity");
  CHECK_THAT(info.created_by, Catch::StartsWith("attn-complexity "));
  CHECK_THAT(info.command, Catch::Contains("measure --quick"));
  CHECK(f.read("/n_sweep/n").shape() == Shape{3});   // 32, 64, 128
  CHECK(f.read("/n_sweep/flops_forward/lstm").at(1) == static_cast<float>(8 * 64 * 64 * 64));
  CHECK(f.read("/path/length/lstm").at(0) == 16.0f);
  CHECK(f.attr_int("/config", "r") == 4);
  CHECK(f.attr_string("/config", "layers") == "self_attention,lstm");
}

TEST_CASE("attn-complexity refuses bad flags with exit code 2", "[cli][complexity]") {
  test::TempDir dir;
  const Result no_out = run(dir, "measure --quick");
  CHECK(no_out.code == 2);
  CHECK_THAT(no_out.err, Catch::Contains("out"));

  const Result bad_layer = run(dir, "measure --quick --layers lstm,transformer --out c.h5");
  CHECK(bad_layer.code == 2);
  CHECK_THAT(bad_layer.err, Catch::Contains("unknown layer 'transformer'"));

  const Result not_pow2 = run(dir, "measure --quick --n-max 100 --out c.h5");
  CHECK(not_pow2.code == 2);
  CHECK_THAT(not_pow2.err, Catch::Contains("--n-max must be a power of 2, got 100"));

  const Result heads = run(dir, "measure --quick --layers multi_head_attention --heads 3 --out c.h5");
  CHECK(heads.code == 2);
  CHECK_THAT(heads.err, Catch::Contains("d must be a multiple of heads (3)"));

  const Result verb = run(dir, "measur --out c.h5");
  CHECK(verb.code == 2);
  CHECK_FALSE(std::filesystem::exists(dir.file("c.h5")));
}

TEST_CASE("attn-complexity reports an unwritable output as a runtime failure", "[cli][complexity]") {
  test::TempDir dir;
  const Result r = run(dir, std::string(kTiny) + " --out no/such/folder/c.h5");
  CHECK(r.code == 1);
}

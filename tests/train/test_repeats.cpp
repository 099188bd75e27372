// --repeats' choice of the run kept (train/repeats.hpp) and the median (core/median.hpp); the files are tested
// through the tools (tests/memnet_cli, tests/ntm_cli).
#include "attn/train/repeats.hpp"

#include <cmath>
#include <vector>

#include "attn/core/median.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

train::RepeatRun scored(double metric, double loss) {
  train::RepeatRun r;
  r.valid_metric = metric;
  r.valid_loss = loss;
  return r;
}

}  // namespace

TEST_CASE("repeats: the least validation score is kept, the loss breaks ties, NaN never wins", "[unit][train]") {
  const double nan = std::nan("");
  CHECK(train::best_run(std::vector{scored(0.3, 1.0), scored(0.1, 2.0), scored(0.2, 0.5)}) == 1);
  CHECK(train::best_run(std::vector{scored(0.1, 2.0), scored(0.1, 1.0), scored(0.1, 1.5)}) == 1);
  CHECK(train::best_run(std::vector{scored(0.1, 1.0), scored(0.1, 1.0)}) == 0);   // the first of equals
  CHECK(train::best_run(std::vector{scored(nan, 0.1), scored(0.5, 9.0)}) == 1);
  CHECK(train::best_run(std::vector{scored(0.5, nan), scored(0.5, 3.0)}) == 1);
  CHECK(train::best_run(std::vector{scored(0.5, 1.0)}) == 0);
}

TEST_CASE("repeats: median and file names", "[unit][train]") {
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median({4.0, 1.0, 2.0, 3.0}) == 2.5);
  CHECK(std::isnan(median({})));
  CHECK(train::repeat_run_path("out/mn.h5", 3) == "out/mn.run3.h5");
  CHECK(train::repeats_summary_path("mn.h5") == "mn.repeats.h5");
}

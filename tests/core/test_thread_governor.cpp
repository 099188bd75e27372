// The thread governor's parts that do not depend on the machine's load: reading /proc/stat and
// the decision, which keeps a band between going down and going up so that noise cannot flap it.
#include "attn/core/thread_governor.hpp"

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;
using governor::next_thread_count;
using governor::parse_proc_stat;

namespace {

// Two CPUs: busy = user + nice + system + irq + softirq + steal; idle and iowait are not busy.
constexpr const char* kStat =
    "cpu  300 20 60 900 30 0 5 2 0 0\n"
    "cpu0 100 10 20 400 10 0 2 1 0 0\n"
    "cpu1 200 10 40 500 20 0 3 1 0 0\n"
    "intr 123456 0 0 0\n"
    "ctxt 99\n";

}  // namespace

TEST_CASE("governor: /proc/stat's busy and total ticks of the CPUs asked for", "[unit][threads]") {
  const auto both = parse_proc_stat(kStat, {0, 1});
  REQUIRE(both.has_value());
  CHECK(both->busy == (100 + 10 + 20 + 2 + 1) + (200 + 10 + 40 + 3 + 1));
  CHECK(both->total == both->busy + 400 + 10 + 500 + 20);
  const auto second = parse_proc_stat(kStat, {1});   // taskset -c 1: the other CPU is not ours
  REQUIRE(second.has_value());
  CHECK(second->busy == 254);
  CHECK(second->total == 254 + 520);
  CHECK_FALSE(parse_proc_stat(kStat, {0, 2}).has_value());               // no line for CPU 2
  CHECK_FALSE(parse_proc_stat(kStat, {}).has_value());
  CHECK_FALSE(parse_proc_stat("cpu0 1 2 3\n", {0}).has_value());          // too few fields
  CHECK_FALSE(parse_proc_stat("cpu0 1 2 x 4 5 6 7 8\n", {0}).has_value());
}

TEST_CASE("governor: the thread count follows the free cores, with a band against flapping", "[unit][threads]") {
  // 2 cores: idle, and one CPU-bound neighbour (two thirds of a core beside 2 spinning threads,
  // a whole core beside one thread).
  CHECK(next_thread_count(2, 2, 1.95) == 2);
  CHECK(next_thread_count(2, 2, 1.33) == 1);
  CHECK(next_thread_count(1, 2, 1.0) == 1);
  CHECK(next_thread_count(1, 2, 1.9) == 2);   // the neighbour left
  // Inside the band nothing moves, whichever side it is approached from.
  CHECK(next_thread_count(2, 2, 1.5) == 2);
  CHECK(next_thread_count(1, 2, 1.5) == 1);
  // Never above the ceiling, never below one.
  CHECK(next_thread_count(2, 2, 7.5) == 2);
  CHECK(next_thread_count(1, 1, 1.9) == 1);
  CHECK(next_thread_count(2, 2, -3.0) == 1);
  // More cores: down by as many as the neighbours take, up one band at a time.
  CHECK(next_thread_count(8, 8, 5.1) == 5);
  CHECK(next_thread_count(5, 8, 7.8) == 8);
  CHECK(next_thread_count(5, 8, 5.6) == 5);
}

TEST_CASE("governor: turning adaptation off restores the count set, which stays its ceiling", "[unit][threads]") {
  const int before = num_threads();
  set_num_threads(2);
  set_thread_adaptation(true);
  CHECK(thread_adaptation() == true);   // /proc/stat is there on Linux
  adapt_threads();                      // within the first second: no sample yet, nothing changes
  CHECK(num_threads() == 2);
  set_thread_adaptation(false);
  CHECK_FALSE(thread_adaptation());
  CHECK(num_threads() == 2);
  set_num_threads(before);
}

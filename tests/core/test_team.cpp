// run_team's phases and spin barrier, and the split of work over a team.
#include "attn/core/team.hpp"

#include <vector>

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

TEST_CASE("team: a phase sees every write of the phase before it, on every thread", "[unit][threads]") {
  const int before = num_parts();
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    set_num_threads(threads);
    constexpr int64_t kItems = 64;
    constexpr int kRounds = 2000;
    std::vector<int64_t> values(kItems, 0);
    std::vector<int> wrong(static_cast<size_t>(threads), 0), ran(static_cast<size_t>(threads), 0);
    run_team(threads, [&](const Team& team) {
      ran[static_cast<size_t>(team.thread)] = team.size;
      const auto [b0, b1] = team.share(kItems);
      for (int64_t round = 1; round <= kRounds; ++round) {
        for (int64_t i = b0; i < b1; ++i) values[static_cast<size_t>(i)] = round * (i + 1);
        team.sync();   // every thread's share of this round is written
        int64_t sum = 0;
        for (int64_t v : values) sum += v;
        if (sum != round * kItems * (kItems + 1) / 2) ++wrong[static_cast<size_t>(team.thread)];
        team.sync();   // every thread has read this round before the next one writes
      }
    });
    for (int t = 0; t < threads; ++t) {
      CHECK(ran[static_cast<size_t>(t)] == threads);
      CHECK(wrong[static_cast<size_t>(t)] == 0);
    }
  }
  set_num_threads(before);
}

TEST_CASE("team: shares and parts cover the work exactly once", "[unit][threads]") {
  for (int size : {1, 2, 3, 4})
    for (int64_t n : {0, 1, 5, 32, 33}) {
      CAPTURE(size, n);
      std::vector<int> seen(static_cast<size_t>(n), 0);
      for (int thread = 0; thread < size; ++thread) {
        const auto [b0, b1] = Team{thread, size, nullptr}.share(n);
        CHECK(b0 <= b1);
        for (int64_t i = b0; i < b1; ++i) ++seen[static_cast<size_t>(i)];
      }
      CHECK(seen == std::vector<int>(static_cast<size_t>(n), 1));
    }
  std::vector<int> parts_of_thread;
  Team{0, 2, nullptr}.each_part(5, [&](int part) { parts_of_thread.push_back(part); });
  CHECK(parts_of_thread == std::vector<int>{0, 2, 4});
}

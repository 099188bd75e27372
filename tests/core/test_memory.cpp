// The memory budget: tensors are counted against it, and a tensor that would not fit is refused
// with a MemoryError naming the tensor, the bytes and the scope that sized it.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>

#include "attn/core/memory.hpp"
#include "attn/core/tensor.hpp"
#include "test_support.hpp"

using namespace attn;
using Catch::Contains;

namespace {

// Bytes of this process's memory that are resident (Linux: /proc/self/statm's second field, pages).
size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t total = 0, resident = 0;
  statm >> total >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Restores the default budget when a test ends, whatever it threw.
struct BudgetOf {
  explicit BudgetOf(size_t bytes) { set_memory_budget(bytes); }
  ~BudgetOf() { set_memory_budget(0); }
};

}  // namespace

TEST_CASE("tensors are counted against the memory budget and given back when freed", "[unit][memory]") {
  const size_t before = memory_in_use();
  {
    const Tensor a({1000, 100});   // 400,000 bytes, in a block of the 416 KiB class (tensor.cpp)
    CHECK(memory_in_use() == before + 425984);
    const Tensor view = a.reshape({100, 1000});   // shares the storage: not counted again
    CHECK(memory_in_use() == before + 425984);
  }
  CHECK(memory_in_use() == before);
}

TEST_CASE("freed blocks are reused by size class, and tensors in use plus cached blocks stay within twice the peak in use", "[unit][memory]") {
  // Batches of varying length, as length bucketing makes them: 200 sizes from 1 to 3 MB.
  const size_t floor = size_t{64} << 20;
  for (int64_t rows = 1000; rows < 3000; rows += 10) {
    const Tensor a({rows, 256});
    const Tensor b({rows, 512});
  }
  CHECK(memory_in_use() + memory_cached() <= std::max(2 * memory_peak(), memory_in_use() + floor));
  CHECK(memory_cached() > 0);
  // A block comes back for any request of its class: 1,000 and 1,010 rows of 256 floats share
  // one (1,024,000 and 1,034,240 bytes; classes of 64 KiB between 1 and 2 MiB).
  const size_t cached = memory_cached();
  {
    const Tensor c({1010, 256});
    CHECK(memory_cached() < cached);   // taken from the cache, not mapped afresh
  }
}

TEST_CASE("a step whose phases use different sizes takes every block from the cache after its first round", "[unit][memory]") {
  // A forward that holds two 96 MiB blocks, then a backward that holds two 128 MiB ones: the
  // step's peak is 256 MiB, its blocks 448 MiB. Held to the peak, the cache unmapped the forward's
  // blocks to keep the backward's, and mapped them again every step. Uninitialized: the pages are
  // never touched, so nothing is resident.
  const auto phase = [](int64_t mib) {
    const Tensor a = Tensor::uninitialized({mib << 18});
    const Tensor b = Tensor::uninitialized({mib << 18});
  };
  phase(96);
  phase(128);
  const size_t cached = memory_cached();
  REQUIRE(cached >= (size_t{448} << 20));
  const Tensor forward = Tensor::uninitialized({int64_t{96} << 18});
  CHECK(memory_cached() == cached - (size_t{96} << 20));   // taken from the cache, not mapped afresh
}

TEST_CASE("a zero tensor fresh from the system touches no page, and one taken from the cache is zeroed again",
          "[unit][memory]") {
  // Fresh anonymous pages read as zero; filling them would make every page resident for nothing
  // (a model sized by a damaged /config paid 16 GiB of it before the next tensor was refused).
  const int64_t n = int64_t{300} << 18;   // 300 MiB: a size class no other test uses
  const size_t cached = memory_cached(), before = resident_bytes();
  {
    Tensor fresh({n});
    CHECK(memory_cached() == cached);   // mapped afresh, not taken from the cache
    CHECK(resident_bytes() < before + (size_t{16} << 20));
    CHECK(fresh.data()[0] == 0.0f);
    CHECK(fresh.data()[n - 1] == 0.0f);
    fresh.fill(1.0f);
  }
  const size_t given = memory_cached();
  REQUIRE(given > cached);   // the written block went to the cache (older blocks may have left it)
  const Tensor reused({n});
  CHECK(memory_cached() < given);   // and came back from it, written on: zeroed again
  CHECK(std::all_of(reused.data(), reused.data() + n, [](float v) { return v == 0.0f; }));
}

TEST_CASE("a tensor past the budget is refused before it is allocated, naming it and its purpose",
          "[unit][memory]") {
  const BudgetOf budget(memory_in_use() + (size_t{1} << 20));   // 1 MiB more than is held
  const Tensor fits({200, 1000});                               // 800 KB
  try {
    const Tensor more({100, 1000});                             // 400 KB more: over
    FAIL("allocated past the budget");
  } catch (const MemoryError& e) {
    CHECK(e.blame() == MemoryBlame::options);   // outside any scope the options sized it
    CHECK_THAT(e.what(), Contains("out of memory: a float32 tensor [100, 1000] needs 391 KiB") &&
                             Contains("of its budget of"));
  }
  {
    const MemoryScope scope = MemoryScope::input("the model that m.h5's /config describes");
    try {
      const Tensor ids({1 << 20}, DType::i32);
      FAIL("allocated past the budget");
    } catch (const MemoryError& e) {
      CHECK(e.blame() == MemoryBlame::input);
      CHECK_THAT(e.what(), Contains("an int32 tensor [1048576] needs 4 MiB"));
      CHECK_THAT(e.what(), Contains("for the model that m.h5's /config describes"));
    }
  }
  const MemoryScope outer = MemoryScope::options("the options");
  {
    const MemoryScope inner = MemoryScope::input("d.h5's dataset '/train/src'");
  }
  // The inner scope has ended: the outer one is current again.
  try {
    const Tensor t({1 << 20});
    FAIL("allocated past the budget");
  } catch (const MemoryError& e) {
    CHECK(e.blame() == MemoryBlame::options);
    CHECK_THAT(e.what(), Contains("for the options"));
  }
}

TEST_CASE("a shape whose size overflows is refused, not wrapped round to a small allocation", "[unit][memory]") {
  const int64_t huge = int64_t{1} << 40;
  REQUIRE_THROWS_AS(Tensor({huge, huge, huge}), MemoryError);
  REQUIRE_THROWS_WITH(Tensor({huge, huge}), Contains("a float32 tensor [1099511627776, 1099511627776] needs"));
}

TEST_CASE("byte counts are written for people", "[unit][memory]") {
  CHECK(format_bytes(12) == "12 bytes");
  CHECK(format_bytes(2048) == "2 KiB");
  CHECK(format_bytes(1.5 * 1024 * 1024 * 1024) == "1.5 GiB");
}

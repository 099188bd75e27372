#include "attn/core/flops.hpp"

#include <atomic>

namespace attn::flops {
namespace {
std::atomic<int64_t> g_count{0};
std::atomic<int64_t> g_steps{0};
}  // namespace
void add(int64_t multiply_adds) { g_count.fetch_add(multiply_adds, std::memory_order_relaxed); }
int64_t count() { return g_count.load(std::memory_order_relaxed); }
void reset() {
  g_count.store(0, std::memory_order_relaxed);
  g_steps.store(0, std::memory_order_relaxed);
}
void add_sequential_steps(int64_t steps) { g_steps.fetch_add(steps, std::memory_order_relaxed); }
int64_t sequential_steps() { return g_steps.load(std::memory_order_relaxed); }
}  // namespace attn::flops

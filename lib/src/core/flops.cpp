#include "attn/core/flops.hpp"

#include <atomic>

namespace attn::flops {
namespace {
std::atomic<int64_t> g_count{0};
}
void add(int64_t multiply_adds) { g_count.fetch_add(multiply_adds, std::memory_order_relaxed); }
int64_t count() { return g_count.load(std::memory_order_relaxed); }
void reset() { g_count.store(0, std::memory_order_relaxed); }
}  // namespace attn::flops

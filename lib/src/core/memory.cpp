// The memory budget (attn/core/memory.hpp).
#include "attn/core/memory.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace attn {

namespace {

std::atomic<size_t> g_in_use{0};
std::atomic<size_t> g_peak{0};
std::atomic<size_t> g_budget_override{0};
thread_local const MemoryScope* t_scope = nullptr;

size_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : SIZE_MAX;
}

// ATTN_MEMORY_LIMIT: "123", "64K", "512M", "2G", "2GiB", "2GB" (case-insensitive, powers of 1024);
// 0 when unset. Anything else is a ConfigError: a limit the user meant must not be ignored.
size_t limit_from_environment() {
  const char* text = std::getenv("ATTN_MEMORY_LIMIT");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  double scale = 1;
  switch (std::toupper(static_cast<unsigned char>(*end))) {
    case 'K': scale = 1024.0; ++end; break;
    case 'M': scale = 1024.0 * 1024; ++end; break;
    case 'G': scale = 1024.0 * 1024 * 1024; ++end; break;
    case 'T': scale = 1024.0 * 1024 * 1024 * 1024; ++end; break;
    default: break;
  }
  if (scale > 1 && (*end == 'i' || *end == 'I')) ++end;
  if (*end == 'b' || *end == 'B') ++end;
  if (*end != '\0' || !(value > 0) || value * scale > 1e19)
    throw ConfigError(std::string("ATTN_MEMORY_LIMIT='") + text + "' is not a size such as 8G, 512M or 1000000");
  return static_cast<size_t>(value * scale);
}

size_t default_budget() {
  static const size_t budget = [] {
    const size_t machine = physical_memory(), limit = limit_from_environment();
    return limit > 0 && limit < machine ? limit : machine;
  }();
  return budget;
}

}  // namespace

size_t memory_budget() {
  const size_t set = g_budget_override.load();
  return set > 0 ? set : default_budget();
}
void set_memory_budget(size_t bytes) { g_budget_override.store(bytes); }
size_t memory_in_use() { return g_in_use.load(); }
size_t memory_peak() { return g_peak.load(std::memory_order_relaxed); }

std::string format_bytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.3g %s", bytes, units[u]);
  return buf;
}

bool try_reserve_memory(size_t bytes) {
  const size_t budget = memory_budget();
  size_t held = g_in_use.load();
  do {
    if (bytes > budget || held > budget - bytes) return false;
  } while (!g_in_use.compare_exchange_weak(held, held + bytes));
  size_t peak = g_peak.load(std::memory_order_relaxed);
  while (held + bytes > peak && !g_peak.compare_exchange_weak(peak, held + bytes, std::memory_order_relaxed)) {
  }
  return true;
}

void throw_out_of_memory(size_t bytes, const std::string& what) {
  const MemoryScope* scope = t_scope;
  std::string message = "out of memory: " + what + " needs " + format_bytes(static_cast<double>(bytes));
  message += scope != nullptr ? " for " + scope->purpose_ : std::string(", as this command's options ask");
  message += "; the process holds " + format_bytes(static_cast<double>(memory_in_use())) + " of its budget of " +
             format_bytes(static_cast<double>(memory_budget())) + " (the machine's memory, or ATTN_MEMORY_LIMIT)";
  throw MemoryError(message, scope != nullptr ? scope->blame_ : MemoryBlame::options);
}

void release_memory(size_t bytes) { g_in_use.fetch_sub(bytes); }

MemoryScope::MemoryScope(std::string purpose, MemoryBlame blame)
    : purpose_(std::move(purpose)), blame_(blame), outer_(t_scope) {
  t_scope = this;
}
MemoryScope::~MemoryScope() { t_scope = outer_; }

}  // namespace attn

// The memory budget: every tensor's storage is counted, and a request that would take the live
// total past the budget throws MemoryError before anything is allocated or touched. Linux
// overcommits, so without this a size read from a damaged /config or a mistyped option is "allocated"
// fine and the process is killed later, half-way through writing pages; with it, the tool says what
// it was allocating, for what, and exits.
//
// The budget is the machine's physical memory, or ATTN_MEMORY_LIMIT (bytes, or with a K, M or G
// suffix) when that is set and smaller: on a shared machine a run can be held to its share.
//
// MemoryScope names what the allocations inside it are for and whom to blame: the input file that
// sized them (exit 3) or the command's options (exit 2). The innermost scope of the thread wins;
// outside any scope the options are blamed.
//
//   const MemoryScope scope = MemoryScope::input("the model that m.h5's /config describes");
#pragma once
#include <cstddef>
#include <string>

#include "attn/core/error.hpp"

namespace attn {

enum class MemoryBlame { options, input };

class MemoryError : public Error {
 public:
  MemoryError(const std::string& what, MemoryBlame blame) : Error(what), blame_(blame) {}
  MemoryBlame blame() const { return blame_; }

 private:
  MemoryBlame blame_;
};

size_t memory_budget();                 // bytes
void set_memory_budget(size_t bytes);   // for tests; 0 restores the default
size_t memory_in_use();                 // bytes of live tensor storage
size_t memory_peak();                   // the most memory_in_use has been
size_t memory_cached();                 // bytes of freed tensor blocks kept for reuse (tensor.cpp)

// Counts `bytes` against the budget: false, counting nothing, when they do not fit. Tensor storage
// calls these, then throw_out_of_memory with a description of what it was making (built only then).
bool try_reserve_memory(size_t bytes);
void release_memory(size_t bytes);
// Throws MemoryError naming `what`, the bytes, the budget and the current scope's purpose.
[[noreturn]] void throw_out_of_memory(size_t bytes, const std::string& what);

// "2.4 GiB", "512 MiB", "7 KiB", "12 bytes".
std::string format_bytes(double bytes);

class MemoryScope {
 public:
  static MemoryScope input(std::string purpose) { return {std::move(purpose), MemoryBlame::input}; }
  static MemoryScope options(std::string purpose) { return {std::move(purpose), MemoryBlame::options}; }
  ~MemoryScope();
  MemoryScope(const MemoryScope&) = delete;
  MemoryScope& operator=(const MemoryScope&) = delete;

 private:
  MemoryScope(std::string purpose, MemoryBlame blame);
  std::string purpose_;
  MemoryBlame blame_;
  const MemoryScope* outer_;
  friend void throw_out_of_memory(size_t, const std::string&);
};

}  // namespace attn

// Threads on a shared machine. With one CPU-bound neighbour on 2 cores, 2 threads that meet at a
// barrier every few microseconds wait for whichever of them the scheduler has just set aside:
// T-small training kept less of its idle throughput than one thread does beside the same
// neighbour (issue 17; experiments/perf/busy). When adaptation is on, the thread count follows
// the cores the other processes leave free, sampled at most once a second from /proc/stat (the
// busy time of the CPUs this process may run on, minus its own CPU time), and never exceeds the
// count set by set_num_threads. It moves only the running threads, never the parts work is
// divided into (threading.hpp), so a run gives the same bits however often the count changes.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

namespace attn {

// Turns adaptation on or off; its ceiling is the thread count of the last set_num_threads (or
// OpenMP's default). Off by default: tools turn it on unless --fixed-threads is given.
void set_thread_adaptation(bool on);
bool thread_adaptation();

// Called between units of work (the trainer calls it after every step, the split runners after
// every batch): when adaptation is on and a second has passed since the last sample, measures the
// other processes' load and sets the thread count it calls for. Otherwise a clock read.
void adapt_threads();

namespace governor {

// Cumulative busy and total time of the CPUs in `cpus` from the text of /proc/stat (in clock
// ticks); nullopt when the text has no line for one of them.
struct CpuTimes {
  unsigned long long busy = 0, total = 0;
};
std::optional<CpuTimes> parse_proc_stat(std::string_view text, const std::vector<int>& cpus);

// The thread count for `free_cores` cores not used by other processes (fractions: 1.33 when a
// neighbour has two thirds of a core), starting from `current`, at most `ceiling`, at least 1.
// Fewer threads once free_cores falls 0.4 of a core below the current count; more once it rises
// within 0.3 of a core of the next: the band between keeps a noisy load from flapping the count.
int next_thread_count(int current, int ceiling, double free_cores);

}  // namespace governor
}  // namespace attn

// The thread count on a shared machine (thread_governor.hpp): sampled from /proc/stat and the
// process's CPU clock, decided by next_thread_count.
#include "attn/core/thread_governor.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <ctime>
#include <mutex>
#include <string>

#include "attn/core/threading.hpp"

namespace attn {
namespace governor {

std::optional<CpuTimes> parse_proc_stat(std::string_view text, const std::vector<int>& cpus) {
  CpuTimes sum;
  size_t found = 0;
  while (!text.empty()) {
    const size_t eol = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(std::min(eol + 1, text.size()));
    // "cpuN user nice system idle iowait irq softirq steal guest guest_nice"; the aggregate
    // "cpu " line has no number. Guest time is already inside user and nice.
    if (line.size() < 4 || line.substr(0, 3) != "cpu" || line[3] < '0' || line[3] > '9') continue;
    int cpu = -1;
    const char* p = line.data() + 3;
    const char* end = line.data() + line.size();
    auto r = std::from_chars(p, end, cpu);
    if (r.ec != std::errc() || std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
    std::array<unsigned long long, 8> f{};
    p = r.ptr;
    for (auto& v : f) {
      while (p < end && *p == ' ') ++p;
      r = std::from_chars(p, end, v);
      if (r.ec != std::errc()) return std::nullopt;
      p = r.ptr;
    }
    const unsigned long long idle = f[3] + f[4];
    const unsigned long long busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
    sum.busy += busy;
    sum.total += busy + idle;
    ++found;
  }
  if (found != cpus.size() || cpus.empty()) return std::nullopt;
  return sum;
}

int next_thread_count(int current, int ceiling, double free_cores) {
  const int down = static_cast<int>(std::floor(free_cores + 0.6));
  const int up = static_cast<int>(std::floor(free_cores + 0.3));
  int n = current;
  if (down < current) n = down;
  else if (up > current) n = up;
  return std::clamp(n, 1, std::max(1, ceiling));
}

}  // namespace governor

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPeriod = std::chrono::seconds(1);

double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The CPUs this process may run on (taskset, mpirun --bind-to core).
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// /proc/stat's CPU lines come first; 64 KiB holds them for hundreds of CPUs.
std::optional<governor::CpuTimes> read_cpu_times(const std::vector<int>& cpus) {
  const int fd = ::open("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text(64 * 1024, '\0');
  size_t used = 0;
  ssize_t n;
  while (used < text.size() && (n = ::read(fd, text.data() + used, text.size() - used)) > 0)
    used += static_cast<size_t>(n);
  ::close(fd);
  text.resize(used);
  // A truncated last line would read as a CPU with fewer ticks: keep whole lines only.
  text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  return governor::parse_proc_stat(text, cpus);
}

struct Sample {
  Clock::time_point when;
  double own_cpu = 0;
  governor::CpuTimes cpus;
};

struct Governor {
  std::mutex mutex;
  std::atomic<bool> on{false};
  std::atomic<int64_t> next_due{0};   // steady_clock ticks of the next sample
  std::vector<int> cpus;
  double tick_seconds = 0.01;
  std::optional<Sample> last;

  std::optional<Sample> sample() const {
    const auto times = read_cpu_times(cpus);
    if (!times) return std::nullopt;
    return Sample{Clock::now(), process_cpu_seconds(), *times};
  }
};

Governor& the_governor() {
  static Governor g;
  return g;
}

}  // namespace

void set_thread_adaptation(bool on) {
  Governor& g = the_governor();
  const std::lock_guard<std::mutex> lock(g.mutex);
  if (on) {
    g.cpus = allowed_cpus();
    const long hz = ::sysconf(_SC_CLK_TCK);
    g.tick_seconds = hz > 0 ? 1.0 / static_cast<double>(hz) : 0.01;
    g.last = g.sample();
    if (!g.last) on = false;   // no /proc/stat (not Linux): the count stays as set
  }
  if (!on && num_threads() != num_parts()) set_running_threads(num_parts());
  g.next_due = (Clock::now() + kPeriod).time_since_epoch().count();
  g.on = on;
}

bool thread_adaptation() { return the_governor().on; }

void adapt_threads() {
  Governor& g = the_governor();
  if (!g.on || Clock::now().time_since_epoch().count() < g.next_due) return;
  const std::lock_guard<std::mutex> lock(g.mutex);
  const std::optional<Sample> now = g.sample();
  if (!now || !g.last || now->cpus.busy < g.last->cpus.busy) {   // counters restarted (a CPU replugged)
    g.last = now;
    return;
  }
  const double wall = std::chrono::duration<double>(now->when - g.last->when).count();
  const double busy = static_cast<double>(now->cpus.busy - g.last->cpus.busy) * g.tick_seconds;
  const double other = std::max(0.0, busy - (now->own_cpu - g.last->own_cpu)) / wall;
  const double free_cores = static_cast<double>(g.cpus.size()) - other;
  g.last = now;
  g.next_due = (now->when + kPeriod).time_since_epoch().count();
  // The ceiling may have moved (set_num_threads) since the last sample.
  const int ceiling = num_parts();
  const int n = governor::next_thread_count(std::min(num_threads(), ceiling), ceiling, free_cores);
  if (n != num_threads()) set_running_threads(n);
}

}  // namespace attn

// Progress display on stderr: step/total, loss, rate and ETA.
//
// On a terminal the line is redrawn in place (`\r`) at most every `redraw_interval` seconds;
// otherwise (a log file, CI) a plain line is printed at most every `line_interval` seconds,
// so logs stay short. The last step is always shown. Silent when `quiet` (--quiet).
//
// The library reports progress through a callback; a Progress is that callback:
//   cli::Progress progress(steps, {.unit = "tok", .quiet = opts.quiet()});
//   trainer.run(..., [&](int64_t step, double loss) { progress(step, loss); });
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <optional>
#include <string>

namespace attn::cli {

struct ProgressOptions {
  std::string label = "step";          // what a step is called in the line: "step 12/100"
  std::string unit;                     // what update()'s `units` counts ("tok"): rate in unit/s;
                                        // empty: the rate is in steps/s
  bool quiet = false;                   // print nothing
  std::optional<bool> redraw;           // redraw in place; default: whether stderr is a terminal
  double redraw_interval = 0.1;         // seconds between redraws on a terminal
  double line_interval = 10.0;          // seconds between plain lines otherwise
  std::ostream* out = nullptr;          // default std::cerr
  std::function<double()> clock;        // seconds, monotonic; default std::chrono::steady_clock
};

class Progress {
 public:
  // total: the number of steps (> 0), or 0 when unknown (no percentage and no ETA).
  explicit Progress(int64_t total, ProgressOptions opts = {});
  ~Progress();   // ends a redrawn line with a newline
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Step `step` (1-based) is done; the first step seen may be later than 1 (a resumed training),
  // and the ETA and the steps-per-second rate count from it. loss: NaN when there is none.
  // units: the cumulative count of work units so far (tokens, examples) when the rate is in
  // units, else ignored. rate: when given, the rate shown instead of units (or steps) over the
  // time since construction; the trainer's own tokens/s, for one, leaves out the time spent on
  // validation.
  void update(int64_t step, double loss = std::numeric_limits<double>::quiet_NaN(), int64_t units = 0,
              double rate = std::numeric_limits<double>::quiet_NaN());
  // The number of steps, once known (a Progress made before the work starts may learn it late).
  void set_total(int64_t total) { total_ = total; }
  // The library's progress-callback form.
  void operator()(int64_t step, double loss) { update(step, loss); }
  // Shows the latest state now (whatever the interval) and ends the line.
  void finish();

  // The text of the line for the latest update (no `\r`, no newline): for tests and logs.
  //   "step 120/1000 (12%)  loss 2.3145  1520 tok/s  ETA 0:42"
  std::string line() const;

 private:
  void draw(bool final);
  double now() const;

  int64_t total_;
  ProgressOptions opts_;
  bool redraw_;
  double start_, last_draw_ = -1e300;
  int64_t step_ = 0, units_ = 0, drawn_step_ = -1;
  int64_t first_step_ = -1;   // the step of the first update, -1 before it
  double loss_ = std::numeric_limits<double>::quiet_NaN();
  double rate_ = std::numeric_limits<double>::quiet_NaN();
  size_t last_len_ = 0;
  bool open_line_ = false;   // a redrawn line is on screen without its newline
};

// "0:42", "12:05", "3:07:09".
std::string format_duration(double seconds);

}  // namespace attn::cli

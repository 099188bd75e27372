// Progress: rate-limited progress lines on stderr, redrawn in place on a terminal.
#include "common/progress.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include <unistd.h>

namespace attn::cli {

std::string format_duration(double seconds) {
  const int64_t s = seconds > 0 && std::isfinite(seconds) ? static_cast<int64_t>(seconds + 0.5) : 0;
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  return buf;
}

Progress::Progress(int64_t total, ProgressOptions opts) : total_(total), opts_(std::move(opts)) {
  if (!opts_.out) opts_.out = &std::cerr;
  if (!opts_.clock) {
    opts_.clock = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  }
  redraw_ = opts_.redraw.value_or(::isatty(::fileno(stderr)) == 1);
  start_ = now();
}

Progress::~Progress() {
  if (open_line_ && !opts_.quiet) *opts_.out << "\n" << std::flush;
}

double Progress::now() const { return opts_.clock(); }

void Progress::update(int64_t step, double loss, int64_t units, double rate) {
  if (first_step_ < 0) first_step_ = step;
  step_ = step;
  loss_ = loss;
  units_ = units;
  rate_ = rate;
  if (opts_.quiet) return;
  const double t = now();
  const double interval = redraw_ ? opts_.redraw_interval : opts_.line_interval;
  const bool last = total_ > 0 && step >= total_;
  if (last || t - last_draw_ >= interval) {
    last_draw_ = t;
    draw(/*final=*/last);
  }
}

void Progress::finish() {
  if (opts_.quiet) return;
  // Nothing to add when the latest state is already on a finished line.
  if (open_line_ || step_ != drawn_step_) draw(/*final=*/true);
}

std::string Progress::line() const {
  std::ostringstream os;
  os << opts_.label << " " << step_;
  if (total_ > 0) os << "/" << total_ << " (" << (100 * step_ / total_) << "%)";
  if (!std::isnan(loss_)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", loss_);
    os << "  loss " << buf;
  }
  const double elapsed = now() - start_;
  if (elapsed > 0 && step_ > 0) {
    // The steps taken since construction: a resumed training's first step is not step 1.
    const int64_t done = step_ - first_step_ + 1;
    const bool in_units = !opts_.unit.empty();
    const double rate = !std::isnan(rate_) ? rate_
                        : (in_units ? static_cast<double>(units_) : static_cast<double>(done)) / elapsed;
    char buf[32];
    std::snprintf(buf, sizeof buf, rate >= 100 ? "%.0f" : "%.3g", rate);
    os << "  " << buf << " " << (in_units ? opts_.unit : opts_.label) << "/s";
    if (total_ > 0 && step_ < total_)
      os << "  ETA " << format_duration(elapsed * static_cast<double>(total_ - step_) / static_cast<double>(done));
    else
      os << "  " << format_duration(elapsed) << " elapsed";
  }
  return os.str();
}

void Progress::draw(bool final) {
  std::ostream& os = *opts_.out;
  const std::string text = line();
  drawn_step_ = step_;
  if (redraw_) {
    // Pad with blanks to erase the tail of a longer previous line.
    os << "\r" << text << std::string(last_len_ > text.size() ? last_len_ - text.size() : 0, ' ');
    last_len_ = text.size();
    open_line_ = !final;
    if (final) os << "\n";
  } else {
    os << text << "\n";
  }
  os.flush();
}

}  // namespace attn::cli

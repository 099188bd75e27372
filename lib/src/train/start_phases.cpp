#include "start_phases.hpp"

#include <algorithm>
#include <set>

#include "attn/core/error.hpp"

namespace attn::train {

bool phase_on(const io::File& file, const std::string& name, bool absent) {
  return file.exists("/state") && file.has_attr("/state", name) ? file.attr_int("/state", name) != 0 : absent;
}

namespace detail {

StartPhases::StartPhases(const std::vector<StartPhase>& phases) : phases_(phases), states_(phases.size()) {
  std::set<std::string> names;
  for (const StartPhase& p : phases_) {
    if (p.name.empty() || !p.set) throw ConfigError("train: a start phase of the task has no name or no switch");
    if (!names.insert(p.name).second) throw ConfigError("train: two start phases are named '" + p.name + "'");
    if (p.epochs < 0) throw ConfigError("train: start phase '" + p.name + "' has epochs < 0");
    p.set(true);
  }
}

void StartPhases::end_epoch(const EpochReport& r) {
  if (r.partial) return;
  const double loss = r.valid.count > 0 ? r.valid.loss() : r.train.loss();
  for (size_t k = 0; k < phases_.size(); ++k) {
    State& s = states_[k];
    if (!s.on) continue;
    const bool improved = loss < s.best;
    s.best = std::min(s.best, loss);
    if (phases_[k].epochs > 0 ? r.epoch + 1 < phases_[k].epochs : improved) continue;
    s.on = false;   // for good
    s.end = r.step;
    phases_[k].set(false);
  }
}

int64_t StartPhases::schedule_step(int64_t t) const {
  int64_t end = 0;
  for (size_t k = 0; k < phases_.size(); ++k) {
    if (!phases_[k].holds_schedule) continue;
    if (states_[k].on) return 1;
    end = std::max(end, states_[k].end);
  }
  return t - end;
}

void StartPhases::write(io::File& file) const {
  for (size_t k = 0; k < phases_.size(); ++k) {
    const std::string& name = phases_[k].name;
    file.set_attr("/state", name, int64_t{states_[k].on ? 1 : 0});
    file.set_attr("/state", name + "_best", states_[k].best);
    file.set_attr("/state", name + "_end", states_[k].end);
  }
}

void StartPhases::read(const io::File& file) {
  for (size_t k = 0; k < phases_.size(); ++k) {
    const std::string& name = phases_[k].name;
    State& s = states_[k];
    s.on = phase_on(file, name, s.on);
    if (file.has_attr("/state", name + "_best")) s.best = file.attr_double("/state", name + "_best");
    if (file.has_attr("/state", name + "_end")) s.end = file.attr_int("/state", name + "_end");
    if (s.end < 0) throw FormatError(file.display_name() + ": /state " + name + "_end is negative");
    phases_[k].set(s.on);
  }
}

}  // namespace detail
}  // namespace attn::train

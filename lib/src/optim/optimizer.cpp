// The Optimizer base: step-number and gradient checks, per-parameter state slots created on
// first use, and their export and import under checkpoint names "<kind>/<slot>/<param>".
#include "attn/optim/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "attn/core/error.hpp"
#include "detail.hpp"

namespace attn::optim {

Optimizer::Optimizer(std::string kind, float lr, std::vector<std::string> slots)
    : kind_(std::move(kind)), slot_names_(std::move(slots)) {
  set_lr(lr);
}

void Optimizer::set_lr(float lr) {
  detail::require(std::isfinite(lr) && lr >= 0.0f, kind_, "lr", "finite and >= 0", lr);
  lr_ = lr;
}

size_t Optimizer::entry_for(const Param& p) {
  auto it = index_.find(p.name);
  if (it == index_.end()) {
    Entry e{p.name, {}, 0};
    for (size_t k = 0; k < slot_names_.size(); ++k) e.slots.push_back(zeros_like(p.value));
    it = index_.emplace(p.name, entries_.size()).first;
    entries_.push_back(std::move(e));
  }
  const Entry& e = entries_[it->second];
  if (!e.slots.empty() && e.slots.front().shape() != p.value.shape())
    throw ShapeError(kind_ + ": parameter '" + p.name + "' has shape " + to_string(p.value.shape()) +
                     ", but its optimizer state has shape " + to_string(e.slots.front().shape()));
  return it->second;
}

void Optimizer::step(const ParamList& params, int64_t t) {
  if (t < 1) throw ConfigError(kind_ + ": step number t must be >= 1, got " + std::to_string(t));
  // Check everything first, so that a bad list throws before any parameter has moved.
  ++calls_;
  resolved_.clear();
  for (const Param* p : params) {
    if (p->value.dtype() != DType::f32 || p->grad.dtype() != DType::f32 ||
        p->grad.shape() != p->value.shape()) {   // no message is built unless something is wrong
      check_tensor(p->value, p->value.shape(), kind_ + ": parameter '" + p->name + "'");
      check_tensor(p->grad, p->value.shape(), kind_ + ": gradient of parameter '" + p->name + "'");
    }
    const size_t i = entry_for(*p);
    if (entries_[i].seen == calls_)
      throw ConfigError(kind_ + ": parameter name '" + p->name + "' appears twice in the list");
    entries_[i].seen = calls_;
    resolved_.push_back(i);
  }
  for (size_t j = 0; j < params.size(); ++j) update(*params[j], entries_[resolved_[j]].slots, t);
}

std::vector<NamedTensor> Optimizer::state() const {
  std::vector<NamedTensor> out;
  out.reserve(entries_.size() * slot_names_.size());
  for (const Entry& e : entries_)
    for (size_t k = 0; k < slot_names_.size(); ++k)
      out.push_back({kind_ + "/" + slot_names_[k] + "/" + e.param, e.slots[k].clone()});
  return out;
}

void Optimizer::load_state(const ParamList& params, const std::vector<NamedTensor>& state) {
  std::unordered_map<std::string, size_t> given;   // entry name -> position in `state`
  for (size_t i = 0; i < state.size(); ++i) {
    const std::string& name = state[i].name;
    bool ours = false;
    for (const std::string& slot : slot_names_) {
      const std::string prefix = kind_ + "/" + slot + "/";
      ours = ours || (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0);
    }
    if (!ours) {
      std::string slots;
      for (const std::string& slot : slot_names_) slots += (slots.empty() ? "" : ", ") + kind_ + "/" + slot + "/";
      throw FormatError("optimizer state '" + name + "' does not belong to " + kind_ +
                        (slots.empty() ? " (which keeps no state)" : " (expected names " + slots + "<param>)") +
                        "; was the checkpoint written with another optimizer or configuration?");
    }
    if (!given.emplace(name, i).second) throw FormatError("optimizer state '" + name + "' appears twice");
  }
  if (state.empty()) {   // the state of an optimizer that has not stepped yet
    entries_.clear();
    index_.clear();
    return;
  }

  std::vector<Entry> entries;
  std::unordered_map<std::string, size_t> index;
  for (const Param* p : params) {
    if (!index.emplace(p->name, entries.size()).second)
      throw ConfigError(kind_ + ": parameter name '" + p->name + "' appears twice in the list");
    Entry e{p->name, {}, 0};
    for (const std::string& slot : slot_names_) {
      const std::string name = kind_ + "/" + slot + "/" + p->name;
      const auto it = given.find(name);
      if (it == given.end())
        throw FormatError("optimizer state has no '" + name + "' for parameter '" + p->name + "'");
      const Tensor& t = state[it->second].value;
      check_tensor(t, p->value.shape(), "optimizer state '" + name + "' (parameter '" + p->name + "')");
      e.slots.push_back(t.clone());
      given.erase(it);
    }
    entries.push_back(std::move(e));
  }
  if (!given.empty()) {
    size_t first = state.size();
    for (const auto& [name, i] : given) first = std::min(first, i);
    throw FormatError("optimizer state '" + state[first].name + "' names no parameter in the list (" +
                      std::to_string(given.size()) + " such entries)");
  }
  entries_ = std::move(entries);
  index_ = std::move(index);
}

}  // namespace attn::optim

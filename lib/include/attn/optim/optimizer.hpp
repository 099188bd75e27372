// The optimizer interface shared by SGD, RMSProp, Adam and AdamW: one update of a ParamList per
// call, the step number and the learning rate given by the caller, and per-parameter state that
// a checkpoint exports and imports by name.
//
// A training step reads, in order:
//
//   zero_grads(params);                      // the caller zeroes; backward passes add (+=)
//   model.backward(...);
//   optim::clip_grad_norm(params, 1.0);      // optional (optim/clip.hpp)
//   opt.set_lr(schedule(t));                 // optional: the rate a schedule gives for step t
//   opt.step(params, t);                     // t = 1, 2, ... (bias corrections use it)
//
// There is no hidden step counter: t is the caller's, and a checkpoint stores it next to
// opt.state(). The learning rate is a plain setting (`lr()`, `set_lr`), so a schedule is a pure
// function of t and resuming at t reproduces the same rate.
//
// State ("slots") is kept per parameter name: Adam keeps "m" and "v" for every parameter, so
// state() yields tensors named "adam/m/<param name>" and "adam/v/<param name>". A slot is
// created, zero-filled, the first time step() sees its parameter. load_state() checks every
// name and shape against the parameters, and a resumed optimizer repeats the uninterrupted
// run's updates bit for bit.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/nn/param.hpp"

namespace attn::optim {

// A tensor with its checkpoint name, e.g. {"adam/m/encoder/layer0/w_q", m}.
struct NamedTensor {
  std::string name;
  Tensor value;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;              // a copy would share the state tensors
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter's value from its grad (grads are read, never zeroed).
  // t: the 1-based step number; t < 1 throws ConfigError. A grad whose shape differs from its
  // value's, or a name that appears twice in `params`, throws (ShapeError, ConfigError) before
  // any parameter is updated.
  void step(const ParamList& params, int64_t t);

  float lr() const { return lr_; }
  // Sets the learning rate for the following steps; throws ConfigError unless finite and >= 0.
  void set_lr(float lr);

  // "sgd", "rmsprop", "adam", "adamw": the prefix of every state name and error message.
  const std::string& kind() const { return kind_; }
  // The slots this configuration keeps per parameter ("m", "v"), in the order state() lists them.
  const std::vector<std::string>& slot_names() const { return slot_names_; }

  // A deep copy of the state: for each parameter seen (in first-seen order), one tensor per
  // slot named "<kind>/<slot>/<param name>". Empty before the first step, and always empty for
  // an optimizer without slots (plain SGD).
  std::vector<NamedTensor> state() const;

  // Replaces the state with a copy of `state`, which must hold exactly one float32 tensor
  // "<kind>/<slot>/<name>" of the parameter's shape for every slot and parameter in `params`.
  // Missing, extra or foreign entries throw FormatError naming the entry and the parameter; a
  // wrong shape throws ShapeError. An empty `state` (what state() returns before the first
  // step) resets the optimizer to fresh. On error the current state is kept unchanged.
  void load_state(const ParamList& params, const std::vector<NamedTensor>& state);

 protected:
  Optimizer(Optimizer&&) noexcept = default;          // protected: no slicing through the base
  Optimizer& operator=(Optimizer&&) noexcept = default;

  // kind: see kind(); lr: the initial rate (validated); slots: the per-parameter state names.
  Optimizer(std::string kind, float lr, std::vector<std::string> slots);

  // Updates one parameter; `slots` holds one tensor per slot name, shaped like p.value.
  virtual void update(Param& p, std::span<Tensor> slots, int64_t t) = 0;

 private:
  struct Entry {
    std::string param;            // parameter name
    std::vector<Tensor> slots;    // one per slot_names_[k]
    uint64_t seen = 0;            // the step() call that last used it (catches duplicate names)
  };

  size_t entry_for(const Param& p);   // position in entries_, created zero-filled on first use

  std::string kind_;
  float lr_ = 0.0f;
  std::vector<std::string> slot_names_;
  std::vector<Entry> entries_;                          // in first-seen order
  std::unordered_map<std::string, size_t> index_;       // parameter name -> entries_ position
  uint64_t calls_ = 0;                // step() calls: only to catch a name listed twice in one step
  std::vector<size_t> resolved_;      // step(): entries_ position of each parameter (reused)
};

}  // namespace attn::optim

// Whole-model speed of the neural Turing machine on the copy task, the attnlab side of
// experiments/perf/ntm (run.sh puts it beside the same model in PyTorch, torch_ntm.py): full
// training steps (zero grads, Ntm::train_step, clip every gradient to [-10, 10], RMSProp in
// Graves' form); target sequences/s and ms per sequence.
//
// Model (ntm::Ntm, Collier & Beel's parameterisation): copy task of 8 bits (input width 9,
// output 8), LSTM controller of 100 units (1 layer), memory 128 x 20 with constant init, one
// write and one read head, shifts -1..1. Optimizer optim::RmsPropConfig::graves2013().
//
// Data: a pool of --sequences copy sequences of lengths 1-20, datasets::make_copy(width 8,
// lengths 1..20, train split of --sequences, seed --seed). One repetition trains on the whole
// pool in order, in consecutive batches of --batch (each batch cut to its longest sequence,
// SequenceSplit::gather); the model keeps training from one repetition to the next.
//
// --export FILE writes what the PyTorch twin needs to run the same model on the same data, and
// to check that it is the same model, then exits without timing:
//   /train/{inputs, input_len, targets, target_len}  the pool (data/sequence_data.hpp)
//   /params/<name>        the initial parameters, attnlab's names and layouts (families/ntm/model.hpp)
//   /check/grads/<name>   the gradients of one train_step on the first --batch sequences of the
//                         pool from those parameters; root attributes check_loss (the mean loss
//                         over those sequences, nats: what the gradient is of), check_batch, seed
//   /check/after/<name>   the parameters after --check-steps full training steps from the same
//                         start, on consecutive batches of --batch sequences of the pool (root
//                         attribute check_steps): checks the clipping and the optimizer too
//
// Otherwise prints one line of key=value pairs:
//   impl=attnlab mode=train-b<B> threads=1 batch=B sequences_per_s=... ms_per_sequence=...
//   median_s=... min_s=... max_s=... cpu_sequences_per_s=... params=... sequences=...
// (seconds per repetition; the rates over the median time, cpu_ over the process's CPU time).
#include <cstdio>
#include <numeric>
#include <vector>

#include "attn/core/threading.hpp"
#include "attn/data/sequence_data.hpp"
#include "attn/datasets/ntm_tasks.hpp"
#include "attn/families/ntm/model.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/optim/clip.hpp"
#include "attn/optim/rmsprop.hpp"
#include "perf_util.hpp"

namespace {

using namespace attn;

ntm::NtmConfig copy_config() {
  ntm::NtmConfig c;
  c.input_size = 9;
  c.output_size = 8;
  c.controller = ntm::NtmController::lstm;
  c.controller_size = 100;
  c.controller_layers = 1;
  c.memory_rows = 128;
  c.memory_width = 20;
  c.read_heads = 1;
  c.write_heads = 1;
  c.shift_range = 1;
  c.memory_init = ntm::NtmMemoryInit::constant;
  return c;
}

// Sequences [begin, end) of the pool, cut to the longest of them.
data::SequenceBatch slice(const data::SequenceSplit& pool, int64_t begin, int64_t end) {
  std::vector<int64_t> index(static_cast<size_t>(end - begin));
  std::iota(index.begin(), index.end(), begin);
  return pool.gather(index);
}

// One full training step: zero grads, forward and backward, clip by value at 10, RMSProp.
void train(ntm::Ntm& model, const ParamList& params, const data::SequenceBatch& batch, optim::RmsProp& rmsprop,
           int64_t t) {
  zero_grads(params);
  Rng memory(0);   // unused with constant memory
  model.train_step(batch, memory);
  optim::clip_grad_value(params, 10.0f);
  rmsprop.step(params, t);
}

void write_export(const std::string& path, const data::SequenceSplit& pool, ntm::Ntm& model, int64_t B, int64_t steps,
                  uint64_t seed) {
  io::File file = io::File::create(path);
  data::write_sequence_split(file, "train", pool);
  const ParamList params = model.params();
  for (const Param* p : params) file.write("params/" + p->name, p->value);
  zero_grads(params);
  Rng memory(0);   // unused with constant memory
  const ntm::NtmStats s = model.train_step(slice(pool, 0, B), memory);
  for (const Param* p : params) file.write("check/grads/" + p->name, p->grad);
  file.set_attr("/", "check_loss", s.bce_nats / static_cast<double>(s.sequences));
  file.set_attr("/", "check_batch", B);
  file.set_attr("/", "seed", static_cast<int64_t>(seed));
  optim::RmsProp rmsprop(optim::RmsPropConfig::graves2013());
  const int64_t n = pool.size();
  for (int64_t t = 1; t <= steps; ++t) {
    const int64_t b = ((t - 1) * B) % n;
    train(model, params, slice(pool, b, b + B), rmsprop, t);
  }
  for (const Param* p : params) file.write("check/after/" + p->name, p->value);
  file.set_attr("/", "check_steps", steps);
  file.commit();
  std::printf("export=%s sequences=%lld check_batch=%lld check_loss=%.9g\n", path.c_str(),
              static_cast<long long>(pool.size()), static_cast<long long>(B), s.bce_nats / s.sequences);
}

}  // namespace

int main(int argc, char** argv) {
  const perf::Args args(argc, argv,
                        {{"threads", "1"}, {"batch", "1"}, {"sequences", "64"}, {"steps", "5"}, {"warmup", "1"},
                         {"seed", "1"}, {"export", ""}, {"check-steps", "20"}});
  set_num_threads(static_cast<int>(args.integer("threads")));
  const int64_t B = args.integer("batch"), n = args.integer("sequences");
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed"));
  if (B < 1 || n < B || n % B != 0) {
    std::fprintf(stderr, "perf_ntm: --sequences (%lld) must be a positive multiple of --batch (%lld)\n",
                 static_cast<long long>(n), static_cast<long long>(B));
    return 2;
  }
  const data::SequenceSplit pool =
      datasets::make_copy({.width = 8, .min_len = 1, .max_len = 20}, {.train = n, .valid = 0, .test = 0}, seed).train;

  Rng init(seed);
  ntm::Ntm model(copy_config(), init);
  const ParamList plist = model.params();
  int64_t params = 0;
  for (const Param* p : plist) params += p->value.numel();
  if (!args.str("export").empty()) {
    write_export(args.str("export"), pool, model, B, args.integer("check-steps"), seed);
    return 0;
  }

  std::vector<data::SequenceBatch> batches;
  for (int64_t b = 0; b < n; b += B) batches.push_back(slice(pool, b, b + B));
  optim::RmsProp rmsprop(optim::RmsPropConfig::graves2013());
  int64_t t = 0;
  auto repetition = [&] {
    for (const data::SequenceBatch& batch : batches) train(model, plist, batch, rmsprop, ++t);
  };
  const perf::Times times = perf::time_reps(args.integer("warmup"), args.integer("steps"), repetition);
  const double med = perf::median(times.wall), seqs = static_cast<double>(n);
  std::printf(
      "impl=attnlab mode=train-b%lld threads=%d batch=%lld sequences_per_s=%.1f ms_per_sequence=%.3f median_s=%.4f "
      "min_s=%.4f max_s=%.4f cpu_sequences_per_s=%.1f params=%lld sequences=%lld\n",
      static_cast<long long>(B), num_threads(), static_cast<long long>(B), seqs / med, 1e3 * med / seqs, med,
      times.wall.front(), times.wall.back(), seqs / perf::median(times.cpu), static_cast<long long>(params),
      static_cast<long long>(n));
  return 0;
}

// Whole-model speed of the end-to-end memory network (memnet::MemN2N) on bAbI, the attnlab side
// of experiments/perf/memnet (run.sh puts it beside the same model in PyTorch, torch_memnet.py):
// full training steps as attn-memnet train takes them (zero grads, MemN2N::train_step, clip the
// gradient's global norm at 1.25, SGD at lr 0.32), in questions/s and microseconds per question.
//
// Model: the paper's MemN2N with attn-memnet's defaults: position encoding (the paper's),
// temporal encoding, adjacent tying, 3 hops, memory_size 50, E = --embedding-size (20 on one
// task, 50 joint), V = the data set's vocabulary. No random noise and no linear start: the timed
// step is the plain one, and the PyTorch twin draws nothing either.
//
// Data: --data, a bAbI data set of attn-data babi (one task or all 20). The pool is --questions
// questions of its /train split in a random order (seed --seed; the split again, reshuffled,
// when the pool is larger). One repetition trains on the pool in consecutive batches of --batch,
// each gathered as the trainer gathers its batches (QaSplit::gather: the memory cut to the
// batch's longest story); the model keeps training from one repetition to the next.
//
// --export FILE writes what the PyTorch twin needs to run the same model on the same data, and
// to check that it is the same model, then exits without timing:
//   /pool/index           int32 [Q]: the pool's rows of /train (the twin reads --data itself)
//   /params/<name>        the initial parameters, attnlab's names and layouts (families/memnet/model.hpp)
//   /check/grads/<name>   the gradients of one train_step on the pool's first --batch questions
//                         from those parameters; root attributes check_loss (their mean loss,
//                         nats: what the gradient is of), check_batch, seed
//   /check/after/<name>   the parameters after --check-steps full training steps (clipping and
//                         SGD included) from the same start on the pool's consecutive batches
//   root attributes vocab_size, embedding_size, hops, memory_size, clip, lr, check_steps
//
// Otherwise prints one line of key=value pairs:
//   impl=attnlab mode=train-<tag>-b<B> threads=1 batch=B questions_per_s=... us_per_question=...
//   median_s=... min_s=... max_s=... cpu_questions_per_s=... params=... questions=...
// (seconds per repetition; the rates over the median time, cpu_ over the process's CPU time).
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "attn/core/threading.hpp"
#include "attn/families/memnet/model.hpp"
#include "attn/families/memnet/qa_data.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/optim/clip.hpp"
#include "attn/optim/sgd.hpp"
#include "perf_util.hpp"

namespace {

using namespace attn;

// attn-memnet train's defaults (apps/memnet/train_verb.cpp): the paper's rate and clipping
// rescaled to a loss averaged over the batch.
constexpr float kLr = 0.32f;
constexpr double kClip = 1.25;

// Q rows of an N-row split: permutations of 0..N-1 (Fisher-Yates from rng) one after another.
std::vector<int64_t> pool_index(int64_t N, int64_t Q, Rng& rng) {
  std::vector<int64_t> index;
  std::vector<int64_t> perm(static_cast<size_t>(N));
  while (static_cast<int64_t>(index.size()) < Q) {
    std::iota(perm.begin(), perm.end(), int64_t{0});
    for (int64_t i = N - 1; i > 0; --i) std::swap(perm[i], perm[rng.uniform_int(i + 1)]);
    for (int64_t i = 0; i < N && static_cast<int64_t>(index.size()) < Q; ++i) index.push_back(perm[i]);
  }
  return index;
}

// The pool's consecutive batches, each gathered from the split as the trainer gathers them.
std::vector<memnet::QaBatch> make_batches(const memnet::QaSplit& train, const std::vector<int64_t>& index, int64_t B) {
  std::vector<memnet::QaBatch> batches;
  for (size_t b = 0; b < index.size(); b += static_cast<size_t>(B))
    batches.push_back(train.gather(std::span<const int64_t>(index).subspan(b, static_cast<size_t>(B))));
  return batches;
}

// One full training step: zero grads, forward and backward (no noise), clip, SGD.
void train(memnet::MemN2N& model, const ParamList& params, const memnet::QaBatch& batch, optim::Sgd& sgd, int64_t t) {
  zero_grads(params);
  model.train_step(batch);
  optim::clip_grad_norm(params, kClip);
  sgd.step(params, t);
}

void write_export(const std::string& path, const std::vector<int64_t>& index,
                  const std::vector<memnet::QaBatch>& batches, memnet::MemN2N& model, int64_t steps, uint64_t seed) {
  io::File file = io::File::create(path);
  file.write("pool/index", Tensor::from_ints({static_cast<int64_t>(index.size())},
                                              std::vector<int32_t>(index.begin(), index.end())));
  const ParamList params = model.params();
  for (const Param* p : params) file.write("params/" + p->name, p->value);
  zero_grads(params);
  const memnet::MemN2NStats s = model.train_step(batches.front());
  for (const Param* p : params) file.write("check/grads/" + p->name, p->grad);
  const double loss = s.loss_nats / static_cast<double>(s.questions);
  const memnet::MemN2NConfig& c = model.config();
  file.set_attr("/", "check_loss", loss);
  file.set_attr("/", "check_batch", s.questions);
  file.set_attr("/", "seed", static_cast<int64_t>(seed));
  file.set_attr("/", "vocab_size", c.vocab_size);
  file.set_attr("/", "embedding_size", c.embedding_size);
  file.set_attr("/", "hops", c.hops);
  file.set_attr("/", "memory_size", c.memory_size);
  file.set_attr("/", "lr", static_cast<double>(kLr));
  file.set_attr("/", "clip", kClip);
  optim::Sgd sgd({.lr = kLr});
  for (int64_t t = 1; t <= steps; ++t) train(model, params, batches[static_cast<size_t>(t - 1) % batches.size()], sgd, t);
  for (const Param* p : params) file.write("check/after/" + p->name, p->value);
  file.set_attr("/", "check_steps", steps);
  file.commit();
  std::printf("export=%s questions=%lld check_batch=%lld check_loss=%.9g\n", path.c_str(),
              static_cast<long long>(index.size()), static_cast<long long>(s.questions), loss);
}

}  // namespace

int main(int argc, char** argv) {
  const perf::Args args(argc, argv,
                        {{"data", ""}, {"tag", "babi"}, {"embedding-size", "20"}, {"threads", "1"}, {"batch", "32"},
                         {"questions", "2048"}, {"steps", "5"}, {"warmup", "1"}, {"seed", "1"}, {"export", ""},
                         {"check-steps", "20"}});
  set_num_threads(static_cast<int>(args.integer("threads")));
  const int64_t B = args.integer("batch"), Q = args.integer("questions");
  const uint64_t seed = static_cast<uint64_t>(args.integer("seed"));
  if (args.str("data").empty() || B < 1 || Q < B || Q % B != 0) {
    std::fprintf(stderr, "perf_memnet: --data FILE is required; --questions (%lld) must be a positive multiple of "
                         "--batch (%lld)\n", static_cast<long long>(Q), static_cast<long long>(B));
    return 2;
  }
  const io::File data = io::File::open_read(args.str("data"));
  const int64_t V = memnet::read_qa_vocab(data).size();
  const memnet::QaSplit train_split = memnet::read_qa_split(data, "train", V);
  Rng shuffle(seed);
  const std::vector<int64_t> index = pool_index(train_split.size(), Q, shuffle);
  const std::vector<memnet::QaBatch> batches = make_batches(train_split, index, B);

  memnet::MemN2NConfig c;   // the defaults are attn-memnet's: PE, temporal, adjacent, 3 hops, Mm 50
  c.vocab_size = V;
  c.embedding_size = args.integer("embedding-size");
  Rng init(seed);
  memnet::MemN2N model(c, init);
  const ParamList plist = model.params();
  int64_t params = 0;
  for (const Param* p : plist) params += p->value.numel();
  if (!args.str("export").empty()) {
    write_export(args.str("export"), index, batches, model, args.integer("check-steps"), seed);
    return 0;
  }

  optim::Sgd sgd({.lr = kLr});
  int64_t t = 0;
  auto repetition = [&] {
    for (const memnet::QaBatch& batch : batches) train(model, plist, batch, sgd, ++t);
  };
  const perf::Times times = perf::time_reps(args.integer("warmup"), args.integer("steps"), repetition);
  const double med = perf::median(times.wall), q = static_cast<double>(Q);
  std::printf(
      "impl=attnlab mode=train-%s-b%lld threads=%d batch=%lld questions_per_s=%.1f us_per_question=%.3f "
      "median_s=%.4f min_s=%.4f max_s=%.4f cpu_questions_per_s=%.1f params=%lld questions=%lld\n",
      args.str("tag").c_str(), static_cast<long long>(B), num_threads(), static_cast<long long>(B), q / med,
      1e6 * med / q, med, times.wall.front(), times.wall.back(), q / perf::median(times.cpu),
      static_cast<long long>(params), static_cast<long long>(Q));
  return 0;
}

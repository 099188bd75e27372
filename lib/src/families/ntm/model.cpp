// ntm::Ntm: construction, the forward over a batch of sequences, the loss, and the backward
// (the forward's steps in reverse order). The configuration is in ntm_config.cpp; the
// addressing of one head is ops::head_address_row_forward/backward, the controller's LSTM step
// ops::lstm_rows_forward/backward, and every product (controller, heads, output) one of
// ops::linear_rows_*'s, on the rows of one step or of all T*B rows.
//
// Buffers (time-major, allocated once per call; row (t, b) is t * B + b). The letters are
// docs/ARCHITECTURE.md's; Dims names them Win = I, Wout = O, N = Nm, S = Ns, R = Nr, W = Nw,
// NH = Nr + Nw (every head), P = Np (ntm.hpp), Z = head_address_saved_size(Nm) = 4Nm + 3:
//   X     [T*B, I]                 x_t, zero outside the input phase
//   GX_l  [T*B, G]                 controller layer l's gates: pre-activations, then (LSTM) the
//                                  activated i, f, g, o in place
//   C_l   [T*B, H]                 LSTM cell states c_t
//   Hl_l  [T*B, H]                 controller layer l's outputs; the top one is h_t
//   Pre   [T*B, Np]                every head's raw parameters (one GEMM per step);  Act: activated
//   Wt    [(T+1)*B, Nr + Nw, Nm]   weightings w_0 .. w_T, write heads first (block 0: one-hot)
//   Sv    [T*B, Nr + Nw, 4Nm + 3]  what each head's addressing keeps for its backward
//   Mem   [(T*Nw+1)*B, Nm, M]      memory stages: stage t*Nw + h is the memory before write head h
//                                  at step t, so stage t*Nw is M_{t-1} and stage (t+1)*Nw is M_t
//   Nrm   [(T+1)*B, Nm]            row norms of stage t*Nw (one block when Nw = 0: memory never
//                                  changes)
//   Rd    [(T+1)*B, Nr*M]          read vectors r_0 .. r_T
// Without a backward (evaluate, run), Mem keeps only the Nw + 1 stages of one step, Nrm two
// blocks and Sv one step, as rings: evaluating many sequences at once stays small.
#include "attn/families/ntm/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <omp.h>

#include "attn/core/flops.hpp"
#include "attn/core/row_blocks.hpp"
#include "attn/core/threading.hpp"
#include "attn/ops/activation.hpp"
#include "attn/ops/addressing.hpp"
#include "attn/ops/linear.hpp"
#include "attn/ops/lstm_cell.hpp"

namespace attn::ntm {
namespace {

using ops::sigmoid;

// log(1 + e^x) without overflow (x for large x) or loss of the small values.
inline float softplus(float x) { return x > 0.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

struct Dims {
  int64_t B = 0, T = 0, Tin = 0, Tout = 0;
  int64_t Win = 0, Wout = 0, H = 0, L = 0, G = 0;   // G: controller gate width (4H or H)
  int64_t N = 0, M = 0, S = 0, R = 0, W = 0, NH = 0, P = 0, RM = 0, Z = 0;
  std::vector<int64_t> off;                         // [Nr + Nw] a head's first column in a Pre row
  bool lstm = true;
};

}  // namespace

struct NtmImpl {
  struct Run {
    Dims d;
    std::vector<int32_t> in_len, tgt_len;
    std::vector<int64_t> end;              // [B] in_len + tgt_len: the example's steps
    Tensor X;
    std::vector<Tensor> GX, C, Hl;         // per controller layer (C: lstm only)
    Tensor Pre, Act, Wt, Sv, Mem, Nrm, Rd;
    Tensor logits;                         // [T*B, O]
    // Blocks each ring holds: every stage / step when training, else the ones a step uses.
    int64_t mem_stages = 1, norm_blocks = 1, saved_steps = 1;
  };

  static Dims dims(const Ntm& m, const SequenceBatch& batch);
  // keep_all: keep what the backward needs (train_step), else rings (see above).
  static void forward(const Ntm& m, const SequenceBatch& batch, Rng* memory_rng, bool keep_all, Run& run);
  static NtmStats loss(const Run& run, const SequenceBatch& batch, float* dlogits, float* outputs);
  static void backward(Ntm& m, Run& run, const Tensor& dlogits);

  // Per batch row b of step t (the parallel tasks).
  static void memory_forward(Run& run, int64_t t, int64_t b);
  static void memory_backward(Run& run, int64_t t, int64_t b, float* dPre, const float* dRd, float* dM,
                              float* dWc, float* dWp, float* scratch);

  // Controller layer l's parameters, for either controller: the input weights [G, I_l]
  // (W_ih or W), the bias [G] (b), the recurrent weights [G, H] (W_hh; lstm only).
  static Param& input_weights(Ntm& m, int64_t l) { return m.lstm_.empty() ? m.ff_[l].W : m.lstm_[l].W_ih; }
  static Param& bias(Ntm& m, int64_t l) { return m.lstm_.empty() ? m.ff_[l].b : m.lstm_[l].b_ih; }
  static const Param& input_weights(const Ntm& m, int64_t l) {
    return m.lstm_.empty() ? m.ff_[l].W : m.lstm_[l].W_ih;
  }
  static const Param& bias(const Ntm& m, int64_t l) { return m.lstm_.empty() ? m.ff_[l].b : m.lstm_[l].b_ih; }
};

namespace {

using Impl = NtmImpl;

// Index helpers into the run's buffers (rings when the run keeps only what a step uses).
inline int64_t stage(const Dims& d, int64_t t) { return t * d.W; }          // memory M_{t-1}

float* mem_at(Impl::Run& r, int64_t s, int64_t b) {
  return r.Mem.data() + ((s % r.mem_stages) * r.d.B + b) * r.d.N * r.d.M;
}
float* norm_at(Impl::Run& r, int64_t t, int64_t b) {   // norms of stage t*Nw
  return r.Nrm.data() + ((r.d.W > 0 ? t % r.norm_blocks : 0) * r.d.B + b) * r.d.N;
}
float* w_at(Impl::Run& r, int64_t t, int64_t b, int64_t h) {
  return r.Wt.data() + ((t * r.d.B + b) * r.d.NH + h) * r.d.N;
}
float* saved_at(Impl::Run& r, int64_t t, int64_t b, int64_t h) {
  return r.Sv.data() + (((t % r.saved_steps) * r.d.B + b) * r.d.NH + h) * r.d.Z;
}

// One head's addressing inputs from its activated parameters `act` (its first column).
ops::HeadAddressRow head_row(const Dims& d, const float* act, const float* w_prev, const float* mem,
                             const float* norms) {
  return {act, act[d.M], act[d.M + 1], act + d.M + 2, act[d.M + 2 + d.S], w_prev, mem, norms};
}

// Activated head parameters (see ntm.hpp) for one Pre row.
void activate_heads(const Dims& d, const float* pre, float* act) {
  const int64_t M = d.M, S = d.S;
  for (int64_t h = 0; h < d.NH; ++h) {
    const float* p = pre + d.off[h];
    float* a = act + d.off[h];
    for (int64_t m = 0; m < M; ++m) a[m] = std::tanh(p[m]);   // k
    a[M] = softplus(p[M]);                                     // β
    a[M + 1] = sigmoid(p[M + 1]);                              // g
    float mx = p[M + 2];                                       // s = softmax
    for (int64_t j = 1; j < S; ++j) mx = std::max(mx, p[M + 2 + j]);
    float sum = 0.0f;
    for (int64_t j = 0; j < S; ++j) sum += a[M + 2 + j] = std::exp(p[M + 2 + j] - mx);
    for (int64_t j = 0; j < S; ++j) a[M + 2 + j] /= sum;
    a[M + 2 + S] = 1.0f + softplus(p[M + 2 + S]);             // γ
    if (h < d.W) {
      const int64_t e0 = M + 3 + S;
      for (int64_t m = 0; m < M; ++m) a[e0 + m] = sigmoid(p[e0 + m]);               // e
      for (int64_t m = 0; m < M; ++m) a[e0 + M + m] = std::tanh(p[e0 + M + m]);     // a
    }
  }
}

// da (the gradient w.r.t. the activated parameters, in place) -> the gradient w.r.t. pre.
void activate_heads_backward(const Dims& d, const float* pre, const float* act, float* da) {
  const int64_t M = d.M, S = d.S;
  for (int64_t h = 0; h < d.NH; ++h) {
    const float* p = pre + d.off[h];
    const float* a = act + d.off[h];
    float* g = da + d.off[h];
    for (int64_t m = 0; m < M; ++m) g[m] *= 1.0f - a[m] * a[m];
    g[M] *= sigmoid(p[M]);
    g[M + 1] *= a[M + 1] * (1.0f - a[M + 1]);
    float dot = 0.0f;
    for (int64_t j = 0; j < S; ++j) dot += g[M + 2 + j] * a[M + 2 + j];
    for (int64_t j = 0; j < S; ++j) g[M + 2 + j] = a[M + 2 + j] * (g[M + 2 + j] - dot);
    g[M + 2 + S] *= sigmoid(p[M + 2 + S]);
    if (h < d.W) {
      const int64_t e0 = M + 3 + S;
      for (int64_t m = 0; m < M; ++m) g[e0 + m] *= a[e0 + m] * (1.0f - a[e0 + m]);
      for (int64_t m = 0; m < M; ++m) g[e0 + M + m] *= 1.0f - a[e0 + M + m] * a[e0 + M + m];
    }
  }
}

// Runs steps(b0, b1), a whole time loop over batch rows [b0, b1), in ONE parallel region: every
// thread takes one contiguous block of rows and runs all T steps on it, so a step costs no
// barrier (the rows are independent sequences, and every product and memory operation in the
// loops is row by row). The blocks split the rows' cost (`cost`, one entry per row) evenly.
// With one thread it is steps(0, B), the same calls as a plain loop. At batch 1 the second
// thread has no rows and waits: what matters is that the products then run inside a parallel
// region, where the BLAS seam and OpenBLAS keep them on the calling thread (a step's gemvs are
// far too small for a team; OpenBLAS would otherwise split the 400 x 100 ones over both threads,
// with a barrier each, which costs most when the machine is busy).
template <class Steps>
void over_row_blocks(const std::vector<int64_t>& cost, const Steps& steps) {
  attn::over_row_blocks(cost, in_parallel_region() ? 1 : num_parts(), steps);
}

// Each row's share of a time loop's work, for over_row_blocks: T controller steps, and the
// memory work of the steps before the example's end (a finished row skips it), which costs
// about twice a controller step (counted in instructions: experiments/perf/ntm, "What attnlab's
// model does for this").
std::vector<int64_t> row_costs(const Impl::Run& run) {
  constexpr int64_t kMemoryStepCost = 2;   // per controller step
  std::vector<int64_t> cost(run.end.size());
  for (size_t b = 0; b < cost.size(); ++b) cost[b] = run.d.T + kMemoryStepCost * run.end[b];
  return cost;
}

// Multiply-adds of one batch row's memory work in a step (the ops' conventions: dot products,
// shifts, reads and writes).
int64_t memory_flops_forward(const Dims& d) {
  return (d.W > 0 ? d.N * d.M : 0) + d.NH * (d.M + d.N * d.M + d.N * d.S + 3 * d.N) + 2 * d.W * d.N * d.M +
         d.R * d.N * d.M;
}
int64_t memory_flops_backward(const Dims& d) {
  return d.NH * (d.M + 3 * d.N * d.M + 2 * d.N * d.S + 4 * d.N) + 4 * d.W * d.N * d.M + 2 * d.R * d.N * d.M;
}

}  // namespace

// ---- construction ----------------------------------------------------------------------------

Ntm::Ntm(const NtmConfig& config, Rng& init) : config_(config) {
  config.validate();
  const NtmConfig& c = config_;
  const int64_t H = c.controller_size, RM = c.read_heads * c.memory_width;
  for (int64_t l = 0; l < c.controller_layers; ++l) {
    const std::string name = "controller/layer" + std::to_string(l);
    const int64_t I = l == 0 ? c.input_size + RM : H;
    if (c.controller == NtmController::lstm) lstm_.emplace_back(nn::RnnCell::lstm, I, H, name, init);
    else ff_.emplace_back(I, H, name, init);
  }
  const int64_t P = c.head_params();
  if (P > 0) {
    // One Glorot matrix per head (fan-in H, fan-out the head's rows), stacked: heads_W_ rows.
    heads_W_ = Tensor({P, H});
    heads_dW_ = Tensor({P, H});
    heads_b_ = Tensor({P});
    heads_db_ = Tensor({P});
    heads_.reserve(2 * (c.write_heads + c.read_heads));
    int64_t row = 0;
    for (int64_t h = 0; h < c.write_heads + c.read_heads; ++h) {
      const bool write = h < c.write_heads;
      const int64_t rows = write ? c.write_head_size() : c.read_head_size();
      const std::string name =
          "heads/" + (write ? "write" + std::to_string(h) : "read" + std::to_string(h - c.write_heads));
      Tensor W = heads_W_.rows(row, row + rows);
      W.copy_from(nn::Linear(H, rows, name, init).W.value);
      Param pw(name + "/W", W);
      pw.grad = heads_dW_.rows(row, row + rows);
      Param pb(name + "/b", heads_b_.rows(row, row + rows));
      pb.grad = heads_db_.rows(row, row + rows);
      heads_.push_back(std::move(pw));
      heads_.push_back(std::move(pb));
      row += rows;
    }
  }
  output_ = nn::Linear(H + RM, c.output_size, "output", init);
  if (c.has_memory() && c.memory_init == NtmMemoryInit::learned)
    memory_init_ = Param("memory/init", rand_uniform({c.memory_rows, c.memory_width}, init, -0.1f, 0.1f));
}

ParamList Ntm::params() {
  ParamList list;
  for (nn::Rnn& r : lstm_) nn::append(list, r.params());
  for (nn::Linear& f : ff_) nn::append(list, f.params());
  for (Param& p : heads_) list.push_back(&p);
  nn::append(list, output_.params());
  if (memory_init_.value.defined()) list.push_back(&memory_init_);
  return list;
}

// ---- forward ---------------------------------------------------------------------------------

Dims NtmImpl::dims(const Ntm& m, const SequenceBatch& batch) {
  const NtmConfig& c = m.config_;
  Dims d;
  check_tensor(batch.inputs, {kAny, kAny, c.input_size}, "ntm: inputs [B, Tin, Win]");
  d.B = batch.inputs.dim(0);
  d.Tin = batch.inputs.dim(1);
  if (d.B == 0) throw ShapeError("ntm: inputs [B, Tin, Win] has B = 0 (an empty batch)");
  check_tensor(batch.input_len, {d.B}, "ntm: input_len [B]", DType::i32);
  check_tensor(batch.targets, {d.B, kAny, c.output_size}, "ntm: targets [B, Tout, Wout]");
  check_tensor(batch.target_len, {d.B}, "ntm: target_len [B]", DType::i32);
  d.Tout = batch.targets.dim(1);
  for (int64_t b = 0; b < d.B; ++b) {
    const int32_t in = batch.input_len.idata()[b], out = batch.target_len.idata()[b];
    if (in < 0 || in > d.Tin)
      throw DataError("ntm: input_len[" + std::to_string(b) + "] = " + std::to_string(in) + " is outside [0, Tin = " +
                      std::to_string(d.Tin) + "]");
    if (out < 0 || out > d.Tout)
      throw DataError("ntm: target_len[" + std::to_string(b) + "] = " + std::to_string(out) +
                      " is outside [0, Tout = " + std::to_string(d.Tout) + "]");
    d.T = std::max<int64_t>(d.T, in + out);
  }
  d.Win = c.input_size;
  d.Wout = c.output_size;
  d.H = c.controller_size;
  d.L = c.controller_layers;
  d.lstm = c.controller == NtmController::lstm;
  d.G = d.lstm ? 4 * d.H : d.H;
  d.N = c.memory_rows;
  d.M = c.memory_width;
  d.S = c.shifts();
  d.R = c.read_heads;
  d.W = c.write_heads;
  d.NH = d.R + d.W;
  d.P = c.head_params();
  d.RM = d.R * d.M;
  d.Z = ops::head_address_saved_size(d.N);
  int64_t col = 0;
  for (int64_t h = 0; h < d.NH; ++h) {
    d.off.push_back(col);
    col += h < d.W ? c.write_head_size() : c.read_head_size();
  }
  return d;
}

void NtmImpl::memory_forward(Run& run, int64_t t, int64_t b) {
  const Dims& d = run.d;
  const int64_t N = d.N, M = d.M, row = t * d.B + b;
  const ops::HeadAddressDims ad{N, M, d.S};
  const float* pre = run.Pre.data() + row * d.P;
  float* act = run.Act.data() + row * d.P;
  activate_heads(d, pre, act);

  // Write heads: every one addresses M_{t-1}; then erase and add, in head order.
  const float* prev = mem_at(run, stage(d, t), b);
  const float* prev_norms = norm_at(run, t, b);
  for (int64_t h = 0; h < d.W; ++h)
    ops::head_address_row_forward(ad, head_row(d, act + d.off[h], w_at(run, t, b, h), prev, prev_norms),
                                  w_at(run, t + 1, b, h), saved_at(run, t, b, h));
  for (int64_t h = 0; h < d.W; ++h) {
    const float* w = w_at(run, t + 1, b, h);
    const float* e = act + d.off[h] + M + 3 + d.S;
    const float* a = e + M;
    const float* in = mem_at(run, stage(d, t) + h, b);
    float* out = mem_at(run, stage(d, t) + h + 1, b);
    for (int64_t i = 0; i < N; ++i) {
      const float wi = w[i];
      for (int64_t j = 0; j < M; ++j) out[i * M + j] = in[i * M + j] * (1.0f - wi * e[j]) + wi * a[j];
    }
  }
  const float* mem = mem_at(run, stage(d, t + 1), b);
  float* norms = norm_at(run, t + 1, b);
  if (d.W > 0) ops::memory_row_norms(mem, N, M, norms);

  // Read heads: address M_t and read r = w^T M_t.
  float* r = run.Rd.data() + ((t + 1) * d.B + b) * d.RM;
  for (int64_t h = d.W; h < d.NH; ++h) {
    float* w = w_at(run, t + 1, b, h);
    ops::head_address_row_forward(ad, head_row(d, act + d.off[h], w_at(run, t, b, h), mem, norms), w,
                                  saved_at(run, t, b, h));
    float* rh = r + (h - d.W) * M;
    std::fill(rh, rh + M, 0.0f);
    for (int64_t i = 0; i < N; ++i) {
      const float wi = w[i];
      for (int64_t j = 0; j < M; ++j) rh[j] += wi * mem[i * M + j];
    }
  }
}

void NtmImpl::forward(const Ntm& m, const SequenceBatch& batch, Rng* memory_rng, bool keep_all, Run& run) {
  const NtmConfig& c = m.config_;
  run.d = dims(m, batch);
  const Dims& d = run.d;
  const int64_t B = d.B, T = d.T, H = d.H, G = d.G, N = d.N, M = d.M, RM = d.RM;
  run.in_len.assign(batch.input_len.idata(), batch.input_len.idata() + B);
  run.tgt_len.assign(batch.target_len.idata(), batch.target_len.idata() + B);
  run.end.resize(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) run.end[b] = run.in_len[b] + run.tgt_len[b];

  // x_t for t < input_len[b], else zeros; time-major.
  run.X = Tensor({T * B, d.Win});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < run.in_len[b]; ++t)
      std::memcpy(run.X.data() + (t * B + b) * d.Win, batch.inputs.data() + (b * d.Tin + t) * d.Win,
                  static_cast<size_t>(d.Win) * sizeof(float));
  run.GX.assign(d.L, Tensor());
  run.C.assign(d.L, Tensor());
  run.Hl.assign(d.L, Tensor());
  for (int64_t l = 0; l < d.L; ++l) {
    run.GX[l] = Tensor::uninitialized({T * B, G});
    run.Hl[l] = Tensor::uninitialized({T * B, H});
    if (d.lstm) run.C[l] = Tensor::uninitialized({T * B, H});
  }
  // The x_t part of layer 0's input projection, with its bias, for every step at once.
  ops::linear_rows_forward(run.X.data(), d.Win, T * B, input_weights(m, 0).value, /*col=*/0, d.Win,
                           bias(m, 0).value.data(), 0.0f, run.GX[0].data(), G);

  // The initial state: M_0, its norms, w_0 one-hot on row 0, r_0 = row 0 of M_0.
  if (c.has_memory()) {
    run.Pre = Tensor::uninitialized({T * B, d.P});
    run.Act = Tensor::uninitialized({T * B, d.P});
    run.mem_stages = keep_all ? T * d.W + 1 : d.W + 1;
    run.norm_blocks = d.W == 0 ? 1 : keep_all ? T + 1 : 2;
    run.saved_steps = keep_all ? std::max<int64_t>(T, 1) : 1;
    run.Wt = Tensor::uninitialized({(T + 1) * B, d.NH, N});
    run.Sv = Tensor::uninitialized({run.saved_steps * B, d.NH, d.Z});
    run.Mem = Tensor::uninitialized({run.mem_stages * B, N, M});
    run.Nrm = Tensor::uninitialized({run.norm_blocks * B, N});
    Tensor m0 = run.Mem.rows(0, B);
    switch (c.memory_init) {
      case NtmMemoryInit::constant: m0.fill(kNtmConstantMemory); break;
      case NtmMemoryInit::learned:
        for (int64_t b = 0; b < B; ++b) m0[b].copy_from(m.memory_init_.value);
        break;
      case NtmMemoryInit::random: {
        // N(0, 0.5^2) truncated to 2 sigma: outliers are drawn again, in index order.
        Rng fallback(kNtmEvaluationSeed);
        Rng& rng = memory_rng ? *memory_rng : fallback;
        rng.fill_normal(m0.values(), 0.0f, 0.5f);
        for (float& v : m0.values())
          while (!(std::fabs(v) <= 1.0f)) v = 0.5f * rng.normal();
        break;
      }
    }
    float* w0 = run.Wt.data();
    std::fill(w0, w0 + B * d.NH * N, 0.0f);
    for (int64_t bh = 0; bh < B * d.NH; ++bh) w0[bh * N] = 1.0f;
    for (int64_t b = 0; b < B; ++b) ops::memory_row_norms(mem_at(run, 0, b), N, M, norm_at(run, 0, b));
  }
  run.Rd = Tensor::uninitialized({(T + 1) * B, RM});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < d.R; ++h)
      std::memcpy(run.Rd.data() + b * RM + h * M, mem_at(run, 0, b), static_cast<size_t>(M) * sizeof(float));

  const Tensor zeros({B, H});       // c_{-1} = 0 (h_{-1} = 0: no recurrent product at t = 0)
  flops::add_sequential_steps(T);   // the time loop is a recurrence (core/flops.hpp)
  // Rows [b0, b1) of every step (nb of them): at step t row b of a buffer is t * B + b.
  over_row_blocks(row_costs(run), [&](int64_t b0, int64_t b1) {
    const int64_t nb = b1 - b0;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t r0 = t * B + b0;   // the block's first row at step t
      // The controller: u_t = [x_t; r_{t-1}] -> h_t.
      for (int64_t l = 0; l < d.L; ++l) {
        float* gx = run.GX[l].data() + r0 * G;
        float* h = run.Hl[l].data() + r0 * H;
        // gates = u W_l^T + b: layer 0 adds its r_{t-1} part (the x_t part and b are in), a layer
        // above reads the h_t of the one below.
        if (l == 0)
          ops::linear_rows_forward(run.Rd.data() + r0 * RM, RM, nb, input_weights(m, 0).value, /*col=*/d.Win, RM,
                                   /*b=*/nullptr, 1.0f, gx, G);
        else
          ops::linear_rows_forward(run.Hl[l - 1].data() + r0 * H, H, nb, input_weights(m, l).value, /*col=*/0, H,
                                   bias(m, l).value.data(), 0.0f, gx, G);
        if (d.lstm) {   // c_t, h_t = LSTM(gates + h_{t-1} W_hh^T, c_{t-1})
          float* cs = run.C[l].data() + r0 * H;
          ops::lstm_rows_forward(nb, H, t > 0 ? h - B * H : nullptr, m.lstm_[l].W_hh.value, gx,
                                 t > 0 ? cs - B * H : zeros.data(), cs, h);
        } else {   // h_t = tanh(gates)
#pragma omp simd
          for (int64_t i = 0; i < nb * H; ++i) h[i] = ops::tanh_fast(gx[i]);
        }
      }
      if (!c.has_memory()) continue;
      // Every head's parameters in one product, Pre_t = h_t W_heads^T + b_heads, then the memory
      // work, row by row.
      ops::linear_rows_forward(run.Hl[d.L - 1].data() + r0 * H, H, nb, m.heads_W_, /*col=*/0, H, m.heads_b_.data(),
                               0.0f, run.Pre.data() + r0 * d.P, d.P);
      int64_t live = 0;
      for (int64_t b = b0; b < b1; ++b) {
        if (t < run.end[b]) {
          memory_forward(run, t, b);
          ++live;
        } else {   // the example has ended: its memory stops, r = 0 keeps its controller finite
          std::fill_n(run.Rd.data() + ((t + 1) * B + b) * RM, RM, 0.0f);
        }
      }
      flops::add(live * memory_flops_forward(d));
    }
  });

  // y_t = W_o [h_t; r_t] + b_o for every step, over all T*B rows: one product per part of the
  // input (h_1..h_T and r_1..r_T are separate buffers), then the bias.
  const nn::Linear& out = m.output_;
  run.logits = Tensor::uninitialized({T * B, d.Wout});
  ops::linear_rows_forward(run.Hl[d.L - 1].data(), H, T * B, out.W.value, /*col=*/0, H, /*b=*/nullptr, 0.0f,
                           run.logits.data(), d.Wout);
  ops::linear_rows_forward(run.Rd.data() + B * RM, RM, T * B, out.W.value, /*col=*/H, RM, out.b.value.data(), 1.0f,
                           run.logits.data(), d.Wout);
}

NtmStats NtmImpl::loss(const Run& run, const SequenceBatch& batch, float* dlogits, float* outputs) {
  const Dims& d = run.d;
  const int64_t B = d.B, Wout = d.Wout;
  const float inv_B = 1.0f / static_cast<float>(B);
  NtmStats s;
  s.sequences = B;
  for (int64_t b = 0; b < B; ++b) {
    int64_t errors = 0;
    for (int64_t u = 0; u < run.tgt_len[b]; ++u) {
      const int64_t row = (run.in_len[b] + u) * B + b;
      const float* z = run.logits.data() + row * Wout;
      const float* y = batch.targets.data() + (b * d.Tout + u) * Wout;
      for (int64_t j = 0; j < Wout; ++j) {
        // BCE with logits: max(z, 0) - z y + log(1 + e^-|z|)
        s.bce_nats += std::max(z[j], 0.0f) - z[j] * y[j] + std::log1p(std::exp(-std::fabs(z[j])));
        errors += (z[j] > 0.0f) != (y[j] > 0.5f);
        const float p = sigmoid(z[j]);
        if (dlogits != nullptr) dlogits[row * Wout + j] = (p - y[j]) * inv_B;
        if (outputs != nullptr) outputs[(b * d.Tout + u) * Wout + j] = p;
      }
    }
    s.bits += run.tgt_len[b] * Wout;
    s.bit_errors += errors;
    s.sequences_correct += errors == 0;
  }
  return s;
}

// ---- backward --------------------------------------------------------------------------------

void NtmImpl::memory_backward(Run& run, int64_t t, int64_t b, float* dPre, const float* dRd, float* dM,
                              float* dWc, float* dWp, float* scratch) {
  const Dims& d = run.d;
  const int64_t N = d.N, M = d.M, S = d.S, row = t * d.B + b;
  const ops::HeadAddressDims ad{N, M, S};
  const float* pre = run.Pre.data() + row * d.P;
  const float* act = run.Act.data() + row * d.P;
  float* dact = dPre + row * d.P;   // zero on entry
  std::fill(dWp, dWp + d.NH * N, 0.0f);

  auto address_backward = [&](int64_t h, const float* mem, const float* norms) {
    const int64_t o = d.off[h];
    ops::HeadAddressRowGrads g;
    g.dk = dact + o;
    g.ds = dact + o + M + 2;
    g.dw_prev = dWp + h * N;
    g.dmem = dM;
    ops::head_address_row_backward(ad, head_row(d, act + o, w_at(run, t, b, h), mem, norms),
                                   w_at(run, t + 1, b, h), saved_at(run, t, b, h), dWc + h * N, scratch, g);
    dact[o + M] = g.dbeta;
    dact[o + M + 1] = g.dg;
    dact[o + M + 2 + S] = g.dgamma;
  };

  // Read heads (dM is the gradient w.r.t. M_t): r = w^T M_t.
  const float* mem = mem_at(run, stage(d, t + 1), b);
  const float* dr_all = dRd + ((t + 1) * d.B + b) * d.RM;
  for (int64_t h = d.W; h < d.NH; ++h) {
    const float* w = w_at(run, t + 1, b, h);
    const float* dr = dr_all + (h - d.W) * M;
    float* dw = dWc + h * N;
    for (int64_t i = 0; i < N; ++i) {
      const float wi = w[i];
      const float* mi = mem + i * M;
      float* dmi = dM + i * M;
      float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
      for (int64_t j = 0; j < M; ++j) {
        acc += mi[j] * dr[j];
        dmi[j] += wi * dr[j];
      }
      dw[i] += acc;
    }
    address_backward(h, mem, norm_at(run, t + 1, b));
  }
  // Write heads' erase and add, last head first; dM becomes the gradient w.r.t. M_{t-1}.
  for (int64_t h = d.W - 1; h >= 0; --h) {
    const float* w = w_at(run, t + 1, b, h);
    const int64_t e0 = d.off[h] + M + 3 + S;
    const float* e = act + e0;
    const float* a = e + M;
    float* de = dact + e0;
    float* da = de + M;
    const float* in = mem_at(run, stage(d, t) + h, b);
    float* dw = dWc + h * N;
    for (int64_t i = 0; i < N; ++i) {
      const float wi = w[i];
      const float* xi = in + i * M;
      float* dmi = dM + i * M;
      float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
      for (int64_t j = 0; j < M; ++j) {
        const float g = dmi[j], x = xi[j];
        acc += g * (a[j] - x * e[j]);
        de[j] -= g * x * wi;
        da[j] += g * wi;
        dmi[j] = g * (1.0f - wi * e[j]);
      }
      dw[i] += acc;
    }
  }
  // Write heads' addressing, on M_{t-1}.
  const float* prev = mem_at(run, stage(d, t), b);
  for (int64_t h = 0; h < d.W; ++h) address_backward(h, prev, norm_at(run, t, b));
  activate_heads_backward(d, pre, act, dact);
}

void NtmImpl::backward(Ntm& m, Run& run, const Tensor& dlogits) {
  const NtmConfig& c = m.config_;
  const Dims& d = run.d;
  const int64_t B = d.B, T = d.T, H = d.H, G = d.G, N = d.N, M = d.M, P = d.P, RM = d.RM;
  if (T == 0) return;
  const float* Hs = run.Hl[d.L - 1].data();   // h_1 .. h_T
  const float* Rs = run.Rd.data() + B * RM;   // r_1 .. r_T (r_0 is block 0)

  // y_t = W_o [h_t; r_t] + b_o over all T*B rows: dh_t and dr_t, W_o's and b_o's gradients.
  nn::Linear& out = m.output_;
  Tensor dHs = Tensor::uninitialized({T * B, H});
  Tensor dRd({(T + 1) * B, RM});   // dr_0 .. dr_T; the steps add their controllers' share
  ops::linear_rows_backward_input(dlogits.data(), d.Wout, T * B, out.W.value, /*col=*/0, H, 0.0f, dHs.data(), H);
  ops::linear_rows_backward_input(dlogits.data(), d.Wout, T * B, out.W.value, /*col=*/H, RM, 0.0f, dRd.data() + B * RM,
                                  RM);
  ops::linear_rows_backward_params(dlogits.data(), d.Wout, T * B, Hs, H, /*col=*/0, H, out.W.grad, /*db=*/nullptr);
  ops::linear_rows_backward_params(dlogits.data(), d.Wout, T * B, Rs, RM, /*col=*/H, RM, out.W.grad, out.b.grad.data());

  // What step t + 1 passes back to step t: the memory's gradient and the weightings' (this
  // step's and the previous), per row; per controller layer, dh_t and (LSTM) dc_t.
  Tensor dPre, dM, dWc, dWp, scratch;
  if (c.has_memory()) {
    dPre = Tensor({T * B, P});
    dM = Tensor({B, N * M});
    dWc = Tensor({B, d.NH * N});
    dWp = Tensor({B, d.NH * N});
    scratch = Tensor::uninitialized({B, ops::head_address_scratch_size(N)});
  }
  std::vector<Tensor> dGX(d.L), dh_next(d.L), dc_next(d.L);
  for (int64_t l = 0; l < d.L; ++l) {
    dGX[l] = Tensor::uninitialized({T * B, G});   // every step writes its rows in full
    if (d.lstm) {
      dh_next[l] = Tensor({B, H});
      dc_next[l] = Tensor({B, H});
    }
  }
  const Tensor zeros({B, H});   // c_{-1}
  Tensor din({B, H});           // the gradient of layer l's input, the output of layer l - 1

  flops::add_sequential_steps(T);
  // The forward's steps in reverse, on its blocks of rows.
  over_row_blocks(row_costs(run), [&](int64_t b0, int64_t b1) {
    const int64_t nb = b1 - b0, nh = d.NH * N, ns = ops::head_address_scratch_size(N);
    // This block's rows of the weightings' gradients: dwc w.r.t. w_{t+1}, dwp w.r.t. w_t.
    float* dwc = c.has_memory() ? dWc.data() + b0 * nh : nullptr;
    float* dwp = c.has_memory() ? dWp.data() + b0 * nh : nullptr;
    for (int64_t t = T - 1; t >= 0; --t) {
      const int64_t r0 = t * B + b0;   // the block's first row at step t
      float* dh_t = dHs.data() + r0 * H;
      if (c.has_memory()) {
        // Reads, writes, addressing and the heads' activations, row by row: dPre_t, dM, the
        // weightings' gradients.
        int64_t live = 0;
        for (int64_t b = b0; b < b1; ++b) {
          if (t >= run.end[b]) continue;   // nothing flows back from after the example's end
          memory_backward(run, t, b, dPre.data(), dRd.data(), dM.data() + b * N * M, dwc + (b - b0) * nh,
                          dwp + (b - b0) * nh, scratch.data() + b * ns);
          ++live;
        }
        flops::add(live * memory_flops_backward(d));
        std::swap(dwc, dwp);
        // Pre_t = h_t W_heads^T + b_heads:  dh_t += dPre_t W_heads
        ops::linear_rows_backward_input(dPre.data() + r0 * P, P, nb, m.heads_W_, /*col=*/0, H, 1.0f, dh_t, H);
      }
      // The controller, top layer first; layer 0 passes dr_{t-1} back to the reads.
      for (int64_t l = d.L - 1; l >= 0; --l) {
        const float* dh = l == d.L - 1 ? dh_t : din.data() + b0 * H;   // w.r.t. layer l's h_t, from above
        float* dg = dGX[l].data() + r0 * G;
        if (d.lstm) {   // c_t, h_t = LSTM(gates + h_{t-1} W_hh^T, c_{t-1}); dh_next becomes dh_{t-1}
          float* dh_rec = dh_next[l].data() + b0 * H;
          const float* cs = run.C[l].data() + r0 * H;
          ops::lstm_rows_backward(nb, H, run.GX[l].data() + r0 * G, t > 0 ? cs - B * H : zeros.data(), cs, dh, dh_rec,
                                  dc_next[l].data() + b0 * H, dg, m.lstm_[l].W_hh.value, t > 0 ? dh_rec : nullptr);
        } else {   // h_t = tanh(gates)
          const float* h = run.Hl[l].data() + r0 * H;
          for (int64_t i = 0; i < nb * H; ++i) dg[i] = dh[i] * (1.0f - h[i] * h[i]);
        }
        // gates = u W_l^T + b: the r_{t-1} part of layer 0's input, or the h_t of the layer below.
        if (l > 0)
          ops::linear_rows_backward_input(dg, G, nb, input_weights(m, l).value, /*col=*/0, H, 0.0f, din.data() + b0 * H,
                                          H);
        else
          ops::linear_rows_backward_input(dg, G, nb, input_weights(m, 0).value, /*col=*/d.Win, RM, 1.0f,
                                          dRd.data() + r0 * RM, RM);
      }
    }
  });

  // The weight gradients the steps left out, each one product over all T*B rows: the heads', the
  // controller's input projections' (layer 0's x_t and r_{t-1} parts), W_hh's (h_{t-1} W_hh^T
  // for t >= 1: h_{-1} = 0).
  if (c.has_memory())
    ops::linear_rows_backward_params(dPre.data(), P, T * B, Hs, H, /*col=*/0, H, m.heads_dW_, m.heads_db_.data());
  ops::linear_rows_backward_params(dGX[0].data(), G, T * B, run.X.data(), d.Win, /*col=*/0, d.Win,
                                   input_weights(m, 0).grad, bias(m, 0).grad.data());
  ops::linear_rows_backward_params(dGX[0].data(), G, T * B, run.Rd.data(), RM, /*col=*/d.Win, RM,
                                   input_weights(m, 0).grad, /*db=*/nullptr);
  for (int64_t l = 0; l < d.L; ++l) {
    if (l > 0)
      ops::linear_rows_backward_params(dGX[l].data(), G, T * B, run.Hl[l - 1].data(), H, /*col=*/0, H,
                                       input_weights(m, l).grad, bias(m, l).grad.data());
    if (d.lstm)
      ops::linear_rows_backward_params(dGX[l].data() + B * G, G, (T - 1) * B, run.Hl[l].data(), H, /*col=*/0, H,
                                       m.lstm_[l].W_hh.grad, /*db=*/nullptr);
  }

  // M_0 (learned): dM is now the gradient w.r.t. M_0 but for r_0 = row 0 of M_0.
  if (c.has_memory() && c.memory_init == NtmMemoryInit::learned) {
    float* dinit = m.memory_init_.grad.data();
    for (int64_t b = 0; b < B; ++b) {
      const float* db = dM.data() + b * N * M;
      for (int64_t i = 0; i < N * M; ++i) dinit[i] += db[i];
      for (int64_t h = 0; h < d.R; ++h) {
        const float* dr0 = dRd.data() + b * RM + h * M;
        for (int64_t j = 0; j < M; ++j) dinit[j] += dr0[j];
      }
    }
  }
}

// ---- the public steps ------------------------------------------------------------------------

NtmStats Ntm::train_step(const SequenceBatch& batch, Rng& rng) {
  Impl::Run run;
  Impl::forward(*this, batch, &rng, /*keep_all=*/true, run);
  Tensor dlogits({run.d.T * run.d.B, run.d.Wout});
  const NtmStats stats = Impl::loss(run, batch, dlogits.data(), nullptr);
  Impl::backward(*this, run, dlogits);
  return stats;
}

NtmStats Ntm::evaluate(const SequenceBatch& batch, Rng* memory_rng) const {
  Impl::Run run;
  Impl::forward(*this, batch, memory_rng, /*keep_all=*/false, run);
  return Impl::loss(run, batch, nullptr, nullptr);
}

NtmRun Ntm::run(const SequenceBatch& batch, Rng* memory_rng) const {
  Impl::Run r;
  Impl::forward(*this, batch, memory_rng, /*keep_all=*/false, r);
  const Dims& d = r.d;
  NtmRun out;
  out.outputs = Tensor({d.B, d.Tout, d.Wout});
  out.stats = Impl::loss(r, batch, nullptr, out.outputs.data());
  out.read_weights = Tensor({d.B, d.T, d.R, d.N});
  out.write_weights = Tensor({d.B, d.T, d.W, d.N});
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t t = 0; t < r.in_len[b] + r.tgt_len[b]; ++t)
      for (int64_t h = 0; h < d.NH; ++h) {
        float* to = h < d.W ? out.write_weights.data() + ((b * d.T + t) * d.W + h) * d.N
                            : out.read_weights.data() + ((b * d.T + t) * d.R + h - d.W) * d.N;
        std::memcpy(to, w_at(r, t + 1, b, h), static_cast<size_t>(d.N) * sizeof(float));
      }
  return out;
}

}  // namespace attn::ntm

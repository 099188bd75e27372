// nn::AttentionDecoder: one step of an attention RNN decoder, an nn::Rnn cell (GRU or LSTM)
// and an nn::Attention over a prepared memory h_1..h_S (keys = values), in either of the two
// orders of the literature, for every model that decodes by attending (the RNN encoder-decoder,
// families/seq2seq; the Show-Attend-and-Tell captioner, whose memory is the R image regions).
//
// At step t, with the caller's input x_t (e.g. the embedding of y_{t-1}) already projected
// (gx_t = x_t W_ih[:, :E]^T + b, all steps in ONE GEMM by `project_input`), and state s_{t-1}:
//   bahdanau: c_t, a_t = attend(s_{t-1});  s_t = RNN([x_t; c_t], s_{t-1});  o_t = [s_t; c_t]
//             (Bahdanau et al. 2015; Xu et al. 2015, eq. 1-2; the caller may append x_t for a
//             deep output)
//   luong:    s_t = RNN([x_t; h~_{t-1}], s_{t-1}) (input feeding, h~_0 = 0);
//             c_t, a_t = attend(s_t);  o_t = h~_t = tanh(W_c [c_t; s_t])     (Luong et al. 2015, eq. 5)
// attend(q): a = softmax(score(q, h_j)) with any score of nn::Attention, masked to each row's
// memory length. Local attention (Luong sec. 3.2) restricts it to the window [p_t - P, p_t + P]:
//   local_m: p_t = t;
//   local_p: p_t = S_b sigmoid(v_p^T tanh(W_p q)), S_b the row's memory length, and the weights
//            become a_j exp(-(j - p_t)^2 / (2 sigma^2)), sigma = P / 2 (not renormalised, as in
//            the paper); the gradient flows through p_t into W_p and v_p.
// Optional gating scalar (Xu et al. 2015, sec. 4.2.1): beta_t = sigmoid(w_b . q + b_b) of the
// step's query q (s_{t-1} in Bahdanau order, s_t in Luong order), and the context becomes
// beta_t c_t wherever it is used (the cell input, o_t, [c_t; s_t]).
// Score `none` is no attention: no context (o_t = s_t, or h~_t = tanh(W_c s_t)).
//
// Cost: per step only the recurrent GEMM, the attention and the per-step part of the input
// projection (c_t or h~_{t-1} W_ih[:, E:]^T). Backward mirrors it: each step's backward keeps
// its gate gradient in one [T*B, G] block, and `end_backward` forms the weight gradients of the
// per-step input columns (and W_c) as single GEMMs over all T*B rows, then folds the
// attention's memory gradient through U once (nn::Attention::backward_memory). Caches are
// allocated once per sequence (`make_cache`); a step allocates only its small [B, *] results.
//
// Use, for a sequence of T steps of B rows:
//   memory = dec.prepare(h, lengths);  cache = dec.make_cache(T, B);  st = dec.initial_state(s0);
//   dec.project_input(x, E, T * B, gx);                              // all steps at once
//   for t: weights_t = dec.step(t, gx + t*B*G, st, memory, o + t*B*ldo, ldo, &cache);
//   grad = dec.begin_backward(memory, T, B);
//   for t = T-1 .. 0: dec.step_backward(t, do + t*B*lddo, lddo, o + t*B*ldo, ldo, cache, memory, grad);
//   dec.end_backward(o, ldo, cache, memory, grad);  dec.input_backward(grad, x, E, dx, E);
//   // d memory: grad.memory.dkeys; d initial state: grad.dstate
//
// Parameters, by module path under `name`: <name>/rnn/{W_ih, W_hh, b_ih, b_hh | b},
// <name>/attention/{W, U, v}, <name>/local_p/{W, v}, <name>/combine/W, <name>/gate/{W, b}.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/nn/attention.hpp"
#include "attn/nn/layers.hpp"
#include "attn/nn/param.hpp"
#include "attn/nn/rnn.hpp"

namespace attn::nn {

// The order of a step: attend with s_{t-1} (bahdanau) or with s_t (luong).
enum class AttentionStyle : uint8_t { bahdanau, luong };
// Luong et al.'s global attention and the local-m (monotonic) and local-p (predictive) kinds.
enum class LocalAttention : uint8_t { global, local_m, local_p };

struct AttentionDecoderConfig {
  RnnCell cell = RnnCell::gru;
  int64_t input_dim = 0;       // E: the caller's part of the cell input (x_t)
  int64_t hidden = 0;          // Dd
  ScoreKind score = ScoreKind::concat;   // none: no attention
  int64_t memory_dim = 0;      // Dv: width of the attended vectors h_j
  int64_t attention_dim = 0;   // A: concat scores and local_p's W_p
  int64_t max_len = 0;         // location scores: the longest memory S
  AttentionStyle style = AttentionStyle::bahdanau;
  LocalAttention local = LocalAttention::global;
  int64_t window = 0;          // P (Luong's D): local window radius (>= 1 with local attention)
  bool gate = false;           // the gating scalar beta_t on the context

  int64_t context_dim() const { return score == ScoreKind::none ? 0 : memory_dim; }   // Dc
  // Width of o_t: Dd + Dc (bahdanau) or Dd (luong).
  int64_t output_dim() const { return style == AttentionStyle::bahdanau ? hidden + context_dim() : hidden; }
};

// The recurrent side of a batch of B rows between steps.
struct AttentionDecoderState {
  RnnState s;    // s_t
  Tensor feed;   // luong: h~_t [B, Dd] (input feeding)
  Tensor gx;     // scratch [B, G]: the step's whole input projection
  Tensor cs;     // luong scratch [B, Dc + Dd] for steps run without a cache

  int64_t rows() const { return s.h.defined() ? s.h.dim(0) : 0; }
  // Keeps rows `keep` (in that order; repeats allowed, e.g. beam parents).
  void select(const std::vector<int64_t>& keep);
};

// What one step's backward needs.
struct AttentionDecoderStepCache {
  RnnStepCache rnn;
  AttentionStepCache attn;
  Tensor zp;        // local_p: tanh(W_p q) [B, A]
  Tensor sig;       // local_p: sigmoid(v_p . zp) [B]
  Tensor pos;       // local_p: p_t [B]
  Tensor gauss;     // local_p: exp(-(j - p_t)^2 / 2 sigma^2) [B, S]
  Tensor weights;   // the weights that made the context [B, S]
  Tensor context;   // gate: c_t before gating [B, Dv]
  Tensor beta;      // gate: beta_t [B]
};

// The caches of one sequence of T steps, allocated once by make_cache.
struct AttentionDecoderCache {
  int64_t T = 0, B = 0;
  std::vector<AttentionDecoderStepCache> steps;   // [T]
  Tensor cs;                                      // luong: [T*B, Dc + Dd] the [c_t; s_t]
};

// The gradients of one sequence's backward, made by begin_backward.
struct AttentionDecoderGrad {
  int64_t T = 0, B = 0;
  AttentionMemoryGrad memory;   // d memory: dkeys [B, S, Dv] after end_backward (empty without attention)
  RnnState dstate;              // dL/ds_t from the steps after t; after step 0, d of the initial state
  Tensor dgx;                   // [T*B, G] each step's gate gradient (the input projection's)
  Tensor dpre;                  // luong: [T*B, Dd] the gradient of W_c [c_t; s_t]
  Tensor dfeed;                 // luong: [B, Dd] dL/dh~_t from step t+1's input
};

class AttentionDecoder {
 public:
  AttentionDecoder() = default;
  // Checks the config (ConfigError) and initialises, in this order: the cell ("<name>/rnn"),
  // the attention, local_p's W_p (Glorot uniform) and v_p (U(+-1/sqrt(A))), W_c, the gate.
  AttentionDecoder(const AttentionDecoderConfig& config, const std::string& name, Rng& rng);

  const AttentionDecoderConfig& config() const { return config_; }
  const Rnn& rnn() const { return rnn_; }
  const Attention* attention() const { return attention_.get(); }   // nullptr with score none
  int64_t gates() const { return rnn_.gates(); }                    // G
  ParamList params();   // rnn, attention, local_p, combine, gate (stable order)

  // ---- once per sequence ----
  // The attention's memory over h: [B, S, Dv] (keys = values; additive scores precompute U h),
  // masked past lengths: int32 [B] (undefined: every row sees all S), with local_m's window
  // and local_p's per-step keep mask. Empty without attention.
  AttentionMemory prepare(const Tensor& memory, const Tensor& lengths) const;
  // s_0 = h0 [B, Dd] (shared, not copied), c0 [B, Dd] for an LSTM (undefined: zeros); h~_0 = 0.
  AttentionDecoderState initial_state(const Tensor& h0, const Tensor& c0 = Tensor()) const;
  AttentionDecoderCache make_cache(int64_t T, int64_t B) const;
  // The caller's part of the input projection over its N rows (all steps: T*B):
  // gx [T*B, G] = x W_ih[:, :E]^T + b, x: [T*B, E] with row stride ldx. One GEMM (overwrites gx).
  void project_input(const float* x, int64_t ldx, int64_t N, float* gx) const;

  // ---- per step ----
  // Step t (see above). gx: [B, G] the caller's part of the input projection (read, not
  // changed). Writes o_t [B, output_dim] at `o` (row stride ldo >= output_dim). With a cache,
  // keeps what step_backward needs in cache->steps[t] and [c_t; s_t] in cache->cs. Updates
  // `memory` (local_p's keep mask). Returns the weights [B, S] (empty without attention).
  Tensor step(int64_t t, const float* gx, AttentionDecoderState& st, AttentionMemory& memory, float* o,
              int64_t ldo, AttentionDecoderCache* cache) const;

  // ---- backward, once per sequence around the steps' ----
  // Zeroed gradient buffers for T steps of B rows over `memory`.
  AttentionDecoderGrad begin_backward(const AttentionMemory& memory, int64_t T, int64_t B) const;
  // Step t's backward, called for t = T-1 down to 0. dout: [B, output_dim] (row stride lddo)
  // the gradient of o_t; o: the o_t the forward wrote (row stride ldo); dweights: optional
  // [B, S], the gradient of the step's weights (e.g. Xu et al.'s doubly stochastic penalty).
  // Adds into the cell's W_hh (b_hh), the attention's, local_p's and the gate's grads and into
  // `grad`; the input projection's and W_c's weight gradients wait for end_backward.
  void step_backward(int64_t t, const float* dout, int64_t lddo, const float* o, int64_t ldo,
                     const AttentionDecoderCache& cache, const AttentionMemory& memory, AttentionDecoderGrad& grad,
                     const Tensor& dweights = Tensor());
  // After step 0's backward: dW_ih[:, E:] += dgx^T [c_t or h~_{t-1}] and dW_c += dpre^T [c_t; s_t]
  // as one GEMM each over all T*B rows (o: the stacked o_t, [T*B, *] row stride ldo), then the
  // attention's memory gradient (backward_memory). grad.memory.dkeys is then d memory.
  void end_backward(const float* o, int64_t ldo, const AttentionDecoderCache& cache, const AttentionMemory& memory,
                    AttentionDecoderGrad& grad);
  // The caller's part: dW_ih[:, :E] += dgx^T x and db += column sums of dgx over all T*B rows;
  // dx [T*B, E] (row stride lddx) += dgx W_ih[:, :E] when dx is not null.
  void input_backward(const AttentionDecoderGrad& grad, const float* x, int64_t ldx, float* dx, int64_t lddx);

 private:
  void attend(int64_t t, const Tensor& q, AttentionMemory& memory, AttentionDecoderStepCache* cache, Tensor& ctx,
              Tensor& weights) const;
  Tensor attend_backward(const Tensor& dctx, const AttentionDecoderStepCache& cache, const AttentionMemory& memory,
                         AttentionMemoryGrad& grad, const Tensor& dweights);

  AttentionDecoderConfig config_;
  Rnn rnn_;                               // input [x_t; c_t] (bahdanau) or [x_t; h~_{t-1}] (luong)
  std::unique_ptr<Attention> attention_;  // query Dd, keys Dv
  Param local_W_, local_v_;               // local_p: W_p [A, Dd], v_p [A]
  Linear combine_;                        // luong: W_c [Dd, Dc + Dd], no bias
  Linear gate_;                           // gate: w_b [1, Dd], b_b [1]
};

// Rows `index` of x: [B, ...] (f32 or i32) -> [index.size(), ...], a new tensor; x itself when
// undefined or empty. For the beam searches' select.
Tensor gather_rows(const Tensor& x, const std::vector<int64_t>& index);
// The rows `index` of a prepared memory: keys, values (still one tensor when they were),
// U k (copied, not recomputed), lengths and local_p's keep mask. Empty when `memory` is.
AttentionMemory gather_rows(const AttentionMemory& memory, const std::vector<int64_t>& index);

}  // namespace attn::nn

// The neural Turing machine (families/ntm): Graves, Wayne & Danihelka 2014, "Neural Turing
// Machines", with the parameterisation and initialisation of Collier & Beel 2018,
// "Implementing Neural Turing Machines" (ICANN), which trains reliably.
// Shapes use docs/ARCHITECTURE.md's letters: Graves' N x M memory is Nm x M here, with Nr read
// and Nw write heads, Ns = 2r + 1 shift weights (r = shift_range), I input and O output bits, Np
// rows of head parameters (head_params()).
//
// At time step t (0-based; x_t the input row, zero in the output phase):
//   controller input  u_t = [x_t; r_{t-1}]                   (every read head's vector, in order)
//   controller        h_t = LSTM stack(u_t) (controller_layers LSTM cells stepped one at a time,
//                     zero initial state; torch.nn.LSTM's equations, parameters held by nn::Rnn)
//                     or tanh(W_l ... tanh(W_0 u_t + b_0) ... + b_l) (feedforward)
//   head parameters   one linear layer per head on h_t (all heads' layers are ONE GEMM):
//                     k = tanh(.) [M], β = softplus(.), g = σ(.), s = softmax(.) [Ns],
//                     γ = 1 + softplus(.); a write head also e = σ(.) [M], a = tanh(.) [M]
//   addressing        w = sharpen(circular_conv(g softmax(β cos(k, M_i)) + (1 - g) w_{t-1}, s), γ)
//                     (ops::head_address_row_forward; Graves eq. 5-9)
//   writes            every write head addresses M_{t-1}; then, in head order, each applies its
//                     erase and then its add: M <- M ∘ (1 - w e^T) + w a^T (Graves eq. 3-4).
//                     The result is M_t. (Collier & Beel apply write heads the same way.)
//   reads             every read head addresses M_t and reads r = w^T M_t (Graves eq. 2), so a
//                     read sees the same step's writes (Collier & Beel read M_{t-1}).
//   output            y_t = W_o [h_t; r_t] + b_o, logits; outputs are σ(y_t).
// With read_heads = write_heads = 0 there is no memory at all: u_t = x_t and y_t = W_o h_t + b_o,
// the LSTM (or feed-forward) baseline of Graves Fig. 3.
//
// Initial state, the symmetry breaker: every head's w_0 is one-hot on location 0, r_0 = w_0^T M_0
// (row 0 of M_0), the controller state is zero. M_0 (memory_init): `constant` 1e-6 everywhere
// (Collier & Beel's best); `learned`, a parameter [Nm, M] ~ U(-0.1, 0.1); `random`, drawn for
// every sequence from the caller's Rng as N(0, 0.5^2) truncated to [-1, 1] (values outside
// 2 sigma are drawn again, like TensorFlow's truncated_normal that Collier & Beel use).
//
// Sequences (SequenceBatch, the layout of datasets/README.md "NTM tasks"): example b reads its
// input rows t < input_len[b], then is fed zero vectors for target_len[b] steps, during which
// output row t - input_len[b] is compared with targets[b, t - input_len[b]]. All B examples run
// for T = max_b(input_len[b] + target_len[b]) steps; other positions carry no loss. The loss is
// binary cross-entropy with logits, summed over output bits and steps; its gradient is that of
// the MEAN over the B sequences.
//
// Parameters, by module path (stable order): controller/layer<l>/{W_ih, W_hh, b} (lstm) or
// controller/layer<l>/{W, b} (feedforward); heads/write<i>/{W, b}, heads/read<i>/{W, b};
// output/{W, b}; memory/init (learned only). The heads' W and b are row blocks of one matrix
// [Np, H] and one bias [Np] (views sharing storage, so one GEMM makes every head's parameters):
// update them in place, as optimizers and io::restore_params do; never assign a new tensor to
// a head Param's value or grad. Row layout of a head: k [M], β, g, s [Ns], γ, then for a write
// head e [M], a [M]; write heads first, then read heads.
// Initialisation: controller LSTMs as nn::Rnn (U(±1/sqrt(H)), PyTorch's), feed-forward
// controller layers, heads and output Glorot-uniform with zero biases (nn::Linear).
//
// Cost: the input part of the controller's input projection and the output layer run as one
// GEMM each over all T*B rows, as do the weight gradients of the heads, the output, the input
// projections and W_hh after the backward loop. A step does the read part of the input
// projection, the recurrent product and the heads' product (and their transposes backward);
// at batch 1 each is one gemv, since OpenBLAS packs both operands of every gemm, which for one
// row costs more than the product. That is why the LSTM step runs on the cell's raw-row entry
// points (ops::lstm_rows_forward/backward, the products ops::linear_rows_*) rather than through
// nn::Rnn::step, whose products are gemms and whose backward also adds a rank-B update of dW_hh
// per step. The addressing and
// memory work of a step is row by row (ops::head_address_row_*), and a row whose example has
// ended (t >= input_len + target_len) skips it: nothing flows back from those steps, so the
// gradients are the same bits as if it ran (its read vector is set to 0 instead, which keeps
// its controller finite). Threads: each time loop (forward, backward) is ONE parallel region in
// which every thread runs all T steps on its own contiguous block of batch rows (blocks of
// about equal work), with no barrier per step; a step's products run per block on the thread
// that owns it. At one thread that is the plain loop; at more, a block's product may round
// differently in the last place from the whole batch's (OpenBLAS's kernels depend on the row
// count), as may the GEMMs after the loops, which the BLAS seam splits over threads. At batch 1
// the products of a step stay on one thread (too small for a team). Everything the backward
// needs is kept in per-sequence buffers [T, B, ...] allocated once per call; nothing is
// allocated inside the time loop.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/data/sequence_data.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/nn/layers.hpp"
#include "attn/nn/param.hpp"
#include "attn/nn/rnn.hpp"

namespace attn::ntm {

enum class NtmController : uint8_t { lstm, feedforward };
enum class NtmMemoryInit : uint8_t { constant, learned, random };

// The names are attn-ntm's option values: "lstm", "ff" / "constant", "learned", "random";
// anything else throws ConfigError listing them.
NtmController parse_ntm_controller(const std::string& name);
const char* ntm_controller_name(NtmController controller);
NtmMemoryInit parse_ntm_memory_init(const std::string& name);
const char* ntm_memory_init_name(NtmMemoryInit init);

// The value M_0 holds everywhere with memory_init `constant` (Collier & Beel 2018).
inline constexpr float kNtmConstantMemory = 1e-6f;

struct NtmConfig {
  int64_t input_size = 0;        // I (copy task: width + 1)
  int64_t output_size = 0;       // O (copy task: width)
  NtmController controller = NtmController::lstm;
  int64_t controller_size = 100;     // H
  int64_t controller_layers = 1;
  int64_t memory_rows = 128;         // Nm
  int64_t memory_width = 20;         // M
  int64_t read_heads = 1;            // Nr (0 and 0: no memory, the plain controller baseline)
  int64_t write_heads = 1;           // Nw
  int64_t shift_range = 1;           // r: shifts -r..r, Ns = 2r + 1 shift weights
  NtmMemoryInit memory_init = NtmMemoryInit::constant;

  // The fields of /config, each once (io/config_fields.hpp).
  template <class C, class V>
  static void fields(C& c, V& v) {
    v("input_size", c.input_size);
    v("output_size", c.output_size);
    v("controller", c.controller, ntm_controller_name, parse_ntm_controller);
    v("controller_size", c.controller_size);
    v("controller_layers", c.controller_layers);
    v("memory_rows", c.memory_rows);
    v("memory_width", c.memory_width);
    v("read_heads", c.read_heads);
    v("write_heads", c.write_heads);
    v("shift_range", c.shift_range);
    v("memory_init", c.memory_init, ntm_memory_init_name, parse_ntm_memory_init);
  }

  bool has_memory() const { return read_heads + write_heads > 0; }
  int64_t shifts() const { return 2 * shift_range + 1; }                   // Ns
  int64_t read_head_size() const { return memory_width + shifts() + 3; }   // k, β, g, s, γ
  int64_t write_head_size() const { return read_head_size() + 2 * memory_width; }   // + e, a
  int64_t head_params() const { return write_heads * write_head_size() + read_heads * read_head_size(); }   // Np

  // Throws ConfigError naming the field for anything out of range.
  void validate() const;
  // /config attributes of a model file: every field under its own name, the enumerations as
  // attn-ntm's option values (docs/FORMATS.md).
  std::map<std::string, io::AttrValue> to_attrs() const;
  // The inverse: every attribute must be present and of its type; anything wrong, validation
  // included, is a FormatError naming `source` (the file) and the attribute.
  static NtmConfig from_attrs(const std::map<std::string, io::AttrValue>& attrs, const std::string& source = "/config");
};

// A batch of sequences in the data-set layout (attn/data/sequence_data.hpp): inputs [B, Tin, I]
// (rows t >= input_len[b] are ignored), input_len [B] in [0, Tin], targets [B, Tout, O] (rows
// t >= target_len[b] are ignored), target_len [B] in [0, Tout].
using SequenceBatch = data::SequenceBatch;

// Sums over a batch (add them up over batches with +=).
struct NtmStats {
  double bce_nats = 0;             // binary cross-entropy of the counted bits, nats
  int64_t bits = 0;                // output bits counted: Σ_b target_len[b] * O
  int64_t bit_errors = 0;          // counted bits where (output > 0.5) != (target > 0.5)
  int64_t sequences = 0;           // B
  int64_t sequences_correct = 0;   // sequences without a bit error

  NtmStats& operator+=(const NtmStats& o) {
    bce_nats += o.bce_nats;
    bits += o.bits;
    bit_errors += o.bit_errors;
    sequences += o.sequences;
    sequences_correct += o.sequences_correct;
    return *this;
  }
};

// What run() shows of a batch: outputs and every head's weighting at every step.
struct NtmRun {
  Tensor outputs;         // [B, Tout, O] σ(y) of the output phase; rows t >= target_len[b] are 0
  Tensor read_weights;    // [B, T, Nr, Nm] w_t of every read head at steps t = 0..T-1
  Tensor write_weights;   // [B, T, Nw, Nm] the same for the write heads
                          // (rows t >= input_len[b] + target_len[b], after the example ended, are 0)
  NtmStats stats;         // as evaluate() gives
};

class Ntm {
 public:
  // Validates the config and initialises every parameter from init.
  Ntm(const NtmConfig& config, Rng& init);
  Ntm(Ntm&&) noexcept = default;
  Ntm& operator=(Ntm&&) noexcept = default;
  Ntm(const Ntm&) = delete;              // parameters share storage (heads); no silent aliasing
  Ntm& operator=(const Ntm&) = delete;

  const NtmConfig& config() const { return config_; }
  ParamList params();   // named by module path, stable order (see above)

  // Forward + backward: ADDS the gradient of the mean loss over the B sequences into the
  // params' grads (the caller zeroes them) and returns the sums. `rng` draws M_0 with
  // memory_init `random` (one draw per sequence) and is not used otherwise.
  NtmStats train_step(const SequenceBatch& batch, Rng& rng);
  // Forward only. With memory_init `random`, M_0 is drawn from memory_rng, or when it is null
  // from a fixed stream (Rng(kNtmEvaluationSeed)), so that evaluation is repeatable.
  NtmStats evaluate(const SequenceBatch& batch, Rng* memory_rng = nullptr) const;
  // evaluate() plus the outputs and the weightings (the layout `attn-plot weights` draws).
  NtmRun run(const SequenceBatch& batch, Rng* memory_rng = nullptr) const;

 private:
  friend struct NtmImpl;   // the forward and backward code (ntm.cpp)

  NtmConfig config_;
  std::vector<nn::Rnn> lstm_;          // controller_layers, lstm controller
  std::vector<nn::Linear> ff_;         // controller_layers, feed-forward controller
  Tensor heads_W_, heads_dW_;          // [Np, H] every head's weights (and their grads)
  Tensor heads_b_, heads_db_;          // [Np]
  std::vector<Param> heads_;           // per head: W, b (views of the blocks above)
  nn::Linear output_;                  // [O, H + Nr*M]
  Param memory_init_;                  // [Nm, M], learned only
};

// The stream of M_0 for evaluate() and run() without an Rng (memory_init random).
inline constexpr uint64_t kNtmEvaluationSeed = 0x4e544d;   // "NTM"

}  // namespace attn::ntm

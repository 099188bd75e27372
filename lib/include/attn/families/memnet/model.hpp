// The end-to-end memory network (families/memnet): Sukhbaatar, Szlam, Weston & Fergus 2015,
// "End-To-End Memory Networks" (NIPS), with the conventions of the authors' code
// (facebook/MemNN, MemN2N-babi-matlab) where the paper is silent.
//
// Symbols (docs/ARCHITECTURE.md, "Dimensions"): V vocabulary, E embedding width (the paper's d),
// Nhop hops (the paper's K), Ms memory slots of a batch, Ws words per sentence, Wq words per
// question; Mm = config.memory_size, the most recent sentences the model reads.
//
// Input: a batch of questions in the bAbI layout (attn/families/memnet/qa_data.hpp): example b's memory is
// its story's sentences in slots i < n = story_len[b], oldest first. The model reads the last
// Mm of them, slots w0 = max(0, n - Mm) .. n - 1 (the window); slots outside it, and the padding
// slots i >= n, take no part. A sentence's words are its ids before its first PAD (0); J is their
// number (J = 0: an empty sentence, whose embedding is its temporal vector alone).
//
// Sentence embedding with a table X [V, E] (rows by word id):
//   bow        e(x) = Σ_{j<J} X[x_j]
//   position   e(x) = Σ_{j<J} l_j ∘ X[x_j],  l_kj = (1 - j/J) - (k/E)(1 - 2j/J)
//              with 1-based j (word) and k (embedding component): the paper's eq. in sec. 4.1,
//              J the words of THAT sentence (the question's words for the question).
//   position-fixed  the authors' code's form (MemN2N-babi-matlab, memn2n-lua):
//              l_kj = 1 + 4 (k - (E+1)/2) (j - (J+1)/2) / (E J) with one J for every sentence
//              and question, config.sentence_length (the data set's longest sentence or
//              question + 1, the code's time word), so that a word's weight depends on its
//              position alone: "Lily" in "Lily is a swan" and "Lily is white" embeds alike,
//              which tasks 15 and 16 (deduction, induction) need.
// Temporal encoding (temporal): slot i of the window has the index t_i = n - 1 - i (0 for the
// most recent sentence, counting back), and its memory vectors add row t_i of the temporal
// tables T_A, T_C [Mm, E]: m_i = e_A(x_i) + T_A[t_i], c_i = e_C(x_i) + T_C[t_i]. The question has
// no temporal part: u^1 = e_B(q).
//
// Hop k = 1..Nhop:  p_i = softmax_i(u^k · m^k_i) over the window's slots only,
//                   o^k = Σ_i p_i c^k_i,
//                   u^{k+1} = u^k + o^k (adjacent tying) or H u^k + o^k (layerwise tying).
// Answer: logits a = W u^{Nhop+1} over all V ids; the loss is the cross-entropy of the answer
// id, its gradient that of the MEAN over the batch (the authors' code sums over the batch: their
// SGD learning rate 0.01 at batch 32 is 0.32 here). Padding slots take no part, unless
// config.empty_slots = S > 0: then, as in the authors' code, whose memory has S slots of which
// the story fills the last, the softmax also spans the S - n' empty slots of an n'-sentence
// window, each scoring 0 and reading nothing (p_i = exp(s_i) / (Σ_j exp(s_j) + (S - n')));
// the attention left over is theirs: a way to attend to nothing, which yes/no, counting and
// size questions (bAbI tasks 6, 7, 10, 18) use.
//
// Linear start (set_linear_start(true)): every hop's softmax is removed, p_i = u^k · m^k_i; the
// answer's softmax stays (the authors' code removes the memories' softmax layers only). The
// training task switches it off when the validation loss stops falling.
//
// Random noise (train_step with a noise Rng; temporal encoding only): as in the authors' code,
// each example's window of n' sentences gets nblank ~ U{0, ..., ceil(n'/10)} empty memories
// inserted at random places in time, which the model does not attend to: the n' temporal indices
// are a uniformly random n'-subset of {0, ..., n' + nblank - 1}, clamped to Mm - 1, the largest
// for the oldest slot (memn2n_temporal_indices). Never at evaluation. Without temporal encoding
// there are no indices to move, and nothing is drawn.
//
// Tying and parameters (all float32, N(0, 0.1²) as in the paper; hops are numbered from 1 as in
// the paper; "T_A1" is T_A^1):
//   adjacent    A1, C1, ..., C<Nhop> [V, E] (A^{k+1} = C^k, B = A^1, W = C^Nhop: the answer
//               logits are u · C^Nhop[v]); with temporal encoding T_A1, T_C1, ..., T_C<Nhop>
//               [Mm, E] (T_A^{k+1} = T_C^k).
//   layerwise   B, A, C [V, E] (A^k = A, C^k = C for every hop), with temporal encoding T_A, T_C
//               [Mm, E]; then H [E, E] (u^{k+1} = H u^k + o^k, H[e][f] multiplies u_f into
//               component e) and W [V, E] (logits a_v = W[v] · u).
// params() lists them in that order. Padding words are skipped, so PAD's (id 0) rows get no
// gradient through the sentence embeddings (the authors' code zeroes its nil word instead); the
// answer layer (W, or C<Nhop> under adjacent tying) has a logit for every id, PAD's included.
//
// Cost: a sentence embedding is a sum of table rows picked by word id (no one-hot products): an
// embedding bag (ops/embedding_bag.hpp) over every memory table at once, in kernels that keep
// the sum in registers (for E < 68); the hops are per-example loops over the window, their sums
// of rows the same kernels; the answer layer and its two gradients are one GEMM each over the
// batch, as is H's gradient over all hops. Threads: the embeddings run over blocks of sentences,
// the hops and their backward each in one parallel region over contiguous blocks of examples
// (blocks of about equal work); the embedding tables' gradients, which examples share, whole
// tables to a thread (each walks every sentence in order). A region of less than 2^22
// multiply-adds (kParallelMinWork in model.cpp,
// measured: the model's rows are so cheap that waking the second thread and its cache misses on
// rows the first wrote outweigh half of a smaller region's work) stays on the calling thread:
// on bAbI, batches up to about 300 questions run on one thread, and larger batches of the joint
// set (E = 50) gain from two (experiments/perf/memnet, "Threads: why 2 were slower than 1, and
// the fix"). Every value is computed by the same operations in the same order at
// any thread count: results are bit-identical at 1 and 2 threads while the batch's products stay
// below the BLAS seam's split threshold of 2^19 multiply-adds (B V E for the answer layer, e.g.
// 64 x 160 x 50; E² Nhop B for H's gradient); above it the seam splits them over the threads,
// which may change last bits. (Below it the seam also keeps OpenBLAS on one thread: OpenBLAS
// split products from 2^18 up by itself, and ran the joint set's 32 x 178 x 50 several times
// slower than one thread does.)
// Buffers are allocated once per call, none inside the loops over examples.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/families/memnet/qa_data.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/nn/param.hpp"

namespace attn::memnet {

enum class MemN2NEncoding : uint8_t { bow, position, position_fixed };
enum class MemN2NTying : uint8_t { adjacent, layerwise };

// The names are attn-memnet's option values: "bow", "position", "position-fixed" / "adjacent",
// "layerwise";
// anything else throws ConfigError listing them.
MemN2NEncoding parse_memn2n_encoding(const std::string& name);
const char* memn2n_encoding_name(MemN2NEncoding encoding);
MemN2NTying parse_memn2n_tying(const std::string& name);
const char* memn2n_tying_name(MemN2NTying tying);

// The share of empty memories random noise inserts (the paper's 10%).
inline constexpr float kMemN2NRandomNoise = 0.1f;

struct MemN2NConfig {
  int64_t vocab_size = 0;        // V (one vocabulary for story, question and answer words)
  int64_t embedding_size = 20;   // E (the paper's d: 20 single task, 50 joint)
  int64_t hops = 3;              // Nhop
  int64_t memory_size = 50;      // Mm: the most recent sentences read; rows of T_A, T_C
  MemN2NEncoding encoding = MemN2NEncoding::position;
  bool temporal = true;          // temporal encoding T_A, T_C
  MemN2NTying tying = MemN2NTying::adjacent;
  int64_t sentence_length = 0;   // J of position-fixed encoding (>= 1 there, else unused)
  int64_t empty_slots = 0;       // S > 0: the hops' softmax spans S slots, empty ones scoring 0

  // The fields of /config, each once (io/config_fields.hpp).
  template <class C, class V>
  static void fields(C& c, V& v) {
    v("vocab_size", c.vocab_size);
    v("embedding_size", c.embedding_size);
    v("hops", c.hops);
    v("memory_size", c.memory_size);
    v("encoding", c.encoding, memn2n_encoding_name, parse_memn2n_encoding);
    v("temporal", c.temporal);
    v("tying", c.tying, memn2n_tying_name, parse_memn2n_tying);
    v("sentence_length", c.sentence_length);
    v("empty_slots", c.empty_slots);
  }

  // Embedding tables the memory is read with: Nhop + 1 (adjacent: A1, C1..C<Nhop>) or 2 (A, C).
  int64_t memory_tables() const { return tying == MemN2NTying::adjacent ? hops + 1 : 2; }

  // Throws ConfigError naming the field for anything out of range.
  void validate() const;
  // /config attributes of a model file: every field under its own name, the enumerations as
  // attn-memnet's option values, temporal as 0/1.
  std::map<std::string, io::AttrValue> to_attrs() const;
  // The inverse: every attribute must be present and of its type; anything wrong, validation
  // included, is a FormatError naming `source` (the file) and the attribute.
  static MemN2NConfig from_attrs(const std::map<std::string, io::AttrValue>& attrs,
                                 const std::string& source = "/config");
};

// A batch of questions in the data-set layout (attn/families/memnet/qa_data.hpp): story [B, Ms, Ws],
// story_len [B] in [0, Ms], question [B, Wq], answer [B]; every id in [0, V). support and task
// are not read.
using QaBatch = QaBatch;

// Sums over a batch (add them up over batches with +=).
struct MemN2NStats {
  double loss_nats = 0;    // Σ_b -log p(answer_b), nats
  int64_t questions = 0;   // B
  int64_t correct = 0;     // questions whose prediction is the answer

  MemN2NStats& operator+=(const MemN2NStats& o) {
    loss_nats += o.loss_nats;
    questions += o.questions;
    correct += o.correct;
    return *this;
  }
};

struct MemN2NResult {
  MemN2NStats stats;
  Tensor predictions;   // [B] int32: the id of the largest answer logit (the lowest id on a tie)
  Tensor attention;     // [B, Nhop, Ms] answer() only: p of every hop over the batch's slots,
                        // 0 outside the window (under linear start, the raw scores u·m)
};

class MemN2N {
 public:
  // Validates the config and draws every parameter from init, in params() order.
  MemN2N(const MemN2NConfig& config, Rng& init);
  MemN2N(MemN2N&&) noexcept = default;
  MemN2N& operator=(MemN2N&&) noexcept = default;
  MemN2N(const MemN2N&) = delete;              // a copy would share the parameters' storage
  MemN2N& operator=(const MemN2N&) = delete;

  const MemN2NConfig& config() const { return config_; }
  ParamList params();   // named as above, stable order

  // Linear start: hops use the raw scores instead of their softmax. Off after construction;
  // a training-time mode, not part of the config.
  void set_linear_start(bool on) { linear_start_ = on; }
  bool linear_start() const { return linear_start_; }

  // Forward + backward: ADDS the gradient of the mean cross-entropy over the B questions into
  // the params' grads (the caller zeroes them) and returns the sums. With `noise`, random noise
  // draws each example's temporal indices from it, in example order (temporal encoding only).
  MemN2NStats train_step(const QaBatch& batch, Rng* noise = nullptr);
  // Forward only: the sums and the predictions (never random noise).
  MemN2NResult evaluate(const QaBatch& batch) const;
  // evaluate() plus the attention of every hop (the `answer` verb, the task-16 hop table).
  MemN2NResult answer(const QaBatch& batch) const;

 private:
  friend struct MemN2NImpl;   // the forward and backward code (model.cpp)

  MemN2NConfig config_;
  bool linear_start_ = false;
  std::vector<Param> memory_;     // memory_tables() [V, E]: A1, C1..C<Nhop> or A, C
  std::vector<Param> temporal_;   // the same count of [Mm, E] (temporal encoding only)
  Param question_;                // B [V, E], layerwise only (adjacent: memory_[0])
  Param H_;                       // [E, E], layerwise only
  Param output_;                  // W [V, E], layerwise only (adjacent: memory_.back())
};

// The temporal indices of a batch's windows, example after example: a window of counts[b]
// sentences (oldest first) gets the next counts[b] entries of out (out.size() = Σ counts).
// Without noise they are count - 1, ..., 1, 0. With it, random noise's (see above), drawn from
// *noise as Rng::fill_uniform batches, B draws and then Σ (count + nblank): non-increasing
// (decreasing but where clamped to memory_size - 1). A wrong out size is a ShapeError.
void memn2n_temporal_indices(std::span<const int32_t> counts, int64_t memory_size, Rng* noise,
                             std::span<int32_t> out);

}  // namespace attn::memnet

// models::Seq2Seq run one decoder step at a time over R rows (the incremental decoding API that
// attn::decode's searches drive): the step's output projection over all R rows is one GEMM;
// selecting rows gathers the recurrent state, and the source memory only when the rows'
// sentences change.
#include <cstring>

#include "attn/blas/blas.hpp"
#include "attn/models/seq2seq.hpp"
#include "seq2seq_impl.hpp"

namespace attn::models {
namespace {

using blas::Trans;

// Rows `index` of x: [R, ...] -> [index.size(), ...] (new tensor); x itself when undefined or empty.
Tensor gather_rows(const Tensor& x, const std::vector<int64_t>& index) {
  if (!x.defined() || x.empty()) return x;
  Shape shape = x.shape();
  const int64_t row = x.numel() / shape[0];
  shape[0] = static_cast<int64_t>(index.size());
  Tensor y = Tensor::uninitialized(shape, x.dtype());
  const size_t bytes = static_cast<size_t>(row) * 4;
  for (size_t i = 0; i < index.size(); ++i) {
    if (x.dtype() == DType::f32) std::memcpy(y.data() + i * row, x.data() + index[i] * row, bytes);
    else std::memcpy(y.idata() + i * row, x.idata() + index[i] * row, bytes);
  }
  return y;
}

// The rows `index` of an encoded batch, its attention memory included (U k is copied, not
// recomputed).
Seq2SeqImpl::Encoded gather_encoded(const Seq2SeqImpl::Encoded& e, const std::vector<int64_t>& index) {
  const int64_t B = e.memory.dim(0);
  Seq2SeqImpl::Encoded out;
  out.memory = gather_rows(e.memory, index);
  out.src_len = gather_rows(e.src_len, index);
  out.s0 = gather_rows(e.s0, index);
  const nn::AttentionMemory& a = e.attn;
  if (!a.keys.defined()) return out;   // no attention
  nn::AttentionMemory& b = out.attn;
  b.keys = a.keys.is_same(e.memory) ? out.memory : gather_rows(a.keys, index);
  b.values = a.values_are_keys ? b.keys : a.values.is_same(e.memory) ? out.memory : gather_rows(a.values, index);
  b.values_are_keys = a.values_are_keys;
  b.projected_keys = gather_rows(a.projected_keys, index);
  b.mask = a.mask;
  b.mask.key_lengths = a.mask.key_lengths.is_same(e.src_len) ? out.src_len : gather_rows(a.mask.key_lengths, index);
  if (a.mask.keep.defined() && a.mask.keep.dim(0) == B) b.mask.keep = gather_rows(a.mask.keep, index);   // local_p
  return out;
}

}  // namespace

struct Seq2SeqDecoderState::Impl {
  Seq2SeqImpl::Encoded source;          // one row per sentence, as encoded
  Seq2SeqImpl::Encoded enc;             // one row per row: the rows' sentences
  std::vector<int64_t> sentence;        // per row
  Seq2SeqImpl::DecoderState st;
  Tensor gx, o, logits;                 // [R, G], [R, Do], [R, V]
  int64_t t = 0;                        // steps done
};

Seq2SeqDecoderState::Seq2SeqDecoderState() = default;
Seq2SeqDecoderState::~Seq2SeqDecoderState() = default;
Seq2SeqDecoderState::Seq2SeqDecoderState(Seq2SeqDecoderState&&) noexcept = default;
Seq2SeqDecoderState& Seq2SeqDecoderState::operator=(Seq2SeqDecoderState&&) noexcept = default;

int64_t Seq2SeqDecoderState::rows() const { return impl_ ? static_cast<int64_t>(impl_->sentence.size()) : 0; }

void Seq2SeqDecoderState::select(const std::vector<int64_t>& keep) {
  if (!impl_) throw ConfigError("seq2seq decoder state: select needs a state from start_decoding");
  const int64_t R = rows();
  for (int64_t r : keep)
    if (r < 0 || r >= R)
      throw ShapeError("seq2seq decoder state: row " + std::to_string(r) + " out of range [0, " + std::to_string(R) +
                       ")");
  Impl& d = *impl_;
  std::vector<int64_t> sentence(keep.size());
  for (size_t i = 0; i < keep.size(); ++i) sentence[i] = d.sentence[static_cast<size_t>(keep[i])];
  d.st.s.h = gather_rows(d.st.s.h, keep);
  d.st.s.c = gather_rows(d.st.s.c, keep);
  d.st.feed = gather_rows(d.st.feed, keep);
  const int64_t n = static_cast<int64_t>(keep.size());
  d.st.gx = Tensor({n, d.st.gx.dim(1)});   // scratch
  if (d.st.cs.defined()) d.st.cs = Tensor({n, d.st.cs.dim(1)});
  if (sentence != d.sentence) d.enc = gather_encoded(d.source, sentence);
  d.sentence = std::move(sentence);
}

Seq2SeqDecoderState Seq2Seq::start_decoding(const Tensor& src, const Tensor& src_len, int64_t copies) const {
  Seq2SeqImpl::check_source(*this, src, src_len, "seq2seq decoding");
  if (copies < 1) throw ConfigError("seq2seq decoding: copies must be >= 1, got " + std::to_string(copies));
  Rng unused(0);
  Seq2SeqDecoderState state;
  state.impl_ = std::make_unique<Seq2SeqDecoderState::Impl>();
  Seq2SeqDecoderState::Impl& d = *state.impl_;
  d.source = Seq2SeqImpl::encode(*this, src, src_len, false, unused, nullptr);
  const int64_t R = src.dim(0) * copies;
  d.sentence.resize(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) d.sentence[static_cast<size_t>(r)] = r / copies;
  if (copies == 1) {
    d.enc = d.source;
  } else {   // the attention memory prepared over the repeated rows
    d.enc.memory = gather_rows(d.source.memory, d.sentence);
    d.enc.src_len = gather_rows(d.source.src_len, d.sentence);
    d.enc.s0 = gather_rows(d.source.s0, d.sentence);
    Seq2SeqImpl::prepare_attention(config_, attention_.get(), d.enc);
  }
  d.st = Seq2SeqImpl::initial_state(*this, d.enc);
  return state;
}

Tensor Seq2Seq::decode_step(const Tensor& ids, Seq2SeqDecoderState& state, Tensor* weights) const {
  if (!state.impl_) throw ConfigError("seq2seq: decode_step needs a state from start_decoding");
  Seq2SeqDecoderState::Impl& d = *state.impl_;
  const Seq2SeqConfig& c = config_;
  const int64_t R = state.rows(), E = c.embed_dim, Do = c.output_input_dim(), V = c.tgt_vocab;
  check_tensor(ids, {R}, "seq2seq: decode_step ids [R]", DType::i32);
  if (!d.logits.defined() || d.logits.dim(0) != R) {
    d.gx = Tensor({R, decoder_.gates()});
    d.o = Tensor({R, Do});
    d.logits = Tensor({R, V});
  }
  const Tensor e = tgt_embed_.forward(ids, nullptr);
  decoder_.project(e.data(), E, R, /*col=*/0, E, /*with_bias=*/true, 0.0f, d.gx.data());
  Tensor w = Seq2SeqImpl::decoder_step(*this, d.t, d.gx.data(), e.data(), d.st, d.enc, d.o.data(),
                                       d.st.cs.defined() ? d.st.cs.data() : nullptr, nullptr);
  ++d.t;
  // logits = o W_o^T + b_o
  blas::gemm(Trans::N, Trans::T, R, V, Do, 1.0f, d.o.data(), Do, output_.W.value.data(), Do, 0.0f, d.logits.data(), V);
  const float* b = output_.b.value.data();
  for (int64_t r = 0; r < R; ++r)
    for (int64_t v = 0; v < V; ++v) d.logits.at(r * V + v) += b[v];
  if (weights != nullptr) *weights = w;
  return d.logits;
}

}  // namespace attn::models

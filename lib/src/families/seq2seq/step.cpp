// seq2seq::Seq2Seq run one decoder step at a time over B rows (the incremental decoding API that
// attn::decode's searches drive): the decoder's step (nn::AttentionDecoder), then the step's
// output projection over all B rows as one GEMM; selecting rows gathers the recurrent state,
// and the source memory only when the rows' sentences change.
#include <cstring>

#include "attn/blas/blas.hpp"
#include "attn/families/seq2seq/model.hpp"
#include "model_impl.hpp"

namespace attn::seq2seq {
namespace {

using blas::Trans;
using nn::gather_rows;

}  // namespace

struct Seq2SeqDecoderState::Impl {
  nn::AttentionMemory source;           // one row per sentence, as encoded
  nn::AttentionMemory memory;           // one row per row: the rows' sentences
  std::vector<int64_t> sentence;        // per row
  nn::AttentionDecoderState st;
  Tensor gx, o, logits;                 // [B, G], [B, Do], [B, V]
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
  d.st.select(keep);
  if (sentence != d.sentence) d.memory = gather_rows(d.source, sentence);
  d.sentence = std::move(sentence);
}

Seq2SeqDecoderState Seq2Seq::start_decoding(const Tensor& src, const Tensor& src_len, int64_t copies) const {
  Seq2SeqImpl::check_source(*this, src, src_len, "seq2seq decoding");
  if (copies < 1) throw ConfigError("seq2seq decoding: copies must be >= 1, got " + std::to_string(copies));
  Rng unused(0);
  Seq2SeqDecoderState state;
  state.impl_ = std::make_unique<Seq2SeqDecoderState::Impl>();
  Seq2SeqDecoderState::Impl& d = *state.impl_;
  const Seq2SeqImpl::Encoded enc = Seq2SeqImpl::encode(*this, src, src_len, false, unused, nullptr);
  d.source = enc.attn;
  const int64_t R = src.dim(0) * copies;
  d.sentence.resize(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) d.sentence[static_cast<size_t>(r)] = r / copies;
  if (copies == 1) {
    d.memory = enc.attn;
    d.st = decoder_.initial_state(enc.s0);
  } else {   // the attention memory prepared over the repeated rows
    d.memory = decoder_.prepare(gather_rows(enc.memory, d.sentence), gather_rows(enc.src_len, d.sentence));
    d.st = decoder_.initial_state(gather_rows(enc.s0, d.sentence));
  }
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
  decoder_.project_input(e.data(), E, R, d.gx.data());
  Tensor w = decoder_.step(d.t, d.gx.data(), d.st, d.memory, d.o.data(), Do, nullptr);
  ++d.t;
  if (c.attention_style == AttentionStyle::bahdanau)   // o = [s_t; c_t; e_t]
    for (int64_t r = 0; r < R; ++r)
      std::memcpy(d.o.data() + r * Do + c.dec_hidden + c.context_dim(), e.data() + r * E,
                  static_cast<size_t>(E) * sizeof(float));
  // logits = o W_o^T + b_o
  blas::gemm(Trans::N, Trans::T, R, V, Do, 1.0f, d.o.data(), Do, output_.W.value.data(), Do, 0.0f, d.logits.data(), V);
  const float* b = output_.b.value.data();
  for (int64_t r = 0; r < R; ++r)
    for (int64_t v = 0; v < V; ++v) d.logits.at(r * V + v) += b[v];
  if (weights != nullptr) *weights = w;
  return d.logits;
}

}  // namespace attn::seq2seq

// Greedy search and beam search of the RNN encoder-decoder: the searches of
// decode/search.hpp over a Stepper made of the model's Seq2SeqDecoderState.
#include "attn/families/seq2seq/decode.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "attn/core/error.hpp"
#include "attn/data/vocab.hpp"
#include "attn/decode/search.hpp"

namespace attn::seq2seq {
namespace {


// The model's rows are slots of a fixed batch of N x BW rows, sentence n in slots n BW ..
// n BW + BW - 1, as in the seq2seq search this replaced: OpenBLAS's result for a row of a GEMM
// depends on how many rows the GEMM has (its edge kernels), so keeping that batch is what keeps greedy
// search bit-identical and beam search identical wherever its rules did not change. (Dropping
// the finished rows, as the Transformer does, measured faster but moved scores and alignments
// in their last bits.) A search row is the slot of its sentence at its rank among the
// sentence's rows; slots without a row are still run, fed EOS, and never read.
class Seq2SeqStepper final : public decode::Stepper {
 public:
  Seq2SeqStepper(const Seq2Seq& model, const Tensor& src, const Tensor& src_len, int64_t K)
      : model_(model), K_(K), state_(model.start_decoding(src, src_len, K)) {
    const int64_t N = src.dim(0);
    for (int64_t n = 0; n < N; ++n) {
      slot_.push_back(n * K);
      sentence_.push_back(n);
    }
  }

  int64_t vocab() const override { return model_.config().tgt_vocab; }
  decode::LogSoftmax log_softmax() const override { return decode::LogSoftmax::double_sum; }

  Tensor step(const std::vector<int32_t>& fed) override {
    const int64_t P = state_.rows(), R = static_cast<int64_t>(fed.size());
    Tensor ids = Tensor::from_ints({P}, std::vector<int32_t>(static_cast<size_t>(P), data::kEos));
    for (int64_t r = 0; r < R; ++r) ids.idata()[slot_[static_cast<size_t>(r)]] = fed[static_cast<size_t>(r)];
    const Tensor logits = model_.decode_step(ids, state_, &weights_);
    if (!weights_.empty()) weights_ = slots(weights_);
    return slots(logits);
  }

  void keep(const std::vector<int64_t>& rows) override {
    std::vector<int64_t> slot(rows.size()), sentence(rows.size());
    std::vector<int64_t> parent(static_cast<size_t>(state_.rows()));   // per slot: the slot it continues
    for (size_t i = 0; i < parent.size(); ++i) parent[i] = static_cast<int64_t>(i);
    bool moved = false;
    for (size_t j = 0; j < rows.size(); ++j) {
      const int64_t n = sentence_[static_cast<size_t>(rows[j])];
      const int64_t rank = j > 0 && sentence[j - 1] == n ? slot[j - 1] - n * K_ + 1 : 0;
      if (rank >= K_) throw ConfigError("seq2seq decoding: more than " + std::to_string(K_) + " rows of a sentence");
      sentence[j] = n;
      slot[j] = n * K_ + rank;
      parent[static_cast<size_t>(slot[j])] = slot_[static_cast<size_t>(rows[j])];
      moved |= parent[static_cast<size_t>(slot[j])] != slot[j];
    }
    if (moved) state_.select(parent);
    slot_ = std::move(slot);
    sentence_ = std::move(sentence);
  }

  Tensor attention() const override { return weights_; }

 private:
  // The search's rows of x [N*BW, ...] (one per slot): [B, ...] (x itself when every slot is a
  // row, in order).
  Tensor slots(const Tensor& x) const {
    const int64_t P = x.dim(0), R = static_cast<int64_t>(slot_.size()), W = x.numel() / P;
    if (R == P) return x;   // every slot holds its own row: slot_ is the identity
    Tensor y = Tensor::uninitialized({R, W});
    for (int64_t r = 0; r < R; ++r) std::copy_n(x.data() + slot_[static_cast<size_t>(r)] * W, W, y.data() + r * W);
    return y;
  }

  const Seq2Seq& model_;
  int64_t K_;
  Seq2SeqDecoderState state_;
  std::vector<int64_t> slot_;       // per search row: its slot
  std::vector<int64_t> sentence_;   // per search row: its sentence
  Tensor weights_;                  // [B, S] of the last step, or empty
};

decode::Decoded search(const Seq2Seq& model, const Tensor& src, const Tensor& src_len, const decode::DecodeOptions& o,
                       bool beam) {
  const bool alignment = o.want_attention && model.config().attention != nn::ScoreKind::none;
  const decode::SearchOptions options{.max_len = o.max_len,
                                      .beam = beam ? o.beam : 1,
                                      .length_penalty = {.kind = decode::PenaltyKind::power, .alpha = o.length_penalty},
                                      .want_attention = alignment};
  decode::check_search_options(options, beam ? "seq2seq beam search" : "seq2seq greedy search");
  Seq2SeqStepper stepper(model, src, src_len, options.beam);
  const int64_t N = src.dim(0);
  decode::SearchResult r = beam ? decode::beam_search(stepper, N, options) : decode::greedy_search(stepper, N, options);
  decode::Decoded out{std::move(r.tokens), std::move(r.scores), {}, {}};
  if (alignment) out.attention.emplace_back("alignment", std::move(r.attention));
  return out;
}

}  // namespace

decode::Decoded greedy(const Seq2Seq& model, const Tensor& src, const Tensor& src_len,
                       const decode::DecodeOptions& options) {
  return search(model, src, src_len, options, /*beam=*/false);
}

decode::Decoded beam_search(const Seq2Seq& model, const Tensor& src, const Tensor& src_len,
                            const decode::DecodeOptions& options) {
  return search(model, src, src_len, options, /*beam=*/true);
}

}  // namespace attn::seq2seq

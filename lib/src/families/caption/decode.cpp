// Greedy and beam search of the captioner: the searches of decode/search.hpp over a Stepper made
// of the model's CaptionerDecoderState.
#include "attn/families/caption/decode.hpp"

#include <utility>

#include "attn/decode/search.hpp"

namespace attn::caption {
namespace {

// Search rows are the state's rows, in order; the search drops finished rows and multiplies beam
// parents through keep.
class CaptionStepper final : public decode::Stepper {
 public:
  CaptionStepper(const Captioner& model, const Tensor& images) : model_(model), state_(model.start_decoding(images)) {}

  int64_t vocab() const override { return model_.config().vocab; }
  decode::LogSoftmax log_softmax() const override { return decode::LogSoftmax::double_sum; }

  Tensor step(const std::vector<int32_t>& fed) override {
    return model_.decode_step(Tensor::from_ints({static_cast<int64_t>(fed.size())}, fed), state_, &weights_);
  }
  void keep(const std::vector<int64_t>& rows) override { state_.select(rows); }
  Tensor attention() const override { return weights_; }

 private:
  const Captioner& model_;
  CaptionerDecoderState state_;
  Tensor weights_;   // [B, L] of the last step
};

decode::Decoded search(const Captioner& model, const Tensor& images, const decode::DecodeOptions& o, bool beam) {
  const decode::SearchOptions options{.max_len = o.max_len,
                                      .beam = beam ? o.beam : 1,
                                      .length_penalty = {.kind = decode::PenaltyKind::power, .alpha = o.length_penalty},
                                      .want_attention = o.want_attention};
  check_search_options(options, beam ? "caption beam search" : "caption greedy search");
  CaptionStepper stepper(model, images);
  const int64_t N = images.dim(0);
  decode::SearchResult r = beam ? decode::beam_search(stepper, N, options) : decode::greedy_search(stepper, N, options);
  decode::Decoded out{std::move(r.tokens), std::move(r.scores), {}, {}};
  if (o.want_attention) out.attention.emplace_back("attention", std::move(r.attention));
  return out;
}

}  // namespace

decode::Decoded greedy(const Captioner& model, const Tensor& images, const decode::DecodeOptions& options) {
  return search(model, images, options, /*beam=*/false);
}

decode::Decoded beam_search(const Captioner& model, const Tensor& images, const decode::DecodeOptions& options) {
  return search(model, images, options, /*beam=*/true);
}

}  // namespace attn::caption

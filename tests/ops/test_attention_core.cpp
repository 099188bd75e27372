#include "attn/ops/attention_core.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "attn/core/flops.hpp"
#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;
using ops::AttentionMask;
using ops::AttentionOptions;
using ops::AttentionPath;

namespace {

struct MaskCase {
  std::string name;
  AttentionMask mask;
};

// Every mask kind, for a batch of B = 2 with T query rows over S keys.
std::vector<MaskCase> mask_cases(int64_t T, int64_t S, Rng& rng) {
  std::vector<MaskCase> cases;
  cases.push_back({"none", AttentionMask::none()});
  cases.push_back({"padding", AttentionMask::padding(Tensor::from_ints(
                                  {2}, {static_cast<int32_t>(S - 2), static_cast<int32_t>(S)}))});
  cases.push_back({"causal", AttentionMask::causal_mask()});
  cases.push_back({"window", AttentionMask::window_mask(1)});
  cases.push_back({"window+causal", AttentionMask::window_mask(2, /*causal=*/true)});
  AttentionMask keep;
  keep.keep = Tensor({2, T, S}, DType::i32);
  for (int64_t i = 0; i < keep.keep.numel(); ++i) keep.keep.idata()[i] = rng.uniform() < 0.7f;
  keep.key_lengths = Tensor::from_ints({2}, {static_cast<int32_t>(S - 1), static_cast<int32_t>(S)});
  cases.push_back({"keep+padding", keep});
  return cases;
}

// The visibility rule written out independently of ops::row_mask.
bool visible(const AttentionMask& m, int64_t b, int64_t t, int64_t j, int64_t T, int64_t S) {
  const int64_t pos = m.query_offset + t;
  if (m.key_lengths.defined() && !m.key_lengths.empty() && j >= m.key_lengths.idata()[b]) return false;
  if (m.causal && j > pos) return false;
  if (m.window >= 0 && std::abs(pos - j) > m.window) return false;
  if (m.keep.defined() && !m.keep.empty()) {
    const int64_t mb = m.keep.dim(0) == 1 ? 0 : b;
    if (m.keep.idata()[(mb * T + t) * S + j] == 0) return false;
  }
  return true;
}

AttentionOptions stream_opts(int64_t bq, int64_t bk) {
  AttentionOptions o;
  o.path = AttentionPath::streaming;
  o.block_q = bq;
  o.block_k = bk;
  return o;
}

AttentionOptions materialised_opts() {
  AttentionOptions o;
  o.path = AttentionPath::materialised;
  return o;
}

}  // namespace

TEST_CASE("attention: forward on a 2x2 example by hand", "[unit][attention]") {
  // Scores ln3 and 0 give weights 3/4, 1/4; the query 0 gives 1/2, 1/2.
  const Tensor q = Tensor::from({1, 1, 2, 1}, {std::log(3.0f), 0.0f});
  const Tensor k = Tensor::from({1, 1, 2, 1}, {1.0f, 0.0f});
  const Tensor v = Tensor::from({1, 1, 2, 1}, {4.0f, 8.0f});
  Tensor w;
  const Tensor out = ops::attention_forward(q, k, v, 1.0f, AttentionMask::none(), nullptr, &w);
  CHECK_THAT(out, test::close_to(Tensor::from({1, 1, 2, 1}, {5.0f, 6.0f}), 1e-6));
  CHECK_THAT(w, test::close_to(Tensor::from({1, 1, 2, 2}, {0.75f, 0.25f, 0.5f, 0.5f}), 1e-6));
  // Causal: row 0 sees key 0 only.
  const Tensor causal = ops::attention_forward(q, k, v, 1.0f, AttentionMask::causal_mask(), nullptr, &w);
  CHECK_THAT(causal, test::close_to(Tensor::from({1, 1, 2, 1}, {4.0f, 6.0f}), 1e-6));
  CHECK(w.at(1) == 0.0f);
}

TEST_CASE("attention: weight rows sum to 1 with exact zeros on masked keys", "[unit][attention]") {
  Rng rng(11);
  const int64_t B = 2, H = 2, T = 6, S = 7, D = 3;
  const Tensor q = randn({B, H, T, D}, rng), k = randn({B, H, S, D}, rng), v = randn({B, H, S, D}, rng);
  for (const MaskCase& mc : mask_cases(T, S, rng)) {
    INFO("mask " << mc.name);
    Tensor w;
    ops::attention_forward(q, k, v, 0.5f, mc.mask, nullptr, &w);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < T; ++t) {
          double sum = 0;
          bool any = false;
          for (int64_t j = 0; j < S; ++j) {
            const float x = w.at(((b * H + h) * T + t) * S + j);
            if (visible(mc.mask, b, t, j, T, S)) {
              any = true;
              CHECK(x > 0.0f);
            } else {
              CHECK(x == 0.0f);
            }
            sum += x;
          }
          CHECK(sum == Approx(any ? 1.0 : 0.0).margin(1e-6));
        }
  }
}

TEST_CASE("attention: a row with no visible key gives zeros, not NaN, on both paths", "[unit][attention]") {
  Rng rng(5);
  const int64_t T = 3, S = 5, D = 2;
  const Tensor q = randn({2, 1, T, D}, rng), k = randn({2, 1, S, D}, rng), v = randn({2, 1, S, D}, rng);
  const AttentionMask mask = AttentionMask::padding(Tensor::from_ints({2}, {0, 5}));
  for (const AttentionOptions& opt : {materialised_opts(), stream_opts(2, 2)}) {
    ops::AttentionCache cache;
    const Tensor out = ops::attention_forward(q, k, v, 1.0f, mask, &cache, nullptr, opt);
    const Tensor dout = randn(out.shape(), rng);
    const ops::AttentionGrads g = ops::attention_backward(dout, cache);
    for (int64_t i = 0; i < T * D; ++i) CHECK(out.at(i) == 0.0f);   // batch entry 0
    for (int64_t i = 0; i < T * D; ++i) CHECK(g.dq.at(i) == 0.0f);
    for (int64_t i = 0; i < S * D; ++i) CHECK(g.dk.at(i) == 0.0f);
    for (int64_t i = 0; i < out.numel(); ++i) CHECK(std::isfinite(out.at(i)));
  }
}

TEST_CASE("attention: the streaming path equals the materialised path", "[unit][attention]") {
  Rng rng(21);
  const int64_t B = 2, H = 3, T = 11, S = 13, Dk = 5, Dv = 4;
  const Tensor q = randn({B, H, T, Dk}, rng), k = randn({B, H, S, Dk}, rng), v = randn({B, H, S, Dv}, rng);
  const Tensor dout = randn({B, H, T, Dv}, rng);
  std::vector<MaskCase> cases = mask_cases(T, S, rng);
  AttentionMask shifted = AttentionMask::causal_mask();   // KV-cache style: T queries over S keys
  shifted.query_offset = S - T;
  cases.push_back({"causal, offset", shifted});
  for (const MaskCase& mc : cases)
    for (int64_t bk : {1, 4, 64}) {
      INFO("mask " << mc.name << ", block_k " << bk);
      ops::AttentionCache cm, cs;
      const Tensor om = ops::attention_forward(q, k, v, 0.7f, mc.mask, &cm, nullptr, materialised_opts());
      const Tensor os = ops::attention_forward(q, k, v, 0.7f, mc.mask, &cs, nullptr, stream_opts(3, bk));
      CHECK(cs.streamed);
      CHECK_FALSE(cm.streamed);
      CHECK_THAT(os, test::close_to(om, 1e-5));
      const ops::AttentionGrads gm = ops::attention_backward(dout, cm);
      const ops::AttentionGrads gs = ops::attention_backward(dout, cs);
      CHECK_THAT(gs.dq, test::close_to(gm.dq, 1e-5));
      CHECK_THAT(gs.dk, test::close_to(gm.dk, 1e-5));
      CHECK_THAT(gs.dv, test::close_to(gm.dv, 1e-5));
    }
}

// The materialised path runs one task per head when the heads divide among the threads, and
// otherwise two batched products around a row-parallel softmax: both must give the one-thread
// numbers (B NH = 2 and 6 heads on 2 and 3 threads covers both ways).
TEST_CASE("attention: the materialised path gives the same numbers on any number of threads",
          "[unit][attention]") {
  const int before = num_threads();
  Rng rng(8);
  const int64_t B = 2, T = 9, S = 10, Dk = 6, Dv = 5;
  for (const MaskCase& mc : mask_cases(T, S, rng))
    for (int64_t H : {1, 3}) {
      const Tensor q = randn({B, H, T, Dk}, rng), k = randn({B, H, S, Dk}, rng), v = randn({B, H, S, Dv}, rng);
      set_num_threads(1);
      Tensor w1, w;
      const Tensor o1 = ops::attention_forward(q, k, v, 0.6f, mc.mask, nullptr, &w1, materialised_opts());
      for (int threads : {2, 3}) {
        INFO("mask " << mc.name << ", H " << H << ", threads " << threads);
        set_num_threads(threads);
        const Tensor o = ops::attention_forward(q, k, v, 0.6f, mc.mask, nullptr, &w, materialised_opts());
        CHECK_THAT(o, test::close_to(o1, 1e-6));
        CHECK_THAT(w, test::close_to(w1, 1e-6));
      }
    }
  set_num_threads(before);
}

TEST_CASE("attention: the automatic path streams long keys and materialises when weights are asked",
          "[unit][attention]") {
  Rng rng(2);
  const int64_t S = ops::kStreamMinKeys + 1;
  const Tensor q = randn({1, 1, 2, 4}, rng), k = randn({1, 1, S, 4}, rng), v = randn({1, 1, S, 4}, rng);
  ops::AttentionCache cache;
  ops::attention_forward(q, k, v, 0.5f, AttentionMask::none(), &cache);
  CHECK(cache.streamed);
  CHECK(cache.weights.empty());
  Tensor w;
  ops::attention_forward(q, k, v, 0.5f, AttentionMask::none(), &cache, &w);
  CHECK_FALSE(cache.streamed);
  CHECK(w.shape() == Shape{1, 1, 2, S});
}

TEST_CASE("attention: a window mask skips key blocks outside the window", "[unit][attention]") {
  // T = S = 32, radius 2, query blocks of 4: block [t0, t0+4) sees keys [t0-2, t0+6), i.e. 8
  // keys (6 at either edge), so the work is O(T P D), not O(T S D).
  Rng rng(4);
  const int64_t B = 1, H = 2, L = 32, Dk = 3, Dv = 5;
  const Tensor q = randn({B, H, L, Dk}, rng), k = randn({B, H, L, Dk}, rng), v = randn({B, H, L, Dv}, rng);
  flops::reset();
  ops::attention_forward(q, k, v, 1.0f, AttentionMask::window_mask(2), nullptr, nullptr, stream_opts(4, 8));
  const int64_t widths = 6 + 6 * 8 + 6;   // 8 query blocks
  CHECK(flops::count() == B * H * 4 * widths * (Dk + Dv));
  flops::reset();
  ops::attention_forward(q, k, v, 1.0f, AttentionMask::causal_mask(), nullptr, nullptr, stream_opts(8, 8));
  CHECK(flops::count() == B * H * 8 * (8 + 16 + 24 + 32) * (Dk + Dv));   // lower triangle of blocks
}

TEST_CASE("attention_backward matches finite differences for every mask and both paths",
          "[gradcheck][attention]") {
  Rng rng(7);
  const int64_t B = 2, H = 2, T = 5, S = 6, Dk = 3, Dv = 4;
  Tensor q = randn({B, H, T, Dk}, rng), k = randn({B, H, S, Dk}, rng), v = randn({B, H, S, Dv}, rng);
  const Tensor r = randn({B, H, T, Dv}, rng);
  for (const MaskCase& mc : mask_cases(T, S, rng))
    for (const AttentionOptions& opt : {materialised_opts(), stream_opts(2, 2)}) {
      INFO("mask " << mc.name << (opt.path == AttentionPath::streaming ? ", streaming" : ", materialised"));
      auto loss = [&] {
        return test::dot(r, ops::attention_forward(q, k, v, 0.6f, mc.mask, nullptr, nullptr, opt));
      };
      ops::AttentionCache cache;
      ops::attention_forward(q, k, v, 0.6f, mc.mask, &cache, nullptr, opt);
      const ops::AttentionGrads g = ops::attention_backward(r, cache);
      CHECK_THAT(g.dq, test::close_to(test::numeric_grad(loss, q), 1e-2));
      CHECK_THAT(g.dk, test::close_to(test::numeric_grad(loss, k), 1e-2));
      CHECK_THAT(g.dv, test::close_to(test::numeric_grad(loss, v), 1e-2));
    }
}

TEST_CASE("masked_softmax_backward_inplace matches finite differences", "[gradcheck][attention]") {
  Rng rng(8);
  Tensor x = randn({2, 1, 3, 5}, rng);
  const Tensor r = randn({2, 1, 3, 5}, rng);
  const AttentionMask mask = AttentionMask::window_mask(1);
  auto loss = [&] {
    Tensor p = x.clone();
    ops::masked_softmax_inplace(p, mask);
    return test::dot(r, p);
  };
  Tensor p = x.clone();
  ops::masked_softmax_inplace(p, mask);
  Tensor dx = r.clone();
  ops::masked_softmax_backward_inplace(dx, p);
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
}

TEST_CASE("attention: bad inputs name the tensor and both shapes", "[unit][attention]") {
  const Tensor q({2, 3, 4, 5}), k({2, 3, 6, 5}), v({2, 3, 6, 7});
  REQUIRE_THROWS_WITH(
      ops::attention_forward(q, Tensor({2, 3, 6, 4}), v, 1.0f, {}, nullptr),
      Catch::Contains("attention: k [B, H, S, Dk] has shape [2, 3, 6, 4], expected [2, 3, *, 5]"));
  REQUIRE_THROWS_WITH(
      ops::attention_forward(q, k, Tensor({2, 3, 5, 7}), 1.0f, {}, nullptr),
      Catch::Contains("attention: v [B, H, S, Dv] has shape [2, 3, 5, 7], expected [2, 3, 6, *]"));
  REQUIRE_THROWS_WITH(
      ops::attention_forward(q, k, v, 1.0f, AttentionMask::padding(Tensor::from_ints({2}, {3, 7})), nullptr),
      Catch::Contains("key_lengths[1] = 7 is outside [0, S = 6]"));
  REQUIRE_THROWS_WITH(ops::attention_forward(
                          q, k, v, 1.0f, AttentionMask::padding(Tensor::from_ints({3}, {1, 2, 3})), nullptr),
                      Catch::Contains("attention: key_lengths [B] has shape [3], expected [2]"));
  AttentionMask keep;
  keep.keep = Tensor({3, 4, 6}, DType::i32);
  REQUIRE_THROWS_WITH(
      ops::attention_forward(q, k, v, 1.0f, keep, nullptr),
      Catch::Contains(
          "keep mask [B or 1, T, S] has shape [3, 4, 6], expected a leading dimension of 1 or B = 2"));
  REQUIRE_THROWS_WITH(ops::attention_forward(q, k, v, 1.0f, AttentionMask::window_mask(-3), nullptr),
                      Catch::Contains("window radius must be >= 0"));
  ops::AttentionCache cache;
  ops::attention_forward(q, k, v, 1.0f, {}, &cache);
  REQUIRE_THROWS_WITH(
      ops::attention_backward(Tensor({2, 3, 4, 5}), cache),
      Catch::Contains(
          "attention backward: dout [B, H, T, Dv] has shape [2, 3, 4, 5], expected [2, 3, 4, 7]"));
}

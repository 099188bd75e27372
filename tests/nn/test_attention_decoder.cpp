// nn::AttentionDecoder on its own: gradient checks of T steps of the decoder (both orders, both
// cells, with and without the context gate, every score, local-m and local-p, no attention),
// with the gradient of the attention weights too (a captioner's doubly stochastic penalty);
// the gate by hand; parameter names and bad configurations.
#include "attn/nn/attention_decoder.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "test_support.hpp"

using namespace attn;
using nn::AttentionStyle;
using nn::LocalAttention;
using nn::RnnCell;
using nn::ScoreKind;

namespace {

struct Form {
  AttentionStyle style;
  RnnCell cell;
  bool gate;
  ScoreKind score = ScoreKind::concat;
  LocalAttention local = LocalAttention::global;
};

std::string describe(const Form& f) {
  return std::string(f.style == AttentionStyle::bahdanau ? "bahdanau" : "luong") + "/" + nn::rnn_cell_name(f.cell) +
         (f.gate ? "/gate/" : "/no gate/") + nn::score_kind_name(f.score) +
         (f.local == LocalAttention::global ? "" : f.local == LocalAttention::local_m ? "/local-m" : "/local-p");
}

// B = 2 rows, S = 5 memory vectors (lengths 5 and 3), T = 3 steps; E = 3, Dd = 4, Dv = 5
// (4 for dot scores, which need Dv == Dd).
constexpr int64_t kB = 2, kS = 5, kT = 3;

nn::AttentionDecoderConfig config_of(const Form& f) {
  nn::AttentionDecoderConfig c;
  c.cell = f.cell;
  c.input_dim = 3;
  c.hidden = 4;
  c.score = f.score;
  c.memory_dim = f.score == ScoreKind::dot || f.score == ScoreKind::scaled_dot ? 4 : 5;
  c.attention_dim = 3;
  c.max_len = kS;
  c.style = f.style;
  c.local = f.local;
  c.window = 1;
  c.gate = f.gate;
  return c;
}

// Everything the loss depends on, and the loss:
//   sum_t r_o . o_t + sum_t r_w . weights_t
// over o's stacked rows [T*B, ldo] (ldo two columns wider than o_t, to check the strides).
struct Case {
  nn::AttentionDecoder dec;
  Tensor x, memory, lengths, h0, c0;   // [T*B, E], [B, S, Dv], int32 [B], [B, Dd], [B, Dd]
  Tensor r_o, r_w;                     // [T*B, ldo], [T, B, S]
  int64_t ldo = 0;

  Case(const Form& f, uint64_t seed) {
    const nn::AttentionDecoderConfig c = config_of(f);
    Rng rng(seed);
    dec = nn::AttentionDecoder(c, "decoder", rng);
    // Move parameters away from zero (biases start at 0) so no entry sits at a special point.
    for (Param* p : dec.params())
      for (float& v : p->value.values()) v += rng.uniform(-0.3f, 0.3f);
    ldo = c.output_dim() + 2;
    x = randn({kT * kB, c.input_dim}, rng);
    memory = randn({kB, kS, c.memory_dim}, rng);
    lengths = Tensor::from_ints({kB}, {5, 3});
    h0 = randn({kB, c.hidden}, rng);
    c0 = f.cell == RnnCell::lstm ? randn({kB, c.hidden}, rng) : Tensor();
    r_o = randn({kT * kB, ldo}, rng);
    for (int64_t r = 0; r < kT * kB; ++r)   // the columns past o_t are not the decoder's
      for (int64_t j = c.output_dim(); j < ldo; ++j) r_o.at(r * ldo + j) = 0.0f;
    r_w = randn({kT, kB, kS}, rng);
  }

  // Runs the T steps; with a cache, keeps what backward needs. o: [T*B, ldo] (written).
  double run(Tensor& o, nn::AttentionMemory& mem, nn::AttentionDecoderCache* cache) const {
    mem = dec.prepare(memory, lengths);
    nn::AttentionDecoderState st = dec.initial_state(h0, c0);
    const int64_t G = dec.gates();
    Tensor gx({kT * kB, G});
    dec.project_input(x.data(), x.dim(1), kT * kB, gx.data());
    o = Tensor({kT * kB, ldo});
    double loss = 0.0;
    for (int64_t t = 0; t < kT; ++t) {
      const Tensor w = dec.step(t, gx.data() + t * kB * G, st, mem, o.data() + t * kB * ldo, ldo, cache);
      if (w.defined()) loss += test::dot(r_w[t], w);
    }
    return loss + test::dot(r_o, o);
  }
  double loss() {
    Tensor o;
    nn::AttentionMemory mem;
    return run(o, mem, nullptr);
  }
};

void check_gradients(const Form& f, uint64_t seed) {
  INFO("decoder " << describe(f));
  Case k(f, seed);
  const ParamList params = k.dec.params();
  zero_grads(params);
  Tensor o;
  nn::AttentionMemory mem;
  nn::AttentionDecoderCache cache = k.dec.make_cache(kT, kB);
  const double loss = k.run(o, mem, &cache);
  CHECK(loss == Approx(k.loss()).epsilon(1e-12));   // the cache changes nothing

  nn::AttentionDecoderGrad grad = k.dec.begin_backward(mem, kT, kB);
  const bool attends = f.score != ScoreKind::none;
  for (int64_t t = kT - 1; t >= 0; --t)
    k.dec.step_backward(t, k.r_o.data() + t * kB * k.ldo, k.ldo, o.data() + t * kB * k.ldo, k.ldo, cache, mem, grad,
                        attends ? k.r_w[t] : Tensor());
  k.dec.end_backward(o.data(), k.ldo, cache, mem, grad);
  Tensor dx = zeros_like(k.x);
  k.dec.input_backward(grad, k.x.data(), k.x.dim(1), dx.data(), dx.dim(1));

  auto loss_fn = [&] { return k.loss(); };
  for (Param* p : params) {
    INFO("param " << p->name);
    CHECK_THAT(p->grad, test::close_to(test::numeric_grad(loss_fn, p->value), 1e-2));
  }
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss_fn, k.x), 1e-2));
  CHECK_THAT(grad.dstate.h, test::close_to(test::numeric_grad(loss_fn, k.h0), 1e-2));
  if (f.cell == RnnCell::lstm) CHECK_THAT(grad.dstate.c, test::close_to(test::numeric_grad(loss_fn, k.c0), 1e-2));
  if (attends) CHECK_THAT(grad.memory.dkeys, test::close_to(test::numeric_grad(loss_fn, k.memory), 1e-2));
}

}  // namespace

TEST_CASE("attention decoder gradients: both orders, both cells, with and without the context gate",
          "[gradcheck][attention_decoder]") {
  uint64_t seed = 10;
  for (AttentionStyle style : {AttentionStyle::bahdanau, AttentionStyle::luong})
    for (RnnCell cell : {RnnCell::gru, RnnCell::lstm})
      for (bool gate : {false, true}) check_gradients({style, cell, gate}, seed++);
}

TEST_CASE("attention decoder gradients: every score, local-m, local-p and no attention",
          "[gradcheck][attention_decoder]") {
  uint64_t seed = 30;
  using enum AttentionStyle;
  const std::vector<Form> forms{Form{bahdanau, RnnCell::gru, true, ScoreKind::general, LocalAttention::local_m},
                                Form{luong, RnnCell::lstm, false, ScoreKind::general, LocalAttention::local_m},
                                Form{bahdanau, RnnCell::lstm, false, ScoreKind::concat, LocalAttention::local_p},
                                Form{luong, RnnCell::gru, true, ScoreKind::concat, LocalAttention::local_p},
                                Form{bahdanau, RnnCell::gru, false, ScoreKind::dot},
                                Form{luong, RnnCell::lstm, true, ScoreKind::scaled_dot},
                                Form{bahdanau, RnnCell::lstm, true, ScoreKind::location},
                                Form{bahdanau, RnnCell::gru, false, ScoreKind::none},
                                Form{luong, RnnCell::lstm, false, ScoreKind::none}};
  for (const Form& f : forms)
    check_gradients(f, seed++);
}

TEST_CASE("attention decoder: a gate of w_b = 0, b_b = 0 halves the context", "[unit][attention_decoder]") {
  // The gate's parameters are made last, so both decoders draw the same others.
  Form f{AttentionStyle::bahdanau, RnnCell::lstm, false};
  Rng rng_plain(3), rng_gated(3);
  nn::AttentionDecoder plain(config_of(f), "decoder", rng_plain);
  f.gate = true;
  nn::AttentionDecoder gated(config_of(f), "decoder", rng_gated);
  for (Param* p : gated.params())
    if (p->name.rfind("decoder/gate/", 0) == 0) p->value.zero();   // beta = sigmoid(0) = 1/2
  Rng data(4);
  const Tensor memory = randn({kB, kS, 5}, data), h0 = randn({kB, 4}, data), x = randn({kB, 3}, data);
  const Tensor lengths = Tensor::from_ints({kB}, {5, 3});
  const int64_t Do = 4 + 5;
  Tensor o_plain({kB, Do}), o_gated({kB, Do});
  for (auto [dec, o] : {std::pair{&plain, &o_plain}, std::pair{&gated, &o_gated}}) {
    nn::AttentionMemory mem = dec->prepare(memory, lengths);
    nn::AttentionDecoderState st = dec->initial_state(h0);
    Tensor gx({kB, dec->gates()});
    dec->project_input(x.data(), 3, kB, gx.data());
    dec->step(0, gx.data(), st, mem, o->data(), Do, nullptr);
  }
  // o_0 = [s_0; beta c_0]: c_0 comes from h0 alone, so exactly half; s_0 saw the halved context.
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t i = 4; i < Do; ++i) CHECK(o_gated.at(b * Do + i) == 0.5f * o_plain.at(b * Do + i));
  bool differs = false;
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t i = 0; i < 4; ++i) differs |= o_gated.at(b * Do + i) != o_plain.at(b * Do + i);
  CHECK(differs);
}

TEST_CASE("attention decoder: parameters by module path, bad configurations named", "[unit][attention_decoder]") {
  auto names_of = [](const Form& f) {
    Rng rng(1);
    nn::AttentionDecoder dec(config_of(f), "decoder", rng);
    std::vector<std::string> names;
    for (Param* p : dec.params()) names.push_back(p->name);
    return names;
  };
  const std::vector<std::string> full =
      names_of({AttentionStyle::luong, RnnCell::gru, true, ScoreKind::concat, LocalAttention::local_p});
  CHECK(full == std::vector<std::string>{"decoder/rnn/W_ih", "decoder/rnn/W_hh", "decoder/rnn/b_ih",
                                         "decoder/rnn/b_hh", "decoder/attention/W", "decoder/attention/U",
                                         "decoder/attention/v", "decoder/local_p/W", "decoder/local_p/v",
                                         "decoder/combine/W", "decoder/gate/W", "decoder/gate/b"});
  CHECK(names_of({AttentionStyle::bahdanau, RnnCell::lstm, false, ScoreKind::general}) ==
        std::vector<std::string>{"decoder/rnn/W_ih", "decoder/rnn/W_hh", "decoder/rnn/b", "decoder/attention/W"});

  nn::AttentionDecoderConfig c = config_of({AttentionStyle::bahdanau, RnnCell::gru, true, ScoreKind::none});
  Rng rng(1);
  REQUIRE_THROWS_WITH(nn::AttentionDecoder(c, "decoder", rng),
                      Catch::Equals("attention decoder: the context gate needs an attention score"));
  c = config_of({AttentionStyle::bahdanau, RnnCell::gru, false, ScoreKind::none, LocalAttention::local_m});
  REQUIRE_THROWS_WITH(nn::AttentionDecoder(c, "decoder", rng),
                      Catch::Equals("attention decoder: local attention needs an attention score"));
  c = config_of({AttentionStyle::luong, RnnCell::gru, false, ScoreKind::general, LocalAttention::local_p});
  c.window = 0;
  REQUIRE_THROWS_WITH(nn::AttentionDecoder(c, "decoder", rng),
                      Catch::Equals("attention decoder: window must be >= 1 with local attention, got 0"));
  c = config_of({AttentionStyle::bahdanau, RnnCell::gru, false});
  nn::AttentionDecoder dec(c, "decoder", rng);
  REQUIRE_THROWS_WITH(dec.prepare(Tensor({2, 5, 4}), Tensor()),
                      Catch::Contains("attention decoder: memory [B, S, Dv] has shape [2, 5, 4], expected [*, *, 5]"));
  REQUIRE_THROWS_WITH(dec.initial_state(Tensor({2, 3})),
                      Catch::Contains("attention decoder: h0 [B, Dd] has shape [2, 3], expected [*, 4]"));
}

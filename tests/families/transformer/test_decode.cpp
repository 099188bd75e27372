// Tests of attn::decode over a Transformer: the KV-cached decoder against the teacher-forced
// model and against re-running the prefix, beam 1 against greedy, sampling, attention maps,
// and an encoder-decoder learning to reverse sequences.
#include "attn/families/transformer/decode.hpp"

#include <chrono>
#include <cmath>

#include "attn/optim/adam.hpp"
#include "test_support.hpp"

using namespace attn;
using data::TokenBatch;
using transformer::Transformer;
using transformer::TransformerArch;
using transformer::TransformerConfig;

namespace {

TransformerConfig small_config(TransformerArch arch) {
  TransformerConfig c;
  c.arch = arch;
  c.src_vocab = 13;
  c.tgt_vocab = 12;
  c.d_model = 16;
  c.heads = 4;
  c.d_ff = 32;
  c.enc_layers = 2;
  c.dec_layers = 2;
  c.dropout = 0.0f;
  c.max_len = 20;
  return c;
}

Tensor random_src(int64_t N, int64_t S, const std::vector<int32_t>& len, int64_t vocab, Rng& rng) {
  Tensor t({N, S}, DType::i32);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < len[static_cast<size_t>(n)]; ++i)
      t.idata()[n * S + i] = static_cast<int32_t>(4 + rng.uniform_int(vocab - 4));
  return t;
}

// Random weights make EOS unlikely to win early; a bias towards it makes lengths vary.
void favour_eos(Transformer& model, float amount) {
  for (Param* p : model.params())
    if (p->name == "output/b") p->value.at(data::kEos) += amount;
}

}  // namespace

TEST_CASE("decode_step over the KV cache equals the teacher-forced logits", "[unit][decode]") {
  for (auto norm : {nn::NormPosition::post, nn::NormPosition::pre})
    for (TransformerArch arch : {TransformerArch::encdec, TransformerArch::lm}) {
      Rng rng(41);
      TransformerConfig c = small_config(arch);
      c.norm = norm;
      c.attn_window = 2;
      const Transformer model(c, rng);
      const int64_t N = 3, T = 6;
      TokenBatch batch;
      const std::vector<int32_t> len{7, 4, 5};
      batch.src = random_src(N, 7, len, c.src_vocab, rng);
      batch.src_len = Tensor::from_ints({N}, len);
      batch.tgt = random_src(N, T, {6, 6, 6}, c.tgt_vocab, rng);
      batch.tgt_len = Tensor::from_ints({N}, {6, 6, 6});
      const Tensor want = model.logits(batch);   // [N, T, V]
      const bool encdec = arch == TransformerArch::encdec;
      const Tensor memory = encdec ? model.encode(batch.src, batch.src_len) : Tensor();
      transformer::DecoderState st = model.start_decoding(memory, encdec ? batch.src_len : Tensor(), T, N);
      // Feed BOS + tgt[:2] at once, then one token at a time.
      Tensor first({N, 3}, DType::i32);
      for (int64_t n = 0; n < N; ++n) {
        first.idata()[n * 3] = data::kBos;
        first.idata()[n * 3 + 1] = batch.tgt.idata()[n * T];
        first.idata()[n * 3 + 2] = batch.tgt.idata()[n * T + 1];
      }
      Tensor got = model.decode_step(first, st);   // [N, 3, V]
      const int64_t V = c.tgt_vocab;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < 3 * V; ++i) CHECK(got.at(n * 3 * V + i) == Approx(want.at(n * T * V + i)).margin(1e-5));
      for (int64_t t = 3; t < T; ++t) {
        Tensor tok({N, 1}, DType::i32);
        for (int64_t n = 0; n < N; ++n) tok.idata()[n] = batch.tgt.idata()[n * T + t - 1];
        got = model.decode_step(tok, st);
        for (int64_t n = 0; n < N; ++n)
          for (int64_t v = 0; v < V; ++v)
            CHECK(got.at(n * V + v) == Approx(want.at((n * T + t) * V + v)).margin(1e-5));
      }
      CHECK(st.length == T);
    }
}

TEST_CASE("greedy and beam search: cached decoding equals re-running the prefix", "[unit][decode]") {
  for (TransformerArch arch : {TransformerArch::encdec, TransformerArch::lm}) {
    Rng rng(42);
    TransformerConfig c = small_config(arch);
    c.tie_embeddings = transformer::TieEmbeddings::none;
    Transformer model(c, rng);
    favour_eos(model, 1.5f);
    const std::vector<int32_t> len{6, 2, 4, 1};
    const Tensor src = random_src(4, 6, len, arch == TransformerArch::encdec ? c.src_vocab : c.tgt_vocab, rng);
    const Tensor src_len = Tensor::from_ints({4}, len);
    decode::DecodeOptions o;
    o.max_len = 10;
    const decode::Decoded cached = transformer::greedy(model, src, src_len, o);
    const decode::Decoded uncached = transformer::greedy(model, src, src_len, o, /*use_cache=*/false);
    CHECK(cached.tokens == uncached.tokens);
    for (size_t n = 0; n < 4; ++n) CHECK(cached.scores[n] == Approx(uncached.scores[n]).margin(1e-4));
    if (arch == TransformerArch::encdec) {
      o.beam = 3;
      const decode::Decoded beam_uncached = transformer::beam_search(model, src, src_len, o, /*use_cache=*/false);
      const decode::Decoded beam_cached = transformer::beam_search(model, src, src_len, o);
      CHECK(beam_cached.tokens == beam_uncached.tokens);
      for (size_t n = 0; n < 4; ++n) CHECK(beam_cached.scores[n] == Approx(beam_uncached.scores[n]).margin(1e-4));
    }
  }
}

TEST_CASE("beam search with beam 1 equals greedy, a wider beam scores at least as well", "[unit][decode]") {
  Rng rng(43);
  TransformerConfig c = small_config(TransformerArch::encdec);
  c.tie_embeddings = transformer::TieEmbeddings::none;
  Transformer model(c, rng);
  favour_eos(model, 1.0f);
  const std::vector<int32_t> len{5, 3, 6};
  const Tensor src = random_src(3, 6, len, c.src_vocab, rng);
  const Tensor src_len = Tensor::from_ints({3}, len);
  decode::DecodeOptions o;
  o.max_len = 12;
  o.length_penalty = 0.0f;   // raw log-probabilities, comparable with greedy
  const decode::Decoded g = transformer::greedy(model, src, src_len, o);
  const decode::Decoded b1 = transformer::beam_search(model, src, src_len, o);
  CHECK(b1.tokens == g.tokens);
  for (size_t n = 0; n < 3; ++n) CHECK(b1.scores[n] == Approx(g.scores[n]).margin(1e-5));
  o.beam = 4;
  const decode::Decoded b4 = transformer::beam_search(model, src, src_len, o);
  for (size_t n = 0; n < 3; ++n) CHECK(b4.scores[n] >= g.scores[n] - 1e-5f);
}

TEST_CASE("greedy, beam search and sampling never emit PAD or BOS, however the model favours them",
          "[unit][decode]") {
  Rng rng(47);
  TransformerConfig c = small_config(TransformerArch::encdec);
  c.tie_embeddings = transformer::TieEmbeddings::none;
  Transformer model(c, rng);
  for (Param* p : model.params())
    if (p->name == "output/b") p->value.at(data::kPad) = p->value.at(data::kBos) = 50.0f;
  const std::vector<int32_t> len{5, 3};
  const Tensor src = random_src(2, 5, len, c.src_vocab, rng);
  const Tensor src_len = Tensor::from_ints({2}, len);
  decode::DecodeOptions o;
  o.max_len = 8;
  auto reserved_free = [](const decode::Decoded& r) {
    for (const auto& sentence : r.tokens)
      for (int32_t t : sentence)
        if (t == data::kPad || t == data::kBos) return false;
    return true;
  };
  const decode::Decoded g = transformer::greedy(model, src, src_len, o);
  CHECK(reserved_free(g));
  CHECK(!g.tokens[0].empty());   // the model still decodes: the next-best tokens
  o.beam = 3;
  CHECK(reserved_free(transformer::beam_search(model, src, src_len, o)));
  CHECK(reserved_free(transformer::sample(model, src, src_len, {.max_len = 8}, {.temperature = 1.0f}, rng)));
}

TEST_CASE("want_attention returns every layer's weights, rows summing to 1", "[unit][decode]") {
  Rng rng(44);
  TransformerConfig c = small_config(TransformerArch::encdec);
  c.tie_embeddings = transformer::TieEmbeddings::none;
  Transformer model(c, rng);
  favour_eos(model, 1.5f);
  const std::vector<int32_t> len{6, 3};
  const Tensor src = random_src(2, 6, len, c.src_vocab, rng);
  decode::DecodeOptions o;
  o.max_len = 8;
  o.want_attention = true;
  o.beam = 2;
  const decode::Decoded r = transformer::beam_search(model, src, Tensor::from_ints({2}, len), o);
  REQUIRE(r.attention.size() == 4);   // self/layer0, cross/layer0, self/layer1, cross/layer1
  CHECK(r.attention[0].first == "self/layer0");
  REQUIRE(r.attention[3].first == "cross/layer1");
  const Tensor& cross = r.attention[3].second;
  const int64_t T = cross.dim(2);
  CHECK(cross.shape() == Shape{2, 4, T, 6});
  CHECK(r.attention[0].second.shape() == Shape{2, 4, T, T});
  for (int64_t n = 0; n < 2; ++n) {
    const int64_t rows = static_cast<int64_t>(r.tokens[static_cast<size_t>(n)].size()) + 1;
    for (int64_t t = 0; t < T; ++t) {
      double sum = 0, beyond_source = 0;
      for (int64_t s = 0; s < 6; ++s) {
        sum += cross.at(((n * 4 + 1) * T + t) * 6 + s);
        if (s >= len[static_cast<size_t>(n)]) beyond_source += cross.at(((n * 4 + 1) * T + t) * 6 + s);
      }
      CHECK(beyond_source == 0.0);
      CHECK(sum == Approx(t < std::min(rows, T) ? 1.0 : 0.0).margin(1e-5));
    }
  }
}

TEST_CASE("sample: temperature 0 and top_k 1 are greedy, a seed reproduces a draw", "[unit][decode]") {
  Rng rng(45);
  TransformerConfig c = small_config(TransformerArch::lm);
  c.tie_embeddings = transformer::TieEmbeddings::none;
  Transformer model(c, rng);
  favour_eos(model, 1.0f);
  const Tensor prompt = Tensor::from_ints({2, 3}, {5, 6, 7, 8, 0, 0});
  const Tensor prompt_len = Tensor::from_ints({2}, {3, 1});
  decode::DecodeOptions go;
  go.max_len = 8;
  const decode::Decoded g = transformer::greedy(model, prompt, prompt_len, go);
  decode::Sampling so{.temperature = 0.0f};
  Rng a(7), b(7);
  CHECK(transformer::sample(model, prompt, prompt_len, go, so, a).tokens == g.tokens);
  so.temperature = 1.0f;
  so.top_k = 1;
  CHECK(transformer::sample(model, prompt, prompt_len, go, so, a).tokens == g.tokens);
  so.top_k = 0;
  so.temperature = 1.5f;
  Rng c1(9), c2(9);
  const decode::Decoded s1 = transformer::sample(model, prompt, prompt_len, go, so, c1);
  CHECK(transformer::sample(model, prompt, prompt_len, go, so, c2).tokens == s1.tokens);
  for (const auto& t : s1.tokens) CHECK(t.size() <= 8);
  REQUIRE_THROWS_WITH(transformer::beam_search(model, prompt, prompt_len, go),
                      Catch::Contains("needs an encdec model"));
  so.temperature = -1.0f;
  REQUIRE_THROWS_WITH(transformer::sample(model, prompt, prompt_len, go, so, a),
                      Catch::Contains("temperature must be >= 0"));
}

TEST_CASE("Transformer encdec learns to reverse sequences (greedy, >= 99% exact)", "[integration][decode]") {
  // Source: 8-12 tokens from 16 regular ids (vocabulary 20); target: the source reversed + EOS.
  const int64_t V = 20, B = 64, S = 12, T = 13;
  auto make = [&](Rng& r) {
    TokenBatch batch;
    batch.src = Tensor({B, S}, DType::i32);
    batch.tgt = Tensor({B, T}, DType::i32);
    std::vector<int32_t> src_len(B), tgt_len(B);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t n = 8 + r.uniform_int(5);
      for (int64_t i = 0; i < n; ++i) batch.src.idata()[b * S + i] = static_cast<int32_t>(4 + r.uniform_int(V - 4));
      for (int64_t i = 0; i < n; ++i) batch.tgt.idata()[b * T + i] = batch.src.idata()[b * S + n - 1 - i];
      batch.tgt.idata()[b * T + n] = data::kEos;
      src_len[static_cast<size_t>(b)] = static_cast<int32_t>(n);
      tgt_len[static_cast<size_t>(b)] = static_cast<int32_t>(n + 1);
    }
    batch.src_len = Tensor::from_ints({B}, src_len);
    batch.tgt_len = Tensor::from_ints({B}, tgt_len);
    return batch;
  };
  TransformerConfig c;
  c.src_vocab = V;
  c.tgt_vocab = V;
  c.tie_embeddings = transformer::TieEmbeddings::all;
  c.d_model = 64;
  c.heads = 4;
  c.d_ff = 128;
  c.enc_layers = 2;
  c.dec_layers = 2;
  c.dropout = 0.0f;
  c.max_len = 32;
  c.label_smoothing = 0.0f;
  Rng init(51), data(52), dropout_rng(53);
  Transformer model(c, init);
  ParamList params = model.params();
  optim::Adam adam({/*lr=*/1e-3f});
  const int64_t steps = 1000, warmup = 100;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 1; step <= steps; ++step) {
    const TokenBatch batch = make(data);
    zero_grads(params);
    model.train_step(batch, dropout_rng);
    // Linear warm-up to 2e-3, then linear decay to 1e-4.
    const float up = static_cast<float>(step) / warmup, down = static_cast<float>(steps - step) / (steps - warmup);
    adam.set_lr(step <= warmup ? 2e-3f * up : 1e-4f + 1.9e-3f * down);
    adam.step(params, step);
  }
  int64_t right = 0, total = 0;
  for (int round = 0; round < 4; ++round) {   // 256 fresh sequences
    const TokenBatch test = make(data);
    const decode::Decoded out = transformer::greedy(model, test.src, test.src_len, {});
    for (int64_t b = 0; b < B; ++b, ++total) {
      const int32_t* row = test.tgt.idata() + b * T;
      right += out.tokens[static_cast<size_t>(b)] == std::vector<int32_t>(row, row + test.tgt_len.idata()[b] - 1);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN("reverse: " << right << "/" << total << " exact after " << steps << " steps in " << seconds << " s");
  CHECK(right >= 0.99 * total);
}

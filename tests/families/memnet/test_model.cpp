// memnet::MemN2N: configuration and parameter names, the forward against the paper's equations
// computed naively in double (every encoding, tying, temporal encoding, linear start, the memory
// window, random noise's indices), gradient checks of whole 2-hop models, the attention's
// invariants, random noise, bad inputs, thread independence, and an integration test that the
// model learns a generated single-supporting-fact task.
#include "attn/families/memnet/model.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "attn/core/threading.hpp"
#include "attn/optim/adam.hpp"
#include "test_support.hpp"

using namespace attn;
using memnet::MemN2NEncoding;
using memnet::MemN2NTying;

namespace {

memnet::MemN2NConfig tiny_config(MemN2NEncoding encoding, MemN2NTying tying, bool temporal, int64_t hops = 2) {
  memnet::MemN2NConfig c;
  c.vocab_size = 9;
  c.embedding_size = 5;
  c.hops = hops;
  c.memory_size = 3;
  c.encoding = encoding;
  c.temporal = temporal;
  c.tying = tying;
  if (encoding == MemN2NEncoding::position_fixed) {   // the authors' code's layout
    c.sentence_length = 5;   // tiny_batch's widths are 4
    c.empty_slots = 4;       // windows of at most memory_size 3 sentences: one empty slot at least
  }
  return c;
}

std::string describe(const memnet::MemN2NConfig& c, bool linear_start = false) {
  return std::string(memnet::memn2n_encoding_name(c.encoding)) + ", " + memnet::memn2n_tying_name(c.tying) +
         (c.temporal ? ", temporal" : "") + (linear_start ? ", linear start" : "") + ", " + std::to_string(c.hops) +
         " hops";
}

// A batch from rows of word ids: story[b] lists the example's sentences (each padded with 0 to
// Ws), story_len[b] = their count unless given; the memory is padded to Ms slots.
memnet::QaBatch make_batch(const std::vector<std::vector<std::vector<int32_t>>>& stories,
                           const std::vector<std::vector<int32_t>>& questions, const std::vector<int32_t>& answers,
                           int64_t Ms, int64_t Ws, int64_t Wq) {
  const int64_t B = static_cast<int64_t>(stories.size());
  memnet::QaBatch batch;
  batch.story = Tensor({B, Ms, Ws}, DType::i32);
  batch.story_len = Tensor({B}, DType::i32);
  batch.question = Tensor({B, Wq}, DType::i32);
  batch.answer = Tensor::from_ints({B}, answers);
  for (int64_t b = 0; b < B; ++b) {
    batch.story_len.idata()[b] = static_cast<int32_t>(stories[b].size());
    for (size_t i = 0; i < stories[b].size(); ++i)
      for (size_t j = 0; j < stories[b][i].size(); ++j)
        batch.story.idata()[(b * Ms + static_cast<int64_t>(i)) * Ws + static_cast<int64_t>(j)] = stories[b][i][j];
    for (size_t j = 0; j < questions[b].size(); ++j)
      batch.question.idata()[b * Wq + static_cast<int64_t>(j)] = questions[b][j];
  }
  return batch;
}

// Three examples over V = 9: memories of 3, 1 and 4 sentences in 4 slots of 4 words (the last
// is longer than memory_size 3: the model reads its last three), sentences of 0-4 words, and
// questions of 1-3 words.
memnet::QaBatch tiny_batch() {
  return make_batch({{{4, 5, 6}, {}, {7, 8, 4, 5}}, {{8, 1}}, {{5, 5}, {6, 7, 8}, {4}, {8, 6, 4}}},
                    {{4, 6, 7}, {5}, {8, 4}}, {6, 4, 8}, /*Ms=*/4, /*Ws=*/4, /*Wq=*/3);
}

// ---- the model's equations, computed naively in double from the parameters by name ----------

using Vec = std::vector<double>;

struct Reference {
  double mean_loss = 0;
  std::vector<int32_t> predictions;
  std::vector<std::vector<Vec>> p;   // [b][hop] p over the batch's Ms slots (0 outside the window)
};

// `times[b]`, when given, are the temporal indices of example b's window (oldest first);
// otherwise n - 1 - i, as the paper's T_A(i) counting back from the most recent.
Reference reference(memnet::MemN2N& model, const memnet::QaBatch& batch, bool linear_start,
                    const std::vector<std::vector<int32_t>>* times = nullptr) {
  const memnet::MemN2NConfig& c = model.config();
  std::map<std::string, const Tensor*> param;
  for (Param* p : model.params()) param[p->name] = &p->value;
  const int64_t E = c.embedding_size, K = c.hops, V = c.vocab_size;
  const bool adjacent = c.tying == MemN2NTying::adjacent;
  // The paper's matrices of hop k (1-based) under the tying. (Appending, because
  // `"C" + std::to_string(k)` draws a false -Wrestrict from GCC 12.)
  auto numbered = [](const char* prefix, int64_t k) { return std::string(prefix).append(std::to_string(k)); };
  auto A = [&](int64_t k) { return adjacent ? (k == 1 ? "A1" : numbered("C", k - 1)) : std::string("A"); };
  auto C = [&](int64_t k) { return adjacent ? numbered("C", k) : std::string("C"); };
  auto TA = [&](int64_t k) { return adjacent ? (k == 1 ? "T_A1" : numbered("T_C", k - 1)) : std::string("T_A"); };
  auto TC = [&](int64_t k) { return adjacent ? numbered("T_C", k) : std::string("T_C"); };
  const std::string Bq = adjacent ? "A1" : "B", W = adjacent ? numbered("C", K) : "W";

  auto row = [&](const std::string& name, int64_t r) {
    const Tensor& t = *param.at(name);
    return Vec(t.data() + r * E, t.data() + (r + 1) * E);
  };
  // Σ_j l_j ∘ X x_j over the words before the first PAD.
  auto embed = [&](const std::string& table, const int32_t* words, int64_t width) {
    int64_t J = 0;
    while (J < width && words[J] != 0) ++J;
    Vec out(static_cast<size_t>(E), 0.0);
    for (int64_t j = 1; j <= J; ++j) {
      const Vec x = row(table, words[j - 1]);
      for (int64_t k = 1; k <= E; ++k) {
        const double jJ = static_cast<double>(j) / static_cast<double>(J);
        const double dk = static_cast<double>(k), dE = static_cast<double>(E), Jf = double(c.sentence_length);
        const double l = c.encoding == MemN2NEncoding::bow        ? 1.0
                         : c.encoding == MemN2NEncoding::position ? (1.0 - jJ) - dk / dE * (1.0 - 2.0 * jJ)
                                                                  : 1.0 + 4.0 * (dk - (dE + 1) / 2) *
                                                                              (double(j) - (Jf + 1) / 2) / (dE * Jf);
        out[k - 1] += l * x[k - 1];
      }
    }
    return out;
  };

  const int64_t B = batch.story.dim(0), Ms = batch.story.dim(1), Ws = batch.story.dim(2), Wq = batch.question.dim(1);
  Reference ref;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = batch.story_len.idata()[b], w0 = std::max<int64_t>(0, n - c.memory_size);
    Vec u = embed(Bq, batch.question.idata() + b * Wq, Wq);
    ref.p.emplace_back();
    for (int64_t k = 1; k <= K; ++k) {
      std::vector<Vec> m, cv;
      for (int64_t i = w0; i < n; ++i) {
        const int32_t* words = batch.story.idata() + (b * Ms + i) * Ws;
        m.push_back(embed(A(k), words, Ws));
        cv.push_back(embed(C(k), words, Ws));
        if (c.temporal) {
          const int64_t t = times ? (*times)[b][i - w0] : n - 1 - i;
          const Vec ta = row(TA(k), t), tc = row(TC(k), t);
          for (int64_t e = 0; e < E; ++e) {
            m.back()[e] += ta[e];
            cv.back()[e] += tc[e];
          }
        }
      }
      Vec p(static_cast<size_t>(Ms), 0.0);
      for (int64_t i = w0; i < n; ++i)
        for (int64_t e = 0; e < E; ++e) p[i] += u[e] * m[i - w0][e];
      if (!linear_start && n > w0) {
        const double mx = *std::max_element(p.begin() + w0, p.begin() + n);
        double sum = std::max<int64_t>(0, c.empty_slots - (n - w0)) * std::exp(-mx);   // empty slots score 0
        for (int64_t i = w0; i < n; ++i) sum += p[i] = std::exp(p[i] - mx);
        for (int64_t i = w0; i < n; ++i) p[i] /= sum;
      }
      Vec next = u;
      if (!adjacent) {
        const Tensor& H = *param.at("H");
        for (int64_t e = 0; e < E; ++e) {
          next[e] = 0;
          for (int64_t f = 0; f < E; ++f) next[e] += H.at(e * E + f) * u[f];
        }
      }
      for (int64_t i = w0; i < n; ++i)
        for (int64_t e = 0; e < E; ++e) next[e] += p[i] * cv[i - w0][e];
      u = next;
      ref.p.back().push_back(p);
    }
    Vec logits(static_cast<size_t>(V), 0.0);
    for (int64_t v = 0; v < V; ++v) {
      const Vec w = row(W, v);
      for (int64_t e = 0; e < E; ++e) logits[v] += w[e] * u[e];
    }
    const double mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (double z : logits) sum += std::exp(z - mx);
    ref.mean_loss += (mx + std::log(sum) - logits[batch.answer.idata()[b]]) / static_cast<double>(B);
    ref.predictions.push_back(static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
  }
  return ref;
}

// Moves every parameter off the paper's small initial values (N(0, 0.1²)), so that attention is
// far from uniform and every gradient is well above the finite differences' noise.
void jitter(memnet::MemN2N& model, uint64_t seed, float scale = 0.5f) {
  Rng rng(seed);
  for (Param* p : model.params())
    for (float& v : p->value.values()) v += rng.uniform(-scale, scale);
}

// The 12 model layouts: encoding x tying x temporal encoding.
std::vector<memnet::MemN2NConfig> every_layout(int64_t hops = 2) {
  std::vector<memnet::MemN2NConfig> all;
  for (MemN2NEncoding encoding : {MemN2NEncoding::bow, MemN2NEncoding::position, MemN2NEncoding::position_fixed})
    for (MemN2NTying tying : {MemN2NTying::adjacent, MemN2NTying::layerwise})
      for (bool temporal : {false, true}) all.push_back(tiny_config(encoding, tying, temporal, hops));
  return all;
}

}  // namespace

TEST_CASE("memnet config: validation and attributes", "[unit][memnet]") {
  memnet::MemN2NConfig c = tiny_config(MemN2NEncoding::bow, MemN2NTying::layerwise, false, 3);
  const auto attrs = c.to_attrs();
  CHECK(attrs.size() == 9);
  CHECK(std::get<std::string>(attrs.at("encoding")) == "bow");
  CHECK(std::get<std::string>(attrs.at("tying")) == "layerwise");
  CHECK(std::get<int64_t>(attrs.at("temporal")) == 0);
  CHECK(std::get<int64_t>(attrs.at("hops")) == 3);
  CHECK(std::get<int64_t>(attrs.at("memory_size")) == 3);
  const memnet::MemN2NConfig back = memnet::MemN2NConfig::from_attrs(attrs);
  CHECK(back.to_attrs() == attrs);
  CHECK(back.encoding == MemN2NEncoding::bow);
  CHECK(back.tying == MemN2NTying::layerwise);
  CHECK(!back.temporal);
  CHECK(back.vocab_size == 9);
  CHECK(back.embedding_size == 5);
  // The defaults: the paper's single-task model (PE, temporal encoding, adjacent, d = 20, 3 hops).
  const memnet::MemN2NConfig defaults;
  CHECK(defaults.embedding_size == 20);
  CHECK(defaults.hops == 3);
  CHECK(defaults.encoding == MemN2NEncoding::position);
  CHECK(defaults.temporal);
  CHECK(defaults.tying == MemN2NTying::adjacent);
  for (const char* name : {"bow", "position", "position-fixed"})
    CHECK(memnet::memn2n_encoding_name(memnet::parse_memn2n_encoding(name)) == std::string(name));
  for (const char* name : {"adjacent", "layerwise"})
    CHECK(memnet::memn2n_tying_name(memnet::parse_memn2n_tying(name)) == std::string(name));
  REQUIRE_THROWS_WITH(memnet::parse_memn2n_encoding("pe"),
                      Catch::Contains("unknown encoding 'pe' (expected bow, position or position-fixed)"));
  REQUIRE_THROWS_WITH(memnet::parse_memn2n_tying("rnn"),
                      Catch::Contains("unknown tying 'rnn' (expected adjacent or layerwise)"));

  auto rejects = [&](auto change, const std::string& message) {
    memnet::MemN2NConfig bad = c;
    change(bad);
    REQUIRE_THROWS_AS(bad.validate(), ConfigError);
    REQUIRE_THROWS_WITH(bad.validate(), Catch::Contains(message));
    Rng rng(1);
    REQUIRE_THROWS_AS(memnet::MemN2N(bad, rng), ConfigError);
  };
  rejects([](auto& x) { x.vocab_size = 0; }, "memnet config: vocab_size must be in [1, 2147483647], got 0");
  rejects([](auto& x) { x.embedding_size = -1; }, "embedding_size must be in [1, 65536], got -1");
  rejects([](auto& x) { x.hops = 0; }, "hops must be in [1, 1024], got 0");
  // 2^30 hops built a name per hop until the memory ran out (fuzz_semantic).
  rejects([](auto& x) { x.hops = int64_t{1} << 30; }, "hops must be in [1, 1024], got 1073741824");
  rejects([](auto& x) { x.memory_size = 0; }, "memory_size must be in [1, 1048576], got 0");
  rejects([](auto& x) { x.encoding = MemN2NEncoding::position_fixed; },
          "position-fixed encoding needs sentence_length >= 1, got 0");

  auto bad_attrs = attrs;
  bad_attrs["tying"] = std::string("rnn");
  REQUIRE_THROWS_AS(memnet::MemN2NConfig::from_attrs(bad_attrs), FormatError);
  REQUIRE_THROWS_WITH(memnet::MemN2NConfig::from_attrs(bad_attrs), Catch::Contains("unknown tying 'rnn'"));
  bad_attrs = attrs;
  bad_attrs["hops"] = 1.5;
  REQUIRE_THROWS_WITH(memnet::MemN2NConfig::from_attrs(bad_attrs, "m.h5"),
                      Catch::Contains("m.h5: /config attribute 'hops' is a number, expected an integer"));
  bad_attrs = attrs;
  bad_attrs["memory_size"] = int64_t{0};
  REQUIRE_THROWS_WITH(memnet::MemN2NConfig::from_attrs(bad_attrs),
                      Catch::Contains("memory_size must be in [1, 1048576], got 0"));
  auto partial = attrs;
  partial.erase("temporal");
  REQUIRE_THROWS_WITH(memnet::MemN2NConfig::from_attrs(partial, "m.h5"),
                      Catch::Contains("m.h5: no attribute 'temporal' in /config"));
}

TEST_CASE("memnet: parameters are named after the paper's matrices", "[unit][memnet]") {
  auto names_of = [](memnet::MemN2N& m) {
    std::vector<std::string> names;
    for (Param* p : m.params()) names.push_back(p->name);
    return names;
  };
  Rng rng(1);
  memnet::MemN2N adjacent(tiny_config(MemN2NEncoding::position, MemN2NTying::adjacent, true, 3), rng);
  CHECK(names_of(adjacent) ==
        std::vector<std::string>{"A1", "C1", "C2", "C3", "T_A1", "T_C1", "T_C2", "T_C3"});
  for (Param* p : adjacent.params())
    CHECK(p->value.shape() == (p->name[0] == 'T' ? Shape{3, 5} : Shape{9, 5}));
  memnet::MemN2N plain(tiny_config(MemN2NEncoding::bow, MemN2NTying::adjacent, false, 2), rng);
  CHECK(names_of(plain) == std::vector<std::string>{"A1", "C1", "C2"});
  memnet::MemN2N layerwise(tiny_config(MemN2NEncoding::bow, MemN2NTying::layerwise, true, 3), rng);
  CHECK(names_of(layerwise) == std::vector<std::string>{"B", "A", "C", "T_A", "T_C", "H", "W"});
  for (Param* p : layerwise.params()) {
    if (p->name == "H") CHECK(p->value.shape() == Shape{5, 5});
    if (p->name == "T_C") CHECK(p->value.shape() == Shape{3, 5});
    if (p->name == "W") CHECK(p->value.shape() == Shape{9, 5});
  }
  memnet::MemN2N layerwise_plain(tiny_config(MemN2NEncoding::bow, MemN2NTying::layerwise, false), rng);
  CHECK(names_of(layerwise_plain) == std::vector<std::string>{"B", "A", "C", "H", "W"});

  // N(0, 0.1²): the paper's initialisation.
  memnet::MemN2NConfig big;
  big.vocab_size = 200;
  big.embedding_size = 50;
  Rng init(2);
  memnet::MemN2N model(big, init);
  double sum = 0, sq = 0, count = 0;
  for (Param* p : model.params())
    for (float v : p->value.values()) {
      sum += v;
      sq += static_cast<double>(v) * v;
      ++count;
    }
  CHECK(std::abs(sum / count) < 0.005);
  CHECK(std::sqrt(sq / count) == Approx(0.1).epsilon(0.02));
}

TEST_CASE("memnet forward: the paper's equations, every layout, with and without linear start", "[unit][memnet]") {
  const memnet::QaBatch batch = tiny_batch();
  uint64_t seed = 10;
  for (int64_t hops : {1, 3})
    for (const memnet::MemN2NConfig& c : every_layout(hops))
      for (bool linear_start : {false, true}) {
        INFO(describe(c, linear_start));
        Rng init(seed);
        memnet::MemN2N model(c, init);
        jitter(model, seed++);
        model.set_linear_start(linear_start);
        const Reference ref = reference(model, batch, linear_start);
        const memnet::MemN2NResult r = model.answer(batch);
        CHECK(r.stats.questions == 3);
        CHECK(r.stats.loss_nats / 3 == Approx(ref.mean_loss).epsilon(1e-5));
        REQUIRE(r.predictions.shape() == Shape{3});
        REQUIRE(r.attention.shape() == Shape{3, hops, 4});
        int64_t correct = 0;
        for (int64_t b = 0; b < 3; ++b) {
          CHECK(r.predictions.idata()[b] == ref.predictions[b]);
          correct += ref.predictions[b] == batch.answer.idata()[b];
          for (int64_t k = 0; k < hops; ++k)
            for (int64_t i = 0; i < 4; ++i)
              CHECK(r.attention.at((b * hops + k) * 4 + i) == Approx(ref.p[b][k][i]).margin(1e-5).epsilon(1e-5));
        }
        CHECK(r.stats.correct == correct);
        const memnet::MemN2NResult e = model.evaluate(batch);
        CHECK(e.stats.loss_nats == r.stats.loss_nats);
        CHECK(!e.attention.defined());
      }
}

TEST_CASE("memnet forward: every embedding width, in registers (E < 68) or block by block", "[unit][memnet]") {
  // E = 4 NB + r: the kernels are instantiated per NB up to 16, with a tail of r < 4 columns;
  // wider embeddings take the block-by-block path.
  const memnet::QaBatch batch = tiny_batch();
  uint64_t seed = 40;
  for (int64_t E : {1, 3, 4, 8, 11, 67, 68, 70})
    for (MemN2NEncoding encoding : {MemN2NEncoding::bow, MemN2NEncoding::position})
      for (MemN2NTying tying : {MemN2NTying::adjacent, MemN2NTying::layerwise}) {
        memnet::MemN2NConfig c = tiny_config(encoding, tying, true, 2);
        c.embedding_size = E;
        INFO(describe(c) << ", E = " << E);
        Rng init(seed);
        memnet::MemN2N model(c, init);
        jitter(model, seed++, E > 8 ? 0.2f : 0.5f);
        const Reference ref = reference(model, batch, false);
        const memnet::MemN2NResult r = model.answer(batch);
        CHECK(r.stats.loss_nats / 3 == Approx(ref.mean_loss).epsilon(1e-5));
        for (int64_t b = 0; b < 3; ++b)
          for (int64_t k = 0; k < 2; ++k)
            for (int64_t i = 0; i < 4; ++i)
              CHECK(r.attention.at((b * 2 + k) * 4 + i) == Approx(ref.p[b][k][i]).margin(1e-5).epsilon(1e-5));
      }
}

TEST_CASE("memnet forward: a hand-computed one-hop model", "[unit][memnet]") {
  // V = 6, E = 2, bow, no temporal encoding, adjacent: A1 (= B) and C1 (= W). One example with
  // two sentences {4} and {5}, question {4}, answer 5.
  memnet::MemN2NConfig c = tiny_config(MemN2NEncoding::bow, MemN2NTying::adjacent, false, 1);
  c.vocab_size = 6;
  c.embedding_size = 2;
  Rng rng(1);
  memnet::MemN2N model(c, rng);
  const ParamList params = model.params();
  for (Param* p : params) p->value.zero();
  Tensor& A = params[0]->value;
  Tensor& C = params[1]->value;
  A.at(4 * 2 + 0) = 1.0f;              // A x_4 = (1, 0)
  A.at(5 * 2 + 1) = 1.0f;              // A x_5 = (0, 1)
  C.at(4 * 2 + 0) = 2.0f;              // C x_4 = (2, 0)
  C.at(5 * 2 + 1) = 3.0f;              // C x_5 = (0, 3)
  // u = A x_4 = (1, 0); scores (1, 0); p = (e/(e+1), 1/(e+1)); o = (2 p_0, 3 p_1);
  // u' = (1 + 2 p_0, 3 p_1); logits a_v = C x_v · u': a_4 = 2 (1 + 2 p_0), a_5 = 9 p_1, others 0.
  const memnet::QaBatch batch = make_batch({{{4}, {5}}}, {{4}}, {5}, 2, 1, 1);
  const double e = std::exp(1.0), p0 = e / (e + 1), p1 = 1 / (e + 1);
  const double a4 = 2 * (1 + 2 * p0), a5 = 9 * p1;
  const double loss = std::log(4 + std::exp(a4) + std::exp(a5)) - a5;
  const memnet::MemN2NResult r = model.answer(batch);
  CHECK(r.attention.at(0) == Approx(p0));
  CHECK(r.attention.at(1) == Approx(p1));
  CHECK(r.stats.loss_nats == Approx(loss));
  CHECK(r.predictions.idata()[0] == 4);
  CHECK(r.stats.correct == 0);
  // Position encoding of a one-word sentence (J = 1): l_k1 = (1 - 1) - (k/2)(1 - 2) = k/2, so
  // l = (1/2, 1): m = ((1/2, 0), (0, 1)), c = ((1, 0), (0, 3)), u = (1/2, 0), scores (1/4, 0).
  memnet::MemN2NConfig pe = c;
  pe.encoding = MemN2NEncoding::position;
  memnet::MemN2N pe_model(pe, rng);
  const ParamList pe_params = pe_model.params();
  for (size_t i = 0; i < params.size(); ++i) pe_params[i]->value.copy_from(params[i]->value);
  const double q0 = std::exp(0.25) / (std::exp(0.25) + 1), q1 = 1 - q0;
  // u' = (1/2 + q0, 3 q1); the answer uses W = C1 itself: a_4 = 2 (1/2 + q0), a_5 = 9 q1.
  const double b4 = 2 * (0.5 + q0), b5 = 9 * q1;
  const memnet::MemN2NResult s = pe_model.answer(batch);
  CHECK(s.attention.at(0) == Approx(q0));
  CHECK(s.stats.loss_nats == Approx(std::log(4 + std::exp(b4) + std::exp(b5)) - b5));
}

namespace {

// Every entry of every parameter: central differences of the mean loss against train_step's
// gradient. `loss` gives the mean loss of the model as it is (the parameters are perturbed in
// place); train_step is run first with `noise_seed` (0: no random noise).
void check_gradients(memnet::MemN2N& model, const memnet::QaBatch& batch, uint64_t noise_seed) {
  const ParamList params = model.params();
  zero_grads(params);
  const double B = static_cast<double>(batch.story.dim(0));
  Rng noise(noise_seed);
  const memnet::MemN2NStats stats = model.train_step(batch, noise_seed ? &noise : nullptr);
  std::vector<Tensor> grads;
  for (Param* p : params) grads.push_back(p->grad.clone());
  auto loss = [&] {
    if (noise_seed == 0) return model.evaluate(batch).stats.loss_nats / B;
    Rng same(noise_seed);   // train_step is the only pass with random noise; its grads are not read
    return model.train_step(batch, &same).loss_nats / B;
  };
  CHECK(std::abs(loss() - stats.loss_nats / B) < 1e-6);
  double largest = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    INFO("param " << params[i]->name);
    CHECK_THAT(grads[i], test::close_to(test::numeric_grad(loss, params[i]->value), 5e-4));
    for (float g : grads[i].values()) largest = std::max(largest, std::abs(static_cast<double>(g)));
  }
  CHECK(largest > 0.05);   // the check compared gradients of a useful size
}

}  // namespace

TEST_CASE("memnet gradients: 2 hops, every encoding, tying and temporal encoding", "[gradcheck][memnet]") {
  uint64_t seed = 100;
  for (const memnet::MemN2NConfig& c : every_layout())
    for (bool linear_start : {false, true}) {
      INFO(describe(c, linear_start));
      Rng init(seed);
      memnet::MemN2N model(c, init);
      jitter(model, seed++);
      model.set_linear_start(linear_start);
      check_gradients(model, tiny_batch(), 0);
    }
}

TEST_CASE("memnet gradients: widths with a tail and beyond the register kernels", "[gradcheck][memnet]") {
  uint64_t seed = 150;
  for (int64_t E : {3, 70})
    for (MemN2NTying tying : {MemN2NTying::adjacent, MemN2NTying::layerwise}) {
      memnet::MemN2NConfig c = tiny_config(MemN2NEncoding::position, tying, true);
      c.embedding_size = E;
      INFO(describe(c) << ", E = " << E);
      Rng init(seed);
      memnet::MemN2N model(c, init);
      jitter(model, seed++, E > 8 ? 0.2f : 0.5f);
      check_gradients(model, tiny_batch(), 0);
    }
}

TEST_CASE("memnet gradients: random noise's temporal indices", "[gradcheck][memnet]") {
  // Longer memories, so that the noise inserts empty memories (and shifts the indices).
  memnet::QaBatch batch = make_batch({{{4, 5}, {6}, {7, 8}, {5, 4}, {6, 6}, {8}}, {{8, 1}, {4, 4}, {5}, {6, 7}}},
                                     {{4, 6}, {5}}, {6, 4}, /*Ms=*/6, /*Ws=*/2, /*Wq=*/2);
  uint64_t seed = 200;
  for (MemN2NTying tying : {MemN2NTying::adjacent, MemN2NTying::layerwise}) {
    memnet::MemN2NConfig c = tiny_config(MemN2NEncoding::position, tying, true);
    c.memory_size = 8;
    INFO(describe(c));
    Rng init(seed);
    memnet::MemN2N model(c, init);
    jitter(model, seed++);
    check_gradients(model, batch, /*noise_seed=*/7);
  }
}

TEST_CASE("memnet: attention sums to 1 over the window (with the empty slots) and is 0 elsewhere", "[unit][memnet]") {
  const memnet::QaBatch batch = tiny_batch();   // windows: slots 0-2, 0, and 1-3 (memory_size 3)
  const std::vector<std::pair<int64_t, int64_t>> window{{0, 3}, {0, 1}, {1, 4}};
  for (const memnet::MemN2NConfig& c : every_layout(3)) {
    INFO(describe(c));
    Rng init(5);
    memnet::MemN2N model(c, init);
    jitter(model, 6, 1.0f);
    const memnet::MemN2NResult r = model.answer(batch);
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t k = 0; k < 3; ++k) {
        double sum = 0;
        for (int64_t i = 0; i < 4; ++i) {
          const float p = r.attention.at((b * 3 + k) * 4 + i);
          if (i >= window[b].first && i < window[b].second) {
            CHECK(p >= 0.0f);
            sum += p;
          } else {
            CHECK(p == 0.0f);
          }
        }
        if (c.empty_slots == 0) {
          CHECK(sum == Approx(1.0).margin(1e-6));
        } else {   // the rest is on the empty slots: below 1, by at least one empty slot's share
          CHECK(sum < 1.0);
          CHECK(sum > 0.0);
        }
      }
    // Linear start: the raw scores, still 0 outside the window; the mode switches back.
    model.set_linear_start(true);
    const memnet::MemN2NResult ls = model.answer(batch);
    CHECK(ls.stats.loss_nats != r.stats.loss_nats);
    int64_t raw = 0;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t k = 0; k < 3; ++k)
        for (int64_t i = 0; i < 4; ++i) {
          const float p = ls.attention.at((b * 3 + k) * 4 + i);
          if (i < window[b].first || i >= window[b].second) CHECK(p == 0.0f);
          else raw += p < 0.0f || p > 1.0f;
        }
    CHECK(raw > 0);   // scores, not probabilities
    model.set_linear_start(false);
    CHECK(model.answer(batch).stats.loss_nats == r.stats.loss_nats);
  }
  // An example without memory (story_len 0): o = 0, no attention, the answer from u alone.
  memnet::MemN2NConfig c = tiny_config(MemN2NEncoding::position, MemN2NTying::adjacent, true);
  Rng init(7);
  memnet::MemN2N model(c, init);
  const memnet::QaBatch empty = make_batch({{}}, {{4, 5}}, {6}, 2, 2, 2);
  const memnet::MemN2NResult r = model.answer(empty);
  for (float p : r.attention.values()) CHECK(p == 0.0f);
  CHECK(r.stats.loss_nats / 1 == Approx(reference(model, empty, false).mean_loss).epsilon(1e-5));
}

TEST_CASE("memnet: random noise's temporal indices", "[unit][memnet]") {
  // One call per batch: window after window.
  std::vector<int32_t> counts{5, 0, 2};
  std::vector<int32_t> t(7);
  memnet::memn2n_temporal_indices(counts, 50, nullptr, t);
  CHECK(t == std::vector<int32_t>{4, 3, 2, 1, 0, 1, 0});
  // 20 sentences: 0-2 empty memories among 20-22 places in time, a uniform choice of 20 of them.
  Rng rng(3);
  counts = {20};
  t.resize(20);
  std::vector<int64_t> oldest(3, 0), newest(3, 0);
  for (int rep = 0; rep < 3000; ++rep) {
    memnet::memn2n_temporal_indices(counts, 50, &rng, t);
    for (int i = 1; i < 20; ++i) REQUIRE(t[i] < t[i - 1]);
    REQUIRE(t[19] >= 0);
    REQUIRE(t[0] >= 19);
    REQUIRE(t[0] <= 21);
    ++oldest[t[0] - 19];
    ++newest[t[19]];
  }
  // nblank = 0, 1, 2 each with probability 1/3. The oldest index is 19 + nblank unless a blank
  // took the top place: P(t_0 = 19) = 1/3 + 1/3 * 1/21 + 1/3 * (2/22)(1/21) = 0.350, P(20) =
  // 1/3 * 20/21 + 1/3 * (2 * 20/(22 * 21)) = 0.346, P(21) = 1/3 * 20/22 = 0.303. The newest is 0
  // unless a blank took place 0: P(t_19 = 0) = 1/3 (1 + 20/21 + 20/22) = 0.954.
  CHECK(oldest[0] == Approx(0.350 * 3000).margin(90));
  CHECK(oldest[1] == Approx(0.346 * 3000).margin(90));
  CHECK(oldest[2] == Approx(0.303 * 3000).margin(90));
  CHECK(newest[0] == Approx(0.954 * 3000).margin(40));
  // Places beyond memory_size - 1 are clamped to it (the authors' code): 10 sentences in 10 slots.
  bool clamped = false;
  counts = {10};
  t.resize(10);
  for (int rep = 0; rep < 200; ++rep) {
    memnet::memn2n_temporal_indices(counts, 10, &rng, t);
    for (int i = 0; i < 10; ++i) REQUIRE(t[i] <= 9);
    for (int i = 1; i < 10; ++i) REQUIRE(t[i] <= t[i - 1]);
    clamped = clamped || t[0] == t[1];
  }
  CHECK(clamped);
  // The same stream gives the same indices.
  Rng a(9), b(9);
  counts = {20, 7, 13};
  std::vector<int32_t> ta(40), tb(40);
  memnet::memn2n_temporal_indices(counts, 50, &a, ta);
  memnet::memn2n_temporal_indices(counts, 50, &b, tb);
  CHECK(ta == tb);
  CHECK(a.state().counter == b.state().counter);
  REQUIRE_THROWS_AS(memnet::memn2n_temporal_indices(counts, 50, nullptr, std::span<int32_t>(ta).first(39)), ShapeError);
  REQUIRE_THROWS_WITH(memnet::memn2n_temporal_indices(counts, 50, &a, std::span<int32_t>(ta).first(39)),
                      Catch::Contains("out has 39 entries, expected 40"));
}

TEST_CASE("memnet: random noise is drawn from the caller's stream, and only in training", "[unit][memnet]") {
  // Example 0 has 6 sentences (up to 1 blank), example 1 four: the model draws each example's
  // indices in one call, which memn2n_temporal_indices replays.
  const memnet::QaBatch batch = make_batch({{{4, 5}, {6}, {7, 8}, {5, 4}, {6, 6}, {8}}, {{8, 1}, {4, 4}, {5}, {6, 7}}},
                                           {{4, 6}, {5}}, {6, 4}, 6, 2, 2);
  memnet::MemN2NConfig c = tiny_config(MemN2NEncoding::position, MemN2NTying::adjacent, true);
  c.memory_size = 8;
  Rng init(11);
  memnet::MemN2N model(c, init);
  jitter(model, 12, 1.0f);
  const double plain = model.evaluate(batch).stats.loss_nats;
  zero_grads(model.params());
  CHECK(model.train_step(batch, nullptr).loss_nats == plain);
  int64_t differ = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Rng a(seed), b(seed), replay(seed);
    const double la = model.train_step(batch, &a).loss_nats;
    CHECK(model.train_step(batch, &b).loss_nats == la);   // reproducible from the stream
    CHECK(a.state().counter == b.state().counter);
    CHECK(a.state().counter > 0);
    std::vector<int32_t> drawn(10);
    memnet::memn2n_temporal_indices(std::vector<int32_t>{6, 4}, 8, &replay, drawn);
    const std::vector<std::vector<int32_t>> times{{drawn.begin(), drawn.begin() + 6}, {drawn.begin() + 6, drawn.end()}};
    CHECK(replay.state().counter == a.state().counter);
    CHECK(la / 2 == Approx(reference(model, batch, false, &times).mean_loss).epsilon(1e-5));
    differ += la != plain;
    CHECK(model.evaluate(batch).stats.loss_nats == plain);   // evaluation has no noise
  }
  CHECK(differ > 5);
  // Without temporal encoding there are no indices to move: nothing is drawn.
  c.temporal = false;
  Rng init2(13);
  memnet::MemN2N untimed(c, init2);
  Rng unused(1);
  CHECK(untimed.train_step(batch, &unused).loss_nats == untimed.evaluate(batch).stats.loss_nats);
  CHECK(unused.state().counter == 0);
}

TEST_CASE("memnet: bad inputs are rejected with the tensor, expected and found", "[unit][memnet]") {
  const memnet::MemN2NConfig c = tiny_config(MemN2NEncoding::position, MemN2NTying::adjacent, true);
  Rng rng(21);
  memnet::MemN2N model(c, rng);
  const memnet::QaBatch good = tiny_batch();
  auto fails = [&](const memnet::QaBatch& b, const std::string& message) {
    REQUIRE_THROWS_WITH(model.evaluate(b), Catch::Contains(message));
    REQUIRE_THROWS_WITH(model.answer(b), Catch::Contains(message));
    REQUIRE_THROWS_WITH(model.train_step(b), Catch::Contains(message));
  };
  memnet::QaBatch b = good;
  b.story = Tensor({3, 4, 4});   // float32 ids
  REQUIRE_THROWS_AS(model.evaluate(b), ShapeError);
  fails(b, "memnet: story [B, Ms, Ws]");
  b.story = Tensor({3, 16}, DType::i32);
  fails(b, "memnet: story [B, Ms, Ws] has shape [3, 16], expected [*, *, *]");
  b = good;
  b.story_len = Tensor::from_ints({2}, {1, 1});
  fails(b, "memnet: story_len [B] has shape [2], expected [3]");
  b = good;
  b.question = Tensor({3}, DType::i32);
  fails(b, "memnet: question [B, Wq] has shape [3], expected [3, *]");
  b = good;
  b.answer = Tensor::from_ints({4}, {4, 4, 4, 4});
  fails(b, "memnet: answer [B] has shape [4], expected [3]");
  b = good;
  b.story_len = Tensor::from_ints({3}, {3, 5, 4});
  REQUIRE_THROWS_AS(model.evaluate(b), DataError);
  fails(b, "memnet: story_len[1] = 5 is outside [0, Ms = 4]");
  b = good;
  b.story_len = Tensor::from_ints({3}, {-1, 1, 4});
  fails(b, "memnet: story_len[0] = -1 is outside [0, Ms = 4]");
  b = good;
  b.story = good.story.clone();
  b.story.idata()[(2 * 4 + 1) * 4 + 3] = 9;
  REQUIRE_THROWS_AS(model.evaluate(b), DataError);
  fails(b, "memnet: story[2, 1, 3] = 9 is outside [0, V = 9)");
  b = good;
  b.question = good.question.clone();
  b.question.idata()[1 * 3 + 2] = -3;
  fails(b, "memnet: question[1, 2] = -3 is outside [0, V = 9)");
  b = good;
  b.answer = Tensor::from_ints({3}, {4, 12, 4});
  fails(b, "memnet: answer[1] = 12 is outside [0, V = 9)");
  b = good;
  b.story = Tensor({0, 4, 4}, DType::i32);
  b.story_len = Tensor({0}, DType::i32);
  b.question = Tensor({0, 3}, DType::i32);
  b.answer = Tensor({0}, DType::i32);
  fails(b, "memnet: story [B, Ms, Ws] has B = 0 (an empty batch)");
}

namespace {

// A batch of B questions over a 1k-bAbI-sized memory: Ms = 50 slots of Ws = 7 words, V = 40,
// stories of 1-50 sentences of 1-7 words (deterministic pseudo-random ids in [4, V)).
memnet::QaBatch large_batch(int64_t B, uint64_t seed) {
  const int64_t Ms = 50, Ws = 7, Wq = 4, V = 40;
  Rng rng(seed);
  memnet::QaBatch batch;
  batch.story = Tensor({B, Ms, Ws}, DType::i32);
  batch.story_len = Tensor({B}, DType::i32);
  batch.question = Tensor({B, Wq}, DType::i32);
  batch.answer = Tensor({B}, DType::i32);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = 1 + rng.uniform_int(Ms);
    batch.story_len.idata()[b] = static_cast<int32_t>(n);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t J = 1 + rng.uniform_int(Ws);
      for (int64_t j = 0; j < J; ++j)
        batch.story.idata()[(b * Ms + i) * Ws + j] = static_cast<int32_t>(4 + rng.uniform_int(V - 4));
    }
    for (int64_t j = 0; j < 3; ++j)
      batch.question.idata()[b * Wq + j] = static_cast<int32_t>(4 + rng.uniform_int(V - 4));
    batch.answer.idata()[b] = static_cast<int32_t>(4 + rng.uniform_int(V - 4));
  }
  return batch;
}

}  // namespace

TEST_CASE("memnet: results do not depend on the thread count", "[unit][memnet]") {
  // 512 examples of 1-50 sentences at E = 16 (about 5.4 million multiply-adds per region, above
  // the model's parallel threshold of 2^22, so two threads do split them): the forward and the hops'
  // backward run on blocks of examples, the embedding gradients on whole tables per thread, each
  // value by the same operations in the same order: one and two threads give the same bits (the
  // batch's products stay below the BLAS seam's split).
  const memnet::QaBatch batch = large_batch(512, 31);
  for (MemN2NTying tying : {MemN2NTying::adjacent, MemN2NTying::layerwise})
    for (bool noise : {false, true}) {
      memnet::MemN2NConfig c;
      c.vocab_size = 40;
      c.embedding_size = 16;   // H's gradient, E² Nhop B = 393,216, stays below the BLAS seam's split
      c.tying = tying;
      INFO(describe(c) << (noise ? ", random noise" : ""));
      auto step = [&](int threads) {
        set_num_threads(threads);
        Rng init(32), rng(33);
        memnet::MemN2N model(c, init);
        zero_grads(model.params());
        const memnet::MemN2NStats s = model.train_step(batch, noise ? &rng : nullptr);
        std::vector<Tensor> grads;
        for (Param* p : model.params()) grads.push_back(p->grad.clone());
        const memnet::MemN2NResult r = model.answer(batch);
        set_num_threads(1);
        return std::make_tuple(s, grads, r);
      };
      const auto [s1, g1, r1] = step(1);
      const auto [s2, g2, r2] = step(2);
      CHECK(s1.loss_nats == s2.loss_nats);
      REQUIRE(g1.size() == g2.size());
      for (size_t i = 0; i < g1.size(); ++i) CHECK_THAT(g2[i], test::close_to(g1[i], 0.0));
      CHECK_THAT(r2.attention, test::close_to(r1.attention, 0.0));
      CHECK(r1.stats.loss_nats == r2.stats.loss_nats);
    }
}

namespace {

// A generated single-supporting-fact task (bAbI task 1's shape): stories of 2-10 sentences
// "<person> <went|moved|journeyed> to the <place>", the question "where is <person>" about a
// person of the story, the answer the place of that person's last sentence.
// Ids: 0-3 reserved, persons 4-7, verbs 8-10, "to" 11, "the" 12, places 13-18, "where" 19, "is" 20.
constexpr int64_t kTaskVocab = 21;

memnet::QaBatch single_fact_task(int64_t N, Rng& rng) {
  const int64_t Ms = 10, Ws = 5, Wq = 3;
  memnet::QaBatch batch;
  batch.story = Tensor({N, Ms, Ws}, DType::i32);
  batch.story_len = Tensor({N}, DType::i32);
  batch.question = Tensor({N, Wq}, DType::i32);
  batch.answer = Tensor({N}, DType::i32);
  for (int64_t b = 0; b < N; ++b) {
    const int64_t n = 2 + rng.uniform_int(Ms - 1);
    std::vector<int32_t> where(4, -1);
    int32_t* story = batch.story.idata() + b * Ms * Ws;
    for (int64_t i = 0; i < n; ++i) {
      const auto person = static_cast<int32_t>(rng.uniform_int(4));
      const auto place = static_cast<int32_t>(13 + rng.uniform_int(6));
      const int32_t sentence[5] = {4 + person, static_cast<int32_t>(8 + rng.uniform_int(3)), 11, 12, place};
      std::copy(sentence, sentence + 5, story + i * Ws);
      where[person] = place;
    }
    int32_t person = 0;
    do person = static_cast<int32_t>(rng.uniform_int(4));
    while (where[person] < 0);
    batch.story_len.idata()[b] = static_cast<int32_t>(n);
    const int32_t question[3] = {19, 20, 4 + person};
    std::copy(question, question + 3, batch.question.idata() + b * Wq);
    batch.answer.idata()[b] = where[person];
  }
  return batch;
}

}  // namespace

TEST_CASE("memnet: learns a generated single-supporting-fact task to >= 99% on held-out questions",
          "[integration][memnet]") {
  // The paper's single-task model (PE, temporal encoding, adjacent tying, d = 20, 3 hops, memory
  // of 10) trained with random noise and Adam (lr 0.01, x0.3 after 60% of the steps and x0.1
  // after 85%, batch 32) on fresh generated questions every step, 3000 steps (about 0.6 s on one
  // core). Measured over initialisation / data seeds 1-8: 1000 of 1000 held-out questions right
  // in all eight (1500 steps at a constant lr 0.01 gave 985-1000).
  const int64_t steps = 3000, B = 32;
  memnet::MemN2NConfig c;
  c.vocab_size = kTaskVocab;
  c.memory_size = 10;
  Rng init(1), data(2), noise(3), held_out_data(4);
  memnet::MemN2N model(c, init);
  const ParamList params = model.params();
  const float lr = 0.01f;
  optim::Adam adam({lr});
  const auto start = std::chrono::steady_clock::now();
  for (int64_t t = 1; t <= steps; ++t) {
    zero_grads(params);
    model.train_step(single_fact_task(B, data), &noise);
    adam.set_lr(t > steps * 85 / 100 ? 0.1f * lr : t > steps * 60 / 100 ? 0.3f * lr : lr);
    adam.step(params, t);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const memnet::QaBatch test_set = single_fact_task(1000, held_out_data);
  const memnet::MemN2NResult r = model.evaluate(test_set);
  WARN("single supporting fact, " << steps << " steps of " << B << " in " << seconds << " s: held-out accuracy "
                                  << r.stats.correct << " / " << r.stats.questions << ", loss "
                                  << r.stats.loss_nats / r.stats.questions);
  CHECK(r.stats.questions == 1000);
  CHECK(r.stats.correct >= 990);
  int64_t agree = 0;
  for (int64_t b = 0; b < 1000; ++b) agree += r.predictions.idata()[b] == test_set.answer.idata()[b];
  CHECK(agree == r.stats.correct);
}

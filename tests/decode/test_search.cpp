// Tests of the shared searches (decode/search.hpp) with a model whose next-token probabilities
// are a fixed table, so that every expected result is worked out by hand in the comments:
// beam 1 against greedy, EOS, a sentence ending once BW hypotheses ended, max_len and capacity
// cuts, both length penalties, PAD/BOS never emitted, repeated parents, attention behind tokens.
#include "attn/decode/search.hpp"

#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "attn/data/vocab.hpp"
#include "test_support.hpp"

using namespace attn;
using decode::LengthPenalty;
using decode::PenaltyKind;
using decode::SearchOptions;
using decode::SearchResult;

namespace {

// Vocabulary: PAD, BOS, EOS and three words a, b, c (the comments write sequences of them).
constexpr int32_t kPad = data::kPad, kBos = data::kBos, kEos = data::kEos, kA = 3, kB = 4, kC = 5;
constexpr int64_t kV = 6;
using Dist = std::map<int32_t, double>;   // token -> probability; tokens not listed: 0
using Prefix = std::vector<int32_t>;

// Next-token probabilities by (sentence, tokens so far); a prefix not in the table gets
// `fallback`. Each row remembers its own prefix, so a wrong keep() shows up as wrong results.
// The attention of a row is [S] with S = 2: its prefix length and last token (0 when empty).
class TableModel final : public decode::Stepper {
 public:
  std::map<std::pair<int64_t, Prefix>, Dist> table;
  Dist fallback{{kEos, 1.0}};
  int64_t cap = kUnlimited;
  decode::LogSoftmax kind = decode::LogSoftmax::vectorised;
  std::vector<std::vector<int64_t>> keeps;   // every keep() call
  std::vector<int64_t> rows_per_step;

  explicit TableModel(int64_t N) {
    for (int64_t n = 0; n < N; ++n) rows_.push_back({n, {}, true});
  }

  int64_t vocab() const override { return kV; }
  int64_t capacity() const override { return cap; }
  decode::LogSoftmax log_softmax() const override { return kind; }

  Tensor step(const std::vector<int32_t>& fed) override {
    const int64_t R = static_cast<int64_t>(rows_.size());
    REQUIRE(static_cast<int64_t>(fed.size()) == R);
    Tensor logits({R, kV});
    attention_ = Tensor({R, 2});
    for (int64_t r = 0; r < R; ++r) {
      Row& row = rows_[static_cast<size_t>(r)];
      if (row.fresh) REQUIRE(fed[static_cast<size_t>(r)] == kBos);
      else row.prefix.push_back(fed[static_cast<size_t>(r)]);
      row.fresh = false;
      const auto it = table.find({row.sentence, row.prefix});
      const Dist& d = it == table.end() ? fallback : it->second;
      for (int32_t v = 0; v < kV; ++v) {
        const auto p = d.find(v);
        logits.at(r * kV + v) = p == d.end() ? -INFINITY : static_cast<float>(std::log(p->second));
      }
      attention_.at(r * 2) = static_cast<float>(row.prefix.size());
      attention_.at(r * 2 + 1) = row.prefix.empty() ? 0.0f : static_cast<float>(row.prefix.back());
    }
    rows_per_step.push_back(R);
    return logits;
  }

  void keep(const std::vector<int64_t>& rows) override {
    keeps.push_back(rows);
    std::vector<Row> kept;
    for (int64_t r : rows) kept.push_back(rows_.at(static_cast<size_t>(r)));
    rows_ = std::move(kept);
  }

  Tensor attention() const override { return attention_; }

 private:
  struct Row {
    int64_t sentence;
    Prefix prefix;
    bool fresh;   // not fed yet
  };
  std::vector<Row> rows_;
  Tensor attention_;
};

SearchOptions beam_options(int64_t K, PenaltyKind kind, float alpha, int64_t max_len = 10) {
  return {.max_len = max_len, .beam = K, .length_penalty = {.kind = kind, .alpha = alpha}, .want_attention = true};
}

// Scenario A: greedy takes a (0.5) then EOS (0.4): P = 0.2; `b EOS` is 0.4 * 0.9 = 0.36.
void scenario_a(TableModel& m, int64_t sentence = 0) {
  m.table[{sentence, {}}] = {{kEos, 0.1}, {kA, 0.5}, {kB, 0.4}};
  m.table[{sentence, {kA}}] = {{kEos, 0.4}, {kA, 0.3}, {kB, 0.3}};
  m.table[{sentence, {kB}}] = {{kEos, 0.9}, {kA, 0.05}, {kB, 0.05}};
}

// Scenario C: every prefix gives EOS 0.1, a 0.6, b 0.3: nothing ends before max_len.
void scenario_c(TableModel& m) { m.fallback = {{kEos, 0.1}, {kA, 0.6}, {kB, 0.3}}; }

// The attention behind token t is that of the prefix tokens[0, t): [t, tokens[t - 1] or 0].
void check_attention(const SearchResult& r) {
  REQUIRE(r.attention.defined());
  const int64_t N = r.attention.dim(0), T = r.attention.dim(1);
  REQUIRE(r.attention.dim(2) == 2);
  for (int64_t n = 0; n < N; ++n) {
    const std::vector<int32_t>& tok = r.tokens[static_cast<size_t>(n)];
    for (int64_t t = 0; t < T; ++t) {
      const bool real = t < static_cast<int64_t>(tok.size());
      CHECK(r.attention.at((n * T + t) * 2) == (real ? static_cast<float>(t) : 0.0f));
      CHECK(r.attention.at((n * T + t) * 2 + 1) ==
            (real && t > 0 ? static_cast<float>(tok[static_cast<size_t>(t - 1)]) : 0.0f));
    }
  }
}

}  // namespace

TEST_CASE("search: the length penalties follow their formulas", "[unit][search]") {
  const LengthPenalty gnmt{.kind = PenaltyKind::gnmt, .alpha = 0.6f}, power{.kind = PenaltyKind::power, .alpha = 1.0f};
  CHECK(gnmt(3) == Approx(std::pow(8.0 / 6.0, 0.6)));
  CHECK(gnmt(1) == Approx(1.0));
  CHECK(power(3) == Approx(3.0));
  CHECK(LengthPenalty{.kind = PenaltyKind::power, .alpha = 0.5f}(4) == Approx(2.0));
  CHECK(LengthPenalty{.kind = PenaltyKind::gnmt, .alpha = 0.0f}(7) == 1.0);
}

TEST_CASE("search: greedy takes the first most likely token, beam 1 is greedy, a wider beam finds better",
          "[unit][search]") {
  for (auto kind : {decode::LogSoftmax::vectorised, decode::LogSoftmax::double_sum}) {
    TableModel g(1), b1(1), b2(1);
    for (TableModel* m : {&g, &b1, &b2}) {
      scenario_a(*m);
      m->kind = kind;
    }
    const SearchResult greedy = decode::greedy_search(g, 1, beam_options(1, PenaltyKind::gnmt, 0.0f));
    CHECK(greedy.tokens[0] == std::vector<int32_t>{kA});
    CHECK(greedy.ended[0] == 1);
    CHECK(greedy.scores[0] == Approx(std::log(0.5 * 0.4)).margin(1e-6));   // EOS's log p included
    check_attention(greedy);

    const SearchResult one = decode::beam_search(b1, 1, beam_options(1, PenaltyKind::gnmt, 0.0f));
    CHECK(one.tokens == greedy.tokens);
    CHECK(one.ended == greedy.ended);
    CHECK(one.scores[0] == Approx(greedy.scores[0]).margin(1e-6));
    CHECK_THAT(one.attention, test::close_to(greedy.attention, 0.0));

    // BW = 2: step 0 keeps a and b (EOS ranks third, outside the beam); step 1's best are
    // `b EOS` 0.36 and `a EOS` 0.2: two finished, the sentence is done after two steps.
    const SearchResult two = decode::beam_search(b2, 1, beam_options(2, PenaltyKind::gnmt, 0.0f));
    CHECK(two.tokens[0] == std::vector<int32_t>{kB});
    CHECK(two.scores[0] == Approx(std::log(0.4 * 0.9)).margin(1e-6));
    CHECK(b2.rows_per_step == std::vector<int64_t>{1, 2});
    check_attention(two);
  }
}

TEST_CASE("search: equal probabilities go to the lower token id in greedy and beam search", "[unit][search]") {
  for (int64_t K : {1, 2}) {
    TableModel m(1), g(1);
    for (TableModel* t : {&m, &g}) {
      t->table[{0, {}}] = {{kEos, 0.2}, {kA, 0.4}, {kB, 0.4}};
      t->table[{0, {kA}}] = {{kEos, 0.5}, {kB, 0.25}, {kC, 0.25}};
      t->table[{0, {kB}}] = {{kEos, 0.5}, {kB, 0.25}, {kC, 0.25}};
    }
    // Beam 2: `a EOS` and `b EOS` tie at 0.2 and both finish; the first (row a) wins.
    CHECK(decode::beam_search(m, 1, beam_options(K, PenaltyKind::power, 1.0f)).tokens[0] == std::vector<int32_t>{kA});
    CHECK(decode::greedy_search(g, 1, {}).tokens[0] == std::vector<int32_t>{kA});
  }
}

TEST_CASE("search: max_len and the model's capacity cut a hypothesis without EOS", "[unit][search]") {
  SECTION("max_len") {
    TableModel g(1), b(1);
    scenario_c(g);
    scenario_c(b);
    const SearchResult greedy = decode::greedy_search(g, 1, beam_options(1, PenaltyKind::gnmt, 0.0f, 3));
    CHECK(greedy.tokens[0] == std::vector<int32_t>{kA, kA, kA});
    CHECK(greedy.ended[0] == 0);
    CHECK(greedy.scores[0] == Approx(3 * std::log(0.6)).margin(1e-5));
    // BW = 2, power alpha 1: step 1 keeps aa and ab (ab and ba tie at 0.18: row a first); step 2
    // can only cut: aaa and aab rank in the best 2 and finish; aaa wins, |Y| = 3.
    const SearchResult beam = decode::beam_search(b, 1, beam_options(2, PenaltyKind::power, 1.0f, 3));
    CHECK(beam.tokens[0] == std::vector<int32_t>{kA, kA, kA});
    CHECK(beam.ended[0] == 0);
    CHECK(beam.scores[0] == Approx(3 * std::log(0.6) / 3.0).margin(1e-5));
    CHECK(b.rows_per_step == std::vector<int64_t>{1, 2, 2});
    CHECK(b.keeps == std::vector<std::vector<int64_t>>{{0, 0}, {0, 0}});
    check_attention(beam);
  }
  SECTION("capacity: BOS and one token fed at most, so two tokens") {
    TableModel g(1), b(1);
    for (TableModel* m : {&g, &b}) {
      scenario_c(*m);
      m->cap = 2;
    }
    const SearchResult greedy = decode::greedy_search(g, 1, beam_options(1, PenaltyKind::gnmt, 0.0f, 10));
    CHECK(greedy.tokens[0] == std::vector<int32_t>{kA, kA});
    CHECK(greedy.ended[0] == 0);
    const SearchResult beam = decode::beam_search(b, 1, beam_options(3, PenaltyKind::gnmt, 1.0f, 10));
    CHECK(beam.tokens[0] == std::vector<int32_t>{kA, kA});
    CHECK(beam.ended[0] == 0);
    CHECK(beam.scores[0] == Approx(2 * std::log(0.6) / (7.0 / 6.0)).margin(1e-5));
  }
}

TEST_CASE("search: both length penalties rank finished hypotheses as their formulas say", "[unit][search]") {
  // BW = 2, max_len 2. Step 0: EOS 0.5 ranks first and finishes ([] with |Y| = 1); a and b go
  // on. Step 1 can only cut: aa 0.27 and bb 0.18 finish (|Y| = 2); a EOS 0.03 ranks third.
  // Raw log p: [] -0.693, aa -1.309, bb -1.715; which wins depends on the penalty.
  struct Hyp {
    std::vector<int32_t> tokens;
    double logp;
    int64_t length;
  };
  const std::vector<Hyp> finished{{{}, std::log(0.5), 1}, {{kA, kA}, std::log(0.3 * 0.9), 2}, {{kB, kB}, std::log(0.2 * 0.9), 2}};
  for (PenaltyKind kind : {PenaltyKind::gnmt, PenaltyKind::power})
    for (float alpha : {0.0f, 0.6f, 1.0f, 2.0f, 5.0f}) {
      const LengthPenalty lp{.kind = kind, .alpha = alpha};
      auto formula = [&](int64_t L) {
        return kind == PenaltyKind::gnmt ? std::pow((5.0 + L) / 6.0, alpha) : std::pow(static_cast<double>(L), alpha);
      };
      const Hyp* want = &finished[0];
      for (const Hyp& h : finished)
        if (h.logp / formula(h.length) > want->logp / formula(want->length)) want = &h;
      TableModel m(1);
      m.table[{0, {}}] = {{kEos, 0.5}, {kA, 0.3}, {kB, 0.2}};
      m.table[{0, {kA}}] = {{kEos, 0.1}, {kA, 0.9}};
      m.table[{0, {kB}}] = {{kEos, 0.1}, {kB, 0.9}};
      const SearchResult r = decode::beam_search(m, 1, beam_options(2, kind, alpha, 2));
      INFO((kind == PenaltyKind::gnmt ? "gnmt" : "power") << " alpha " << alpha);
      CHECK(r.tokens[0] == want->tokens);
      CHECK(r.scores[0] == Approx(want->logp / lp(want->length)).margin(1e-5));
      CHECK(r.ended[0] == (want->tokens.empty() ? 1 : 0));
    }
  // The formulas disagree: power alpha 1 prefers aa (-0.655 against -0.693), GNMT alpha 1
  // prefers the empty output (aa: -1.309 / (7/6) = -1.122).
  TableModel p(1), g(1);
  for (TableModel* m : {&p, &g}) {
    m->table[{0, {}}] = {{kEos, 0.5}, {kA, 0.3}, {kB, 0.2}};
    m->table[{0, {kA}}] = {{kEos, 0.1}, {kA, 0.9}};
    m->table[{0, {kB}}] = {{kEos, 0.1}, {kB, 0.9}};
  }
  CHECK(decode::beam_search(p, 1, beam_options(2, PenaltyKind::power, 1.0f, 2)).tokens[0] == std::vector<int32_t>{kA, kA});
  CHECK(decode::beam_search(g, 1, beam_options(2, PenaltyKind::gnmt, 1.0f, 2)).tokens[0].empty());
}

TEST_CASE("search: a sentence is done once K hypotheses ended, all of that step's kept", "[unit][search]") {
  // BW = 2. Step 0: EOS 0.5 finishes (one ended), a 0.3 and b 0.2 go on. Step 1: a EOS 0.27 and
  // b EOS 0.18 both finish: three ended, the sentence stops without a third step. With power
  // alpha 1: [] -0.693, [a] -1.309 / 2 = -0.655 wins, [b] -1.715 / 2.
  TableModel m(1);
  m.table[{0, {}}] = {{kEos, 0.5}, {kA, 0.3}, {kB, 0.2}};
  m.table[{0, {kA}}] = {{kEos, 0.9}, {kA, 0.1}};
  m.table[{0, {kB}}] = {{kEos, 0.9}, {kB, 0.1}};
  const SearchResult r = decode::beam_search(m, 1, beam_options(2, PenaltyKind::power, 1.0f));
  CHECK(m.rows_per_step == std::vector<int64_t>{1, 2});
  CHECK(r.tokens[0] == std::vector<int32_t>{kA});
  CHECK(r.ended[0] == 1);
  CHECK(r.scores[0] == Approx(std::log(0.27) / 2.0).margin(1e-5));
}

TEST_CASE("search: an EOS ranked outside the best K neither finishes nor counts towards K", "[unit][search]") {
  // BW = 2, power alpha 1. Step 0 keeps a 0.6 and b 0.4. Step 1: a EOS 0.3 (finishes), a c 0.3
  // (continues), b EOS 0.24 ranks third: outside the beam, so it does not finish and the
  // sentence goes on with a c and b b 0.16. Step 2: a c EOS 0.3 wins with |Y| = 3 (-0.401
  // against a EOS's -1.204 / 2 = -0.602).
  TableModel m(1);
  m.table[{0, {}}] = {{kA, 0.6}, {kB, 0.4}};
  m.table[{0, {kA}}] = {{kEos, 0.5}, {kC, 0.5}};
  m.table[{0, {kB}}] = {{kEos, 0.6}, {kB, 0.4}};
  const SearchResult r = decode::beam_search(m, 1, beam_options(2, PenaltyKind::power, 1.0f));
  CHECK(m.rows_per_step == std::vector<int64_t>{1, 2, 2});
  CHECK(r.tokens[0] == std::vector<int32_t>{kA, kC});
  CHECK(r.scores[0] == Approx(std::log(0.3) / 3.0).margin(1e-5));
}

TEST_CASE("search: beam parents may repeat, and rows follow their hypotheses", "[unit][search]") {
  // BW = 2. Step 0: a 0.5 and b 0.45 from the one row: parents {0, 0}. Step 1: b a 0.225 and
  // b b 0.2025 beat a EOS 0.2: both from row 1, parents {1, 1}. Step 2: EOS everywhere.
  TableModel m(1);
  m.table[{0, {}}] = {{kEos, 0.05}, {kA, 0.5}, {kB, 0.45}};
  m.table[{0, {kA}}] = {{kEos, 0.4}, {kA, 0.2}, {kB, 0.2}, {kC, 0.2}};
  m.table[{0, {kB}}] = {{kEos, 0.05}, {kA, 0.5}, {kB, 0.45}};
  const SearchResult r = decode::beam_search(m, 1, beam_options(2, PenaltyKind::gnmt, 0.0f));
  CHECK(m.keeps == std::vector<std::vector<int64_t>>{{0, 0}, {1, 1}});
  CHECK(r.tokens[0] == std::vector<int32_t>{kB, kA});
  CHECK(r.scores[0] == Approx(std::log(0.45 * 0.5)).margin(1e-5));
  check_attention(r);
}

TEST_CASE("search: sentences of one batch are decoded independently, finished ones leave", "[unit][search]") {
  // Sentence 0: scenario A (done after 2 steps); sentence 1: scenario C cut at max_len 3.
  for (int64_t K : {1, 2}) {
    TableModel both(2), first(1), second(1);
    scenario_a(both, 0);
    scenario_a(first, 0);
    both.fallback = second.fallback = {{kEos, 0.1}, {kA, 0.6}, {kB, 0.3}};
    const SearchOptions o = beam_options(K, PenaltyKind::gnmt, 0.6f, 3);
    const SearchResult r = decode::beam_search(both, 2, o);
    const SearchResult r0 = decode::beam_search(first, 1, o);
    const SearchResult r1 = decode::beam_search(second, 1, o);
    CHECK(r.tokens[0] == r0.tokens[0]);
    CHECK(r.tokens[1] == r1.tokens[0]);
    CHECK(r.scores[0] == r0.scores[0]);
    CHECK(r.scores[1] == r1.scores[0]);
    CHECK(both.rows_per_step == std::vector<int64_t>{2, 2 * K, K});   // sentence 0 left after step 1
    check_attention(r);
    TableModel g(2);
    scenario_a(g, 0);
    g.fallback = both.fallback;
    const SearchResult greedy = decode::greedy_search(g, 2, o);
    CHECK(greedy.tokens == std::vector<std::vector<int32_t>>{{kA}, {kA, kA, kA}});
    CHECK(g.rows_per_step == std::vector<int64_t>{2, 2, 1});
    CHECK(g.keeps == std::vector<std::vector<int64_t>>{{1}});
    check_attention(greedy);
  }
}

TEST_CASE("search: PAD and BOS are never emitted even when most likely, and take no mass", "[unit][search]") {
  // The root gives PAD 0.5, BOS 0.3, a and b 0.1 each: without PAD and BOS, a and b 0.5 each.
  // Every longer prefix gives PAD 0.9 and EOS 0.1, i.e. EOS with probability 1. Beam 2 finishes
  // a EOS and b EOS in step 1 (equal: the first, a, wins).
  auto make = [](TableModel& m) {
    m.table[{0, {}}] = {{kPad, 0.5}, {kBos, 0.3}, {kA, 0.1}, {kB, 0.1}};
    m.fallback = {{kPad, 0.9}, {kEos, 0.1}};
  };
  TableModel g(1), b(1);
  make(g);
  make(b);
  const SearchResult greedy = decode::greedy_search(g, 1, {});
  CHECK(greedy.tokens[0] == std::vector<int32_t>{kA});
  CHECK(greedy.scores[0] == Approx(std::log(0.5)).margin(1e-5));
  const SearchResult beam = decode::beam_search(b, 1, beam_options(2, PenaltyKind::gnmt, 0.0f));
  CHECK(beam.tokens[0] == std::vector<int32_t>{kA});
  CHECK(beam.scores[0] == Approx(std::log(0.5)).margin(1e-5));
  for (uint64_t seed = 0; seed < 20; ++seed) {
    TableModel s(1);
    make(s);
    Rng rng(seed);
    const SearchResult r = decode::sample_search(s, 1, {}, {.temperature = 1.0f, .top_k = 0}, rng);
    REQUIRE(r.tokens[0].size() == 1);
    CHECK((r.tokens[0][0] == kA || r.tokens[0][0] == kB));
    CHECK(r.ended[0] == 1);
  }
}

TEST_CASE("search: bad options are refused with the field's name", "[unit][search]") {
  TableModel m(1);
  REQUIRE_THROWS_WITH(decode::beam_search(m, 1, beam_options(0, PenaltyKind::gnmt, 0.6f)),
                      Catch::Contains("beam search: beam must be >= 1, got 0"));
  REQUIRE_THROWS_WITH(decode::beam_search(m, 1, beam_options(2, PenaltyKind::power, -1.0f)),
                      Catch::Contains("length_penalty must be >= 0"));
  REQUIRE_THROWS_WITH(decode::greedy_search(m, 1, beam_options(1, PenaltyKind::gnmt, 0.0f, 0)),
                      Catch::Contains("max_len must be >= 1, got 0"));
  Rng rng(1);
  REQUIRE_THROWS_WITH(decode::sample_search(m, 1, {}, {.temperature = 0.0f, .top_k = 0}, rng),
                      Catch::Contains("temperature must be > 0"));
}

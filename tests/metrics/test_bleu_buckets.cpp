#include "attn/metrics/bleu_buckets.hpp"

#include "attn/core/error.hpp"
#include "attn/data/tokenizer.hpp"
#include "test_support.hpp"

using namespace attn;
using metrics::corpus_bleu;
using Tokens = std::vector<std::string>;
using Corpus = std::vector<Tokens>;

namespace {

Tokens words(const std::string& s) { return data::split_whitespace(s); }

// Six sentence pairs of source lengths 2, 7, 3, 12, 6, 5: some translated exactly, some not.
struct Fixture {
  Corpus hyps = {words("a dog runs ."), words("a man in a red hat plays"), words("two dogs play"),
                 words("the child sleeps"), words("a man sings a song"), words("a dog in the park")};
  Corpus refs = {words("a dog runs ."), words("a man in a hat plays ball"), words("two dogs play"),
                 words("the small child sleeps in the big red bed"), words("a man sings a song"),
                 words("a dog in a park")};
  std::vector<int32_t> src_len = {2, 7, 3, 12, 6, 5};
};

}  // namespace

TEST_CASE("partitioned_bleu: each part is the corpus BLEU of exactly its sentences", "[unit][bleu]") {
  const Fixture f;
  const std::vector<int64_t> key = {1, 0, 1, 2, 0, 2};
  const auto parts = metrics::partitioned_bleu(f.hyps, f.refs, key, 4);
  REQUIRE(parts.size() == 4);
  for (int64_t k = 0; k < 4; ++k) {
    Corpus h, r;
    for (size_t i = 0; i < key.size(); ++i)
      if (key[i] == k) h.push_back(f.hyps[i]), r.push_back(f.refs[i]);
    INFO("part " << k);
    CHECK(parts[static_cast<size_t>(k)].sentences == static_cast<int64_t>(h.size()));
    CHECK(parts[static_cast<size_t>(k)].score.bleu == corpus_bleu(h, r).bleu);
    CHECK(parts[static_cast<size_t>(k)].score.hyp_len == corpus_bleu(h, r).hyp_len);
  }
  CHECK(parts[1].score.bleu == Approx(100.0));   // sentences 0 and 2 are exact
  CHECK(parts[3].sentences == 0);                // an empty part scores 0
  CHECK(parts[3].score.bleu == 0.0);
  // One part holds everything: the corpus BLEU.
  const auto whole = metrics::partitioned_bleu(f.hyps, f.refs, std::vector<int64_t>(6, 0), 1);
  CHECK(whole[0].score.bleu == corpus_bleu(f.hyps, f.refs).bleu);

  REQUIRE_THROWS_WITH(metrics::partitioned_bleu(f.hyps, f.refs, std::vector<int64_t>{0, 1}, 2),
                      Catch::Contains("6 hypotheses, 6 references and 2 keys"));
  REQUIRE_THROWS_WITH(metrics::partitioned_bleu(f.hyps, f.refs, key, 2),
                      Catch::Contains("sentence 3 has key 2, expected 0..1"));
}

TEST_CASE("bleu_by_length: buckets by inclusive upper bound, with an open last bucket", "[unit][bleu]") {
  const Fixture f;
  CHECK(metrics::uniform_length_buckets(5, 12) == std::vector<int64_t>{5, 10, 15});
  CHECK(metrics::uniform_length_buckets(5, 10) == std::vector<int64_t>{5, 10});
  CHECK(metrics::uniform_length_buckets(5, 0) == std::vector<int64_t>{5});
  REQUIRE_THROWS_AS(metrics::uniform_length_buckets(0, 10), ConfigError);

  // Bounds 3, 6: lengths {2, 3} | {6, 5} | open {7, 12}.
  const auto b = metrics::bleu_by_length(f.hyps, f.refs, f.src_len, std::vector<int64_t>{3, 6});
  REQUIRE(b.size() == 3);
  CHECK((b[0].lower == 1 && b[0].upper == 3 && b[0].sentences == 2));
  CHECK((b[1].lower == 4 && b[1].upper == 6 && b[1].sentences == 2));
  CHECK((b[2].lower == 7 && b[2].upper == 12 && b[2].sentences == 2));   // up to the longest
  CHECK(b[0].score.bleu == Approx(100.0));
  CHECK(b[1].score.bleu == corpus_bleu({f.hyps[4], f.hyps[5]}, {f.refs[4], f.refs[5]}).bleu);
  CHECK(b[2].score.bleu == corpus_bleu({f.hyps[1], f.hyps[3]}, {f.refs[1], f.refs[3]}).bleu);
  // Bounds that cover everything add no open bucket; an empty bucket stays, scored 0.
  const auto c = metrics::bleu_by_length(f.hyps, f.refs, f.src_len, std::vector<int64_t>{1, 12});
  REQUIRE(c.size() == 2);
  CHECK(c[0].sentences == 0);
  CHECK(c[1].sentences == 6);
  CHECK(c[1].score.bleu == corpus_bleu(f.hyps, f.refs).bleu);

  const std::string table = metrics::format_length_table(c);
  CHECK_THAT(table, Catch::StartsWith("source length  sentences    BLEU"));
  CHECK_THAT(table, Catch::Contains("          1-1          0       -      -"));
  CHECK_THAT(table, Catch::Contains("         2-12          6"));

  REQUIRE_THROWS_WITH(metrics::bleu_by_length(f.hyps, f.refs, f.src_len, std::vector<int64_t>{5, 5}),
                      Catch::Contains("positive and increasing, got 5 after 5"));
  REQUIRE_THROWS_AS(metrics::bleu_by_length(f.hyps, f.refs, f.src_len, std::vector<int64_t>{}), ConfigError);
  REQUIRE_THROWS_AS(metrics::bleu_by_length(f.hyps, f.refs, std::vector<int32_t>{1, 2}, std::vector<int64_t>{5}),
                    DataError);
}

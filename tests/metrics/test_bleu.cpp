#include "attn/metrics/bleu.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <sys/wait.h>

#include "attn/data/tokenizer.hpp"
#include "test_support.hpp"

using namespace attn;
using metrics::corpus_bleu;
using Tokens = std::vector<std::string>;
using Corpus = std::vector<Tokens>;

namespace {

Tokens words(const std::string& s) { return data::split_whitespace(s); }

double bleu_of(const std::string& hyp, const std::string& ref) {
  return corpus_bleu({words(hyp)}, {words(ref)}).bleu;
}

std::string python() {
  const char* env = std::getenv("PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

// Runs a shell command; returns its standard output and sets `status` to its exit status.
std::string run(const std::string& command, int& status) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) FAIL("popen failed: " << command);
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, pipe)) out += buf;
  status = pclose(pipe);
  return out;
}

// A corpus of references over a small vocabulary (so that n-grams repeat) and hypotheses
// made from them by random substitutions, deletions and duplications (which need clipping).
// Every hypothesis keeps >= 4 tokens: NLTK counts max(1, #n-grams) in the denominator of a
// sentence with fewer than n tokens, where BLEU (and multi-bleu, sacrebleu, ours) counts 0.
std::pair<Corpus, Corpus> make_corpus(uint64_t seed, int n, double p_edit, double p_drop) {
  const Tokens vocab = {"a", "man", "dog", "the", "runs", "in", "park", ".", "red", "ball"};
  Rng rng(seed);
  Corpus hyps, refs;
  for (int s = 0; s < n; ++s) {
    Tokens ref, hyp;
    const int64_t len = 4 + rng.uniform_int(12);
    for (int64_t i = 0; i < len; ++i) ref.push_back(vocab[static_cast<size_t>(rng.uniform_int(10))]);
    for (const std::string& w : ref) {
      const float u = rng.uniform();
      if (u < p_drop && hyp.size() + 4 < ref.size()) continue;                   // delete
      if (u < p_drop + p_edit / 2) hyp.push_back(vocab[static_cast<size_t>(rng.uniform_int(10))]);   // substitute
      else hyp.push_back(w);
      if (rng.uniform() < p_edit / 2) hyp.push_back(hyp.back());                // duplicate
    }
    while (hyp.size() < 4) hyp.push_back("a");
    hyps.push_back(hyp);
    refs.push_back(ref);
  }
  return {hyps, refs};
}

}  // namespace

TEST_CASE("bleu: hand-computed cases", "[unit][bleu]") {
  // Identical: every precision 1, BP 1.
  CHECK(bleu_of("a b c d e", "a b c d e") == Approx(100.0));
  // One wrong last token: p = 4/5, 3/4, 2/3, 1/2; BLEU = (0.2)^(1/4) = 0.66874.
  const metrics::BleuScore s = corpus_bleu({words("a b c d x")}, {words("a b c d e")});
  CHECK(s.precisions[0] == Approx(80.0));
  CHECK(s.precisions[3] == Approx(50.0));
  CHECK(s.bleu == Approx(100.0 * std::pow(0.2, 0.25)));
  CHECK(s.brevity_penalty == 1.0);
  // Short hypothesis: all precisions 1, c = 5, r = 6: BP = exp(1 - 6/5).
  const metrics::BleuScore short_hyp = corpus_bleu({words("a b c d e")}, {words("a b c d e f")});
  CHECK(short_hyp.brevity_penalty == Approx(std::exp(-0.2)));
  CHECK(short_hyp.bleu == Approx(100.0 * std::exp(-0.2)));
  CHECK(short_hyp.ratio == Approx(5.0 / 6.0));
  // Clipping (Papineni's example): "the" x7 against a reference with two "the": p1 = 2/7.
  const metrics::BleuStats st = metrics::bleu_stats(words("the the the the the the the"),
                                                    words("the cat is on the mat"));
  CHECK(st.matches[0] == 2);
  CHECK(st.totals[0] == 7);
  CHECK(st.matches[1] == 0);
  CHECK(st.totals[3] == 4);
  CHECK(bleu_of("the the the the the the the", "the cat is on the mat") == 0.0);   // p2 = 0
  // Empty hypothesis: BP 0, BLEU 0; ids work like strings.
  CHECK(corpus_bleu({{}}, {words("a b")}).bleu == 0.0);
  CHECK(metrics::bleu_stats(std::vector<int32_t>{4, 5, 4}, std::vector<int32_t>{4, 4, 6}).matches[0] == 2);
}

TEST_CASE("bleu: statistics are summed over the corpus before dividing", "[unit][bleu]") {
  // Sentence 1 alone has p4 = 0 (BLEU 0), sentence 2 alone is perfect; summed, p4 = 2/3.
  const Corpus hyps = {words("a b c x"), words("d e f g h")};
  const Corpus refs = {words("a b c d"), words("d e f g h")};
  const metrics::BleuScore s = corpus_bleu(hyps, refs);
  // 1-grams: 3/4 + 5/5 = 8/9; 2-grams: 2/3 + 4/4 = 6/7; 3-grams: 1/2 + 3/3 = 4/5; 4-grams: 0/1 + 2/2 = 2/3.
  const double expected = 100.0 * std::pow(8.0 / 9 * 6.0 / 7 * 4.0 / 5 * 2.0 / 3, 0.25);
  CHECK(s.bleu == Approx(expected));
  CHECK(metrics::format_bleu(s).rfind("BLEU = ", 0) == 0);
  CHECK(metrics::format_bleu(corpus_bleu({words("a b c d e")}, {words("a b c d e f")})) ==
        "BLEU = 81.87, 100.0/100.0/100.0/100.0 (BP=0.819, ratio=0.833, hyp_len=5, ref_len=6)");
  REQUIRE_THROWS_WITH(corpus_bleu(hyps, {refs[0]}), Catch::Contains("2 hypotheses but 1 references"));
}

TEST_CASE("bleu: BLEU-1 to BLEU-4 as captioning papers report them", "[unit][bleu]") {
  // p = 4/5, 3/4, 2/3, 1/2 and a short hypothesis (c = 5, r = 6): BLEU-n = BP (p_1 ... p_n)^(1/n).
  const metrics::BleuScore s = corpus_bleu({words("a b c d x")}, {words("a b c d e f")});
  const double bp = std::exp(1.0 - 6.0 / 5.0);
  CHECK(metrics::bleu_n(s, 1) == Approx(100.0 * bp * 0.8));
  CHECK(metrics::bleu_n(s, 2) == Approx(100.0 * bp * std::sqrt(0.8 * 0.75)));
  CHECK(metrics::bleu_n(s, 3) == Approx(100.0 * bp * std::cbrt(0.8 * 0.75 * 2.0 / 3.0)));
  CHECK(metrics::bleu_n(s, 4) == Approx(s.bleu));
  // A zero 2-gram precision zeroes BLEU-2..4 but not BLEU-1.
  const metrics::BleuScore z = corpus_bleu({words("b a")}, {words("a b")});
  CHECK(metrics::bleu_n(z, 1) == Approx(100.0));
  CHECK(metrics::bleu_n(z, 2) == 0.0);
  REQUIRE_THROWS_WITH(metrics::bleu_n(s, 5), Catch::Contains("n must be in [1, 4], got 5"));
}

TEST_CASE("bleu: agrees with NLTK's corpus_bleu on generated corpora", "[integration][bleu]") {
  test::TempDir dir;
  // One interpreter run for every corpus (importing nltk takes seconds); exit 77: no nltk.
  const std::string script = dir.file("bleu.py");
  std::ofstream(script) << "import sys\n"
                           "try:\n"
                           "    from nltk.translate.bleu_score import corpus_bleu\n"
                           "except ImportError:\n"
                           "    sys.exit(77)\n"
                           "for path in sys.argv[1:]:\n"
                           "    hyps, refs = [], []\n"
                           "    for line in open(path, encoding='utf-8'):\n"
                           "        h, r = line.rstrip('\\n').split('\\t')\n"
                           "        hyps.append(h.split()); refs.append([r.split()])\n"
                           "    print('%.8f' % (100 * corpus_bleu(refs, hyps)))\n";
  struct Case { uint64_t seed; double p_edit, p_drop; };
  const std::vector<Case> cases = {{1, 0.2, 0.0}, {2, 0.3, 0.15}, {3, 0.6, 0.05}, {4, 0.1, 0.3}};
  std::vector<metrics::BleuScore> ours;
  std::string args;
  for (const Case& c : cases) {
    const auto [hyps, refs] = make_corpus(c.seed, 60, c.p_edit, c.p_drop);
    const std::string corpus = dir.file("corpus" + std::to_string(c.seed) + ".tsv");
    std::ofstream out(corpus);
    for (size_t i = 0; i < hyps.size(); ++i)
      out << data::join_tokens(hyps[i]) << '\t' << data::join_tokens(refs[i]) << '\n';
    ours.push_back(corpus_bleu(hyps, refs));
    args += " " + corpus;
  }
  int status = 0;
  const std::string out = run(python() + " " + script + args + " 2>/dev/null", status);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
    test::skip_test("nltk is not importable by " + python() + " (install python3-nltk)");
    return;
  }
  REQUIRE(status == 0);
  std::istringstream lines(out);
  for (size_t k = 0; k < cases.size(); ++k) {
    double nltk = -1;
    lines >> nltk;
    INFO("seed " << cases[k].seed << ": ours " << metrics::format_bleu(ours[k]) << ", nltk " << nltk);
    CHECK(ours[k].bleu > 5.0);
    if (cases[k].p_drop > 0.2) CHECK(ours[k].brevity_penalty < 1.0);   // the corpus of short hypotheses
    CHECK(std::fabs(ours[k].bleu - nltk) < 0.01);
  }
}

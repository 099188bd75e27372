#include "attn/data/tokenizer.hpp"

#include "test_support.hpp"

using namespace attn;
using data::tokenize;
using Tokens = std::vector<std::string>;

TEST_CASE("tokenize splits punctuation from words, Moses style", "[unit][tokenizer]") {
  CHECK(tokenize("A man in an orange hat.", {.lowercase = true}) ==
        Tokens{"a", "man", "in", "an", "orange", "hat", "."});
  CHECK(tokenize("A man in an orange hat.") == Tokens{"A", "man", "in", "an", "orange", "hat", "."});
  CHECK(tokenize("Two young, White males (outside)!") ==
        Tokens{"Two", "young", ",", "White", "males", "(", "outside", ")", "!"});
  CHECK(tokenize("He said \"hi\"; then left...") ==
        Tokens{"He", "said", "\"", "hi", "\"", ";", "then", "left", "..."});
}

TEST_CASE("tokenize keeps numbers, inner hyphens and clitics together", "[unit][tokenizer]") {
  CHECK(tokenize("a 3-year-old in a t-shirt pays $3.50 for 1,000 beads") ==
        Tokens{"a", "3-year-old", "in", "a", "t-shirt", "pays", "$", "3.50", "for", "1,000", "beads"});
  CHECK(tokenize("the man's dog isn't - here") ==
        Tokens{"the", "man", "'s", "dog", "isn", "'t", "-", "here"});
  CHECK(tokenize("'quoted' end.") == Tokens{"'", "quoted", "'", "end", "."});
  CHECK(tokenize("-start and end-") == Tokens{"-", "start", "and", "end", "-"});
  CHECK(tokenize("").empty());
  CHECK(tokenize(" \t \xC2\xA0 ").empty());   // ASCII whitespace and U+00A0
}

TEST_CASE("tokenize keeps UTF-8 intact and splits Unicode quotes", "[unit][tokenizer]") {
  // German capitals lower-cased, ß and other letters untouched; „ “ are punctuation.
  CHECK(tokenize("Zwei Männer im FREIEN: „Übung“ für Æsop, Straße.", {.lowercase = true}) ==
        Tokens{"zwei", "männer", "im", "freien", ":", "„", "übung", "“", "für", "æsop", ",", "straße", "."});
  // Czech (Latin Extended-A), Greek (left as it is) and a lone invalid byte.
  CHECK(data::to_lower_utf8("ČEŠTINA Řeka ŽIŽKA İ Ÿ") == "čeština řeka žižka i ÿ");
  CHECK(data::to_lower_utf8("ΑΒΓ x\xFF") == "ΑΒΓ x\xFF");
  CHECK(tokenize("日本語のテキスト。") == Tokens{"日本語のテキスト。"});
  CHECK(tokenize("a\xFF\xFE b") == Tokens{"a\xFF\xFE", "b"});
}

TEST_CASE("detokenize inverts tokenize on ordinary sentences", "[unit][tokenizer]") {
  for (const std::string s : {
           "A man in an orange hat.",
           "Two young, White males are outside near many bushes.",
           "He said \"hello\" (twice); she didn't!",
           "A 3-year-old's t-shirt costs $3.50?",
           "Ein Mann sagt „Hallo“ zu dem Hund.",
           "Wait... what?"}) {
    INFO(s);
    CHECK(data::detokenize(tokenize(s)) == s);
  }
  CHECK(data::detokenize({}) == "");
  CHECK(data::join_tokens({"a", "man", "."}) == "a man .");
  CHECK(data::split_whitespace("  a\tman \xC2\xA0 . ") == Tokens{"a", "man", "."});
}

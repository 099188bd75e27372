// Word tokenisation of natural-language text, and its inverse for printing model output.
//
// The rules follow the Moses tokenizer (tokenizer.perl, default options) as used by the
// Multi30k tutorials, reduced to what European-language image captions need, and are applied
// to UTF-8 without decoding more than the few code points named below; every other byte is
// copied unchanged, so any script passes through intact:
//   1. Whitespace (ASCII space, tab, CR, LF, VT, FF and U+00A0 no-break space) separates words
//      and is dropped.
//   2. Punctuation is split from words into tokens of its own: the ASCII characters
//      ! " # $ % & ( ) * + , . / : ; < = > ? @ [ \ ] ^ _ ` { | } ~ and ' - (with the
//      exceptions below), and the Unicode quotes, dashes and marks „ “ ” ‘ ’ « » ‹ › – — … ¡ ¿.
//      "A man in an orange hat." -> a man in an orange hat .
//   3. Exceptions that keep a word whole, as Moses does:
//      - '.' or ',' between two digits: 3.5, 1,000;
//      - '-' between two letters or digits: t-shirt, 3-year-old;
//      - a run of '.' is one token: "wait..." -> wait ...
//      - an apostrophe (' or ’) after a letter or digit and before a letter starts a clitic
//        token: "man's" -> man 's, "geht's" -> geht 's, "1990's" -> 1990 's (an apostrophe
//        elsewhere is punctuation: rule 2).
//   4. Optional lower-casing (TokenizeOptions::lowercase) maps ASCII, Latin-1 (À-Þ) and Latin
//      Extended-A (Ā-ž) capitals to small letters, which covers English, German, French and
//      Czech; other letters are left as they are. Lower-casing is applied before splitting.
// A letter, here, is any ASCII letter or any byte of a multi-byte UTF-8 sequence that is not
// one of the punctuation code points above.
//
// detokenize() undoes the splitting for display and for reference strings: tokens are joined
// by spaces except before closing punctuation (. , ! ? ; : % ) ] } ” ’ » …) and clitics
// ('s), and after opening punctuation (( [ { $ „ ‘ « ‹ ¿ ¡); “ closes a German „ and
// otherwise opens; straight double quotes
// alternate between opening and closing. detokenize(tokenize(s)) == s for ordinary sentences
// (checked by the tests); lower-casing, of course, is not undone.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace attn::data {

struct TokenizeOptions {
  bool lowercase = false;   // rule 4
};

// Splits one line of text into tokens (rules 1-4). Never fails: every input has a tokenisation.
std::vector<std::string> tokenize(std::string_view text, const TokenizeOptions& opts = {});

// Lower-cases ASCII, Latin-1 and Latin Extended-A capitals; every other byte is kept (rule 4).
std::string to_lower_utf8(std::string_view text);

// Joins tokens into a sentence for display (see above).
std::string detokenize(const std::vector<std::string>& tokens);

// Joins tokens with single spaces: the tokenised text form used by `attn-bleu --hyp-text`.
std::string join_tokens(const std::vector<std::string>& tokens);
// Splits at whitespace only (rule 1): the inverse of join_tokens.
std::vector<std::string> split_whitespace(std::string_view text);

}  // namespace attn::data

// Moses-style word tokenisation over UTF-8 (see tokenizer.hpp for the rules).
#include "attn/data/tokenizer.hpp"

#include <cstdint>

namespace attn::data {
namespace {

enum class Kind { space, punct, digit, letter };

// One code point of `text` starting at byte `pos`: its value and its length in bytes. A byte
// that does not start a valid sequence is taken alone (value = the byte) so that nothing is
// ever lost or merged; such bytes count as letters.
struct CodePoint {
  uint32_t value;
  size_t len;
};

CodePoint decode_at(std::string_view text, size_t pos) {
  const auto b = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const uint8_t b0 = b(0);
  const size_t left = text.size() - pos;
  const auto cont = [&](size_t i) { return i < left && (b(i) & 0xC0) == 0x80; };
  if (b0 < 0x80) return {b0, 1};
  if ((b0 & 0xE0) == 0xC0 && cont(1)) return {((b0 & 0x1Fu) << 6) | (b(1) & 0x3Fu), 2};
  if ((b0 & 0xF0) == 0xE0 && cont(1) && cont(2))
    return {((b0 & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu), 3};
  if ((b0 & 0xF8) == 0xF0 && cont(1) && cont(2) && cont(3))
    return {((b0 & 0x07u) << 18) | ((b(1) & 0x3Fu) << 12) | ((b(2) & 0x3Fu) << 6) | (b(3) & 0x3Fu), 4};
  return {0xFFFFFFFFu, 1};   // invalid: a letter, kept byte for byte
}

bool is_unicode_punct(uint32_t cp) {
  switch (cp) {
    case 0x201E: case 0x201C: case 0x201D: case 0x2018: case 0x2019:   // „ “ ” ‘ ’
    case 0x00AB: case 0x00BB: case 0x2039: case 0x203A:                // « » ‹ ›
    case 0x2013: case 0x2014: case 0x2026:                             // – — …
    case 0x00A1: case 0x00BF:                                          // ¡ ¿
      return true;
    default:
      return false;
  }
}

Kind classify(uint32_t cp) {
  if (cp == ' ' || (cp >= '\t' && cp <= '\r') || cp == 0x00A0) return Kind::space;
  if (cp >= '0' && cp <= '9') return Kind::digit;
  if (cp < 0x80) {
    const bool alpha = (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    return alpha ? Kind::letter : Kind::punct;   // every other printable ASCII is punctuation
  }
  return is_unicode_punct(cp) ? Kind::punct : Kind::letter;
}

bool is_apostrophe(uint32_t cp) { return cp == '\'' || cp == 0x2019; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {   // only called for U+0080..U+07FF (Latin-1 and Latin Extended-A)
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The small letter of a Latin-1 or Latin Extended-A capital, or the code point itself.
uint32_t lower_latin(uint32_t cp) {
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 0x20;              // À..Þ except ×
  if (cp == 0x130) return 'i';                                                // İ
  if ((cp >= 0x100 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177)) return cp | 1u;   // even capitals
  if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E))
    return (cp & 1u) ? cp + 1 : cp;                                            // odd capitals
  if (cp == 0x178) return 0xFF;                                               // Ÿ
  return cp;
}

}  // namespace

std::string to_lower_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_at(text, pos);
    if (cp.len == 1 && cp.value >= 'A' && cp.value <= 'Z') {
      out += static_cast<char>(cp.value + ('a' - 'A'));
    } else if (cp.len == 2 && cp.value >= 0xC0 && cp.value <= 0x17F) {
      append_utf8(out, lower_latin(cp.value));
    } else {
      out.append(text.substr(pos, cp.len));
    }
    pos += cp.len;
  }
  return out;
}

std::vector<std::string> tokenize(std::string_view input, const TokenizeOptions& opts) {
  std::string lowered;
  if (opts.lowercase) lowered = to_lower_utf8(input);
  const std::string_view text = opts.lowercase ? std::string_view(lowered) : input;

  // Decode once: code points with their byte offsets and kinds; a sentinel space at the end.
  struct Cp { uint32_t value; size_t pos, len; Kind kind; };
  std::vector<Cp> cps;
  cps.reserve(text.size() + 1);
  for (size_t pos = 0; pos < text.size();) {
    const CodePoint cp = decode_at(text, pos);
    cps.push_back({cp.value, pos, cp.len, classify(cp.value)});
    pos += cp.len;
  }
  cps.push_back({' ', text.size(), 0, Kind::space});

  std::vector<std::string> tokens;
  size_t start = 0;          // byte offset where the current token began
  bool open = false;         // a word token is being built
  const auto flush = [&](size_t end) {
    if (open) tokens.emplace_back(text.substr(start, end - start));
    open = false;
  };
  const auto alnum = [](Kind k) { return k == Kind::letter || k == Kind::digit; };

  for (size_t i = 0; i + 1 < cps.size(); ++i) {
    const Cp& c = cps[i];
    const Kind prev = i > 0 ? cps[i - 1].kind : Kind::space;
    const Kind next = cps[i + 1].kind;
    if (c.kind == Kind::space) {
      flush(c.pos);
      continue;
    }
    if (alnum(c.kind)) {
      if (!open) { start = c.pos; open = true; }
      continue;
    }
    // Punctuation. Rule 3 exceptions first.
    const bool numeric_sep = (c.value == '.' || c.value == ',') && prev == Kind::digit && next == Kind::digit;
    const bool inner_hyphen = c.value == '-' && open && alnum(prev) && alnum(next);
    if (numeric_sep || inner_hyphen) continue;              // stays inside the current word
    flush(c.pos);
    if (is_apostrophe(c.value) && alnum(prev) && next == Kind::letter) {
      start = c.pos;                                        // a clitic: 's, 're, 't
      open = true;
      continue;
    }
    size_t end = i;
    if (c.value == '.')
      while (cps[end + 1].value == '.') ++end;              // "..." is one token
    tokens.emplace_back(text.substr(c.pos, cps[end].pos + cps[end].len - c.pos));
    i = end;
  }
  flush(text.size());
  return tokens;
}

std::string detokenize(const std::vector<std::string>& tokens) {
  static const std::vector<std::string_view> kClosing = {
      ".", ",", "!", "?", ";", ":", "%", ")", "]", "}", "\u201D", "\u2019", "\u00BB", "\u203A", "\u2026", "..."};
  static const std::vector<std::string_view> kOpening = {
      "(", "[", "{", "$", "\u201E", "\u2018", "\u00AB", "\u2039", "\u00BF", "\u00A1"};
  const auto in = [](const std::vector<std::string_view>& set, std::string_view t) {
    for (std::string_view s : set)
      if (s == t) return true;
    return false;
  };

  std::string out;
  bool glue_next = true;          // no space before the next token
  bool straight_open = false;     // a '"' has opened and not closed
  int low_open = 0;               // German „ waiting for its closing “
  for (const std::string& t : tokens) {
    bool attach_left = false, attach_right = false;
    if (t == "\"") {
      attach_left = straight_open;
      attach_right = !straight_open;
      straight_open = !straight_open;
    } else if (t == "\u201C") {   // “ closes a German „, opens an English quotation
      attach_left = low_open > 0;
      attach_right = low_open == 0;
      if (low_open > 0) --low_open;
    } else if (in(kClosing, t)) {
      attach_left = true;
    } else if (in(kOpening, t)) {
      attach_right = true;
      if (t == "\u201E") ++low_open;
    } else if ((t.size() > 1 && t[0] == '\'') || t.rfind("\u2019", 0) == 0) {
      attach_left = true;         // a clitic: 's
    }
    if (!out.empty() && !glue_next && !attach_left) out += ' ';
    out += t;
    glue_next = attach_right;
  }
  return out;
}

std::string join_tokens(const std::vector<std::string>& tokens) {
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) out += ' ';
    out += tokens[i];
  }
  return out;
}

std::vector<std::string> split_whitespace(std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0, start = 0;
  bool open = false;
  while (pos < text.size()) {
    const CodePoint cp = decode_at(text, pos);
    if (classify(cp.value) == Kind::space) {
      if (open) out.emplace_back(text.substr(start, pos - start));
      open = false;
    } else if (!open) {
      start = pos;
      open = true;
    }
    pos += cp.len;
  }
  if (open) out.emplace_back(text.substr(start));
  return out;
}

}  // namespace attn::data

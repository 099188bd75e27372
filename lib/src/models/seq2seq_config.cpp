// Seq2SeqConfig: names of the enumerations, range checks and the /config attributes.
#include <cmath>
#include <string>

#include "attn/models/seq2seq.hpp"

namespace attn::models {
namespace {

[[noreturn]] void bad_name(const std::string& what, const std::string& name, const std::string& valid) {
  throw ConfigError("unknown " + what + " '" + name + "' (expected " + valid + ")");
}

void require(bool ok, const std::string& message) {
  if (!ok) throw ConfigError("seq2seq config: " + message);
}

std::string num(double v) {
  std::string s = std::to_string(v);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

Seq2SeqScore parse_seq2seq_score(const std::string& name) {
  if (name == "none") return Seq2SeqScore::none;
  if (name == "dot") return Seq2SeqScore::dot;
  if (name == "general") return Seq2SeqScore::general;
  if (name == "concat" || name == "additive") return Seq2SeqScore::concat;
  if (name == "scaled_dot" || name == "scaled-dot") return Seq2SeqScore::scaled_dot;
  if (name == "location") return Seq2SeqScore::location;
  bad_name("attention", name, "none, dot, general, concat, scaled_dot or location");
}
const char* seq2seq_score_name(Seq2SeqScore score) {
  switch (score) {
    case Seq2SeqScore::none: return "none";
    case Seq2SeqScore::dot: return "dot";
    case Seq2SeqScore::general: return "general";
    case Seq2SeqScore::concat: return "concat";
    case Seq2SeqScore::scaled_dot: return "scaled_dot";
    case Seq2SeqScore::location: return "location";
  }
  return "?";
}

AttentionStyle parse_attention_style(const std::string& name) {
  if (name == "bahdanau") return AttentionStyle::bahdanau;
  if (name == "luong") return AttentionStyle::luong;
  bad_name("attention style", name, "bahdanau or luong");
}
const char* attention_style_name(AttentionStyle style) {
  return style == AttentionStyle::bahdanau ? "bahdanau" : "luong";
}

LocalAttention parse_local_attention(const std::string& name) {
  if (name == "global") return LocalAttention::global;
  if (name == "local_m" || name == "local-m") return LocalAttention::local_m;
  if (name == "local_p" || name == "local-p") return LocalAttention::local_p;
  bad_name("local attention", name, "global, local_m or local_p");
}
const char* local_attention_name(LocalAttention local) {
  switch (local) {
    case LocalAttention::global: return "global";
    case LocalAttention::local_m: return "local_m";
    case LocalAttention::local_p: return "local_p";
  }
  return "?";
}

int64_t Seq2SeqConfig::output_input_dim() const {
  return style == AttentionStyle::bahdanau ? dec_hidden + context_dim() + embed_dim : dec_hidden;
}

void Seq2SeqConfig::validate() const {
  require(src_vocab >= 4, "src_vocab must be >= 4 (ids 0..3 are PAD, BOS, EOS, UNK), got " + std::to_string(src_vocab));
  require(tgt_vocab >= 4, "tgt_vocab must be >= 4 (ids 0..3 are PAD, BOS, EOS, UNK), got " + std::to_string(tgt_vocab));
  require(embed_dim >= 1, "embed_dim must be >= 1, got " + std::to_string(embed_dim));
  require(enc_hidden >= 1, "enc_hidden must be >= 1, got " + std::to_string(enc_hidden));
  require(enc_layers >= 1, "enc_layers must be >= 1, got " + std::to_string(enc_layers));
  require(dec_hidden >= 1, "dec_hidden must be >= 1, got " + std::to_string(dec_hidden));
  require(max_src_len >= 1, "max_src_len must be >= 1, got " + std::to_string(max_src_len));
  if (attention == Seq2SeqScore::concat || local == LocalAttention::local_p)
    require(attention_dim >= 1, "attention_dim must be >= 1, got " + std::to_string(attention_dim));
  if (attention == Seq2SeqScore::dot || attention == Seq2SeqScore::scaled_dot)
    require(dec_hidden == memory_dim(),
            std::string(seq2seq_score_name(attention)) + " attention needs dec_hidden (" + std::to_string(dec_hidden) +
                ") == the memory width " + std::to_string(memory_dim()) +
                " (enc_hidden x directions); use general or concat scores for different widths");
  if (local != LocalAttention::global) {
    require(attention != Seq2SeqScore::none, std::string(local_attention_name(local)) + " needs an attention score");
    require(window >= 1, "window must be >= 1 for local attention, got " + std::to_string(window));
  }
  require(dropout >= 0.0f && dropout < 1.0f, "dropout must be in [0, 1), got " + num(dropout));
  require(teacher_forcing >= 0.0f && teacher_forcing <= 1.0f,
          "teacher_forcing must be in [0, 1], got " + num(teacher_forcing));
  require(label_smoothing >= 0.0f && label_smoothing < 1.0f,
          "label_smoothing must be in [0, 1), got " + num(label_smoothing));
}

std::map<std::string, io::AttrValue> Seq2SeqConfig::to_attrs() const {
  return {{"src_vocab", src_vocab},
          {"tgt_vocab", tgt_vocab},
          {"embed_dim", embed_dim},
          {"cell", std::string(nn::rnn_cell_name(cell))},
          {"enc_hidden", enc_hidden},
          {"enc_layers", enc_layers},
          {"bidirectional", int64_t{bidirectional}},
          {"encoder_self_attention", int64_t{encoder_self_attention}},
          {"dec_hidden", dec_hidden},
          {"attention", std::string(seq2seq_score_name(attention))},
          {"style", std::string(attention_style_name(style))},
          {"attention_dim", attention_dim},
          {"local", std::string(local_attention_name(local))},
          {"window", window},
          {"max_src_len", max_src_len},
          {"dropout", double{dropout}},
          {"teacher_forcing", double{teacher_forcing}},
          {"label_smoothing", double{label_smoothing}}};
}

Seq2SeqConfig Seq2SeqConfig::from_attrs(const std::map<std::string, io::AttrValue>& attrs) {
  Seq2SeqConfig c;
  auto get = [&](const std::string& key) -> const io::AttrValue* {
    auto it = attrs.find(key);
    return it == attrs.end() ? nullptr : &it->second;
  };
  auto type_error = [](const std::string& key, const char* want) {
    return ConfigError("seq2seq config: attribute '" + key + "' must be " + want);
  };
  auto int_of = [&](const std::string& key, int64_t& out) {
    if (const io::AttrValue* v = get(key)) {
      if (const int64_t* i = std::get_if<int64_t>(v)) out = *i;
      else throw type_error(key, "an integer");
    }
  };
  auto bool_of = [&](const std::string& key, bool& out) {
    int64_t v = out ? 1 : 0;
    int_of(key, v);
    if (v != 0 && v != 1) throw type_error(key, "0 or 1");
    out = v == 1;
  };
  auto float_of = [&](const std::string& key, float& out) {
    if (const io::AttrValue* v = get(key)) {
      if (const double* d = std::get_if<double>(v)) out = static_cast<float>(*d);
      else if (const int64_t* i = std::get_if<int64_t>(v)) out = static_cast<float>(*i);
      else throw type_error(key, "a number");
    }
  };
  auto string_of = [&](const std::string& key, auto parse, auto& out) {
    if (const io::AttrValue* v = get(key)) {
      if (const std::string* s = std::get_if<std::string>(v)) out = parse(*s);
      else throw type_error(key, "a string");
    }
  };
  int_of("src_vocab", c.src_vocab);
  int_of("tgt_vocab", c.tgt_vocab);
  int_of("embed_dim", c.embed_dim);
  string_of("cell", nn::parse_rnn_cell, c.cell);
  int_of("enc_hidden", c.enc_hidden);
  int_of("enc_layers", c.enc_layers);
  bool_of("bidirectional", c.bidirectional);
  bool_of("encoder_self_attention", c.encoder_self_attention);
  int_of("dec_hidden", c.dec_hidden);
  string_of("attention", parse_seq2seq_score, c.attention);
  string_of("style", parse_attention_style, c.style);
  int_of("attention_dim", c.attention_dim);
  string_of("local", parse_local_attention, c.local);
  int_of("window", c.window);
  int_of("max_src_len", c.max_src_len);
  float_of("dropout", c.dropout);
  float_of("teacher_forcing", c.teacher_forcing);
  float_of("label_smoothing", c.label_smoothing);
  c.validate();
  return c;
}

}  // namespace attn::models

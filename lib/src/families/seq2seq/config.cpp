// Seq2SeqConfig: names of the enumerations, range checks and the /config attributes.
#include <cmath>
#include <string>

#include "attn/core/enum_names.hpp"
#include "attn/families/seq2seq/model.hpp"
#include "attn/io/config_fields.hpp"
#include "attn/io/config_limits.hpp"

namespace attn::seq2seq {
namespace {

std::string num(double v) {
  std::string s = std::to_string(v);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

namespace {
constexpr EnumNames<AttentionStyle, 2> kStyleNames{
    {{AttentionStyle::bahdanau, "bahdanau"}, {AttentionStyle::luong, "luong"}}};
constexpr EnumNames<LocalAttention, 3> kLocalNames{{{LocalAttention::global, "global"},
                                                    {LocalAttention::local_m, "monotonic"},
                                                    {LocalAttention::local_p, "predictive"}}};
}  // namespace

AttentionStyle parse_attention_style(const std::string& name) {
  return parse_enum(kStyleNames, "attention style", name);
}
const char* attention_style_name(AttentionStyle style) { return enum_name(kStyleNames, style); }
LocalAttention parse_local_attention(const std::string& name) {
  return parse_enum(kLocalNames, "local attention", name);
}
const char* local_attention_name(LocalAttention local) { return enum_name(kLocalNames, local); }


int64_t Seq2SeqConfig::output_input_dim() const {
  return attention_style == AttentionStyle::bahdanau ? dec_hidden + context_dim() + embed_dim : dec_hidden;
}

void Seq2SeqConfig::validate() const {
  // Vocabularies hold ids 0..3 (PAD, BOS, EOS, UNK) and more.
  io::check_range("seq2seq", "src_vocab", src_vocab, 4, io::kMaxVocab);
  io::check_range("seq2seq", "tgt_vocab", tgt_vocab, 4, io::kMaxVocab);
  io::check_range("seq2seq", "embed_dim", embed_dim, 1, io::kMaxWidth);
  io::check_range("seq2seq", "hidden", hidden, 1, io::kMaxWidth);
  io::check_range("seq2seq", "layers", layers, 1, io::kMaxCount);
  io::check_range("seq2seq", "dec_hidden", dec_hidden, 1, io::kMaxWidth);
  io::check_range("seq2seq", "max_src_len", max_src_len, 1, io::kMaxLength);
  if (attention == nn::ScoreKind::concat || local == LocalAttention::local_p)
    io::check_range("seq2seq", "attention_dim", attention_dim, 1, io::kMaxWidth);
  if (attention == nn::ScoreKind::dot || attention == nn::ScoreKind::scaled_dot)
    io::check_config("seq2seq", dec_hidden == memory_dim(),
                     std::string(nn::score_kind_name(attention)) + " attention needs dec_hidden (" +
                         std::to_string(dec_hidden) + ") == the memory width " + std::to_string(memory_dim()) +
                         " (hidden x directions); use general or concat scores for different widths");
  if (local != LocalAttention::global)
    io::check_config("seq2seq", attention != nn::ScoreKind::none,
                     std::string(local_attention_name(local)) + " needs an attention score");
  io::check_range("seq2seq", "attention_window", attention_window, 1, io::kMaxLength);
  io::check_config("seq2seq", dropout >= 0.0f && dropout < 1.0f, "dropout must be in [0, 1), got " + num(dropout));
  io::check_config("seq2seq", teacher_forcing >= 0.0f && teacher_forcing <= 1.0f,
                   "teacher_forcing must be in [0, 1], got " + num(teacher_forcing));
  io::check_config("seq2seq", label_smoothing >= 0.0f && label_smoothing < 1.0f,
                   "label_smoothing must be in [0, 1), got " + num(label_smoothing));
}

std::map<std::string, io::AttrValue> Seq2SeqConfig::to_attrs() const { return io::write_fields(*this); }

Seq2SeqConfig Seq2SeqConfig::from_attrs(const std::map<std::string, io::AttrValue>& attrs, const std::string& source) {
  return io::read_fields<Seq2SeqConfig>(attrs, source);
}

}  // namespace attn::seq2seq

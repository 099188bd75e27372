// Slicing datasets, token labels and padding crops for attn-plot (see inputs.hpp).
#include "attn/plot/inputs.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "attn/core/error.hpp"

namespace attn::plot {

namespace {

std::string join(const std::vector<int64_t>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += sep;
    s += std::to_string(v[i]);
  }
  return s;
}

}  // namespace

std::string Selection::describe() const {
  std::vector<std::string> parts;
  if (!index.empty()) parts.push_back("--index " + join(index, ","));
  if (layer) parts.push_back("--layer " + std::to_string(*layer));
  if (head) parts.push_back("--head " + std::to_string(*head));
  if (parts.empty()) return "no --index";
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? " " : "") + parts[i];
  return s;
}

Tensor read_slice(const io::File& file, const std::string& dataset, const Selection& sel, int keep,
                  const std::string& what) {
  const Shape shape = file.shape(dataset);
  const int r = static_cast<int>(shape.size());
  const std::string where = file.display_name() + ": dataset '" + dataset + "' has shape " + to_string(shape);
  const std::string want = !what.empty() ? what : keep == 2 ? "a matrix [R, C]" : "matrices [NH, R, C]";
  if (r < keep) throw ShapeError(where + ", expected " + want + " or more axes");
  const int fixed = r - keep;   // axes to fix: 0 .. fixed - 1

  std::vector<std::optional<int64_t>> at(static_cast<size_t>(fixed));
  std::vector<std::string> flag(static_cast<size_t>(fixed));
  auto place = [&](int axis, int64_t value, const std::string& name) {
    if (axis < 0 || axis >= fixed)
      throw ShapeError(where + ": no " + name + " axis to select with --" + name + " " + std::to_string(value) +
                       " (layouts: [..., heads, R, C], [..., layers, heads, R, C])");
    at[static_cast<size_t>(axis)] = value;
    flag[static_cast<size_t>(axis)] = "--" + name + " " + std::to_string(value);
  };
  if (sel.head) place(r - 3, *sel.head, "head");
  if (sel.layer) place(r - 4, *sel.layer, "layer");
  size_t k = 0;
  for (int a = 0; a < fixed && k < sel.index.size(); ++a)
    if (!at[static_cast<size_t>(a)]) {
      at[static_cast<size_t>(a)] = sel.index[k];
      flag[static_cast<size_t>(a)] = "--index value " + std::to_string(sel.index[k]);
      ++k;
    }
  if (k < sel.index.size())
    throw ShapeError(where + "; " + sel.describe() + " fixes more leading axes than the " + std::to_string(fixed) +
                     " before " + want);
  Shape left;
  for (int a = 0; a < r; ++a)
    if (a >= fixed || !at[static_cast<size_t>(a)]) left.push_back(shape[static_cast<size_t>(a)]);
  if (static_cast<int>(left.size()) != keep)
    throw ShapeError(where + "; " + sel.describe() + " leaves " + to_string(left) + ", expected " + want +
                     " (fix the leading axes with --index" + (keep == 2 && r >= 4 && !sel.head ? ", --head" : "") +
                     (r >= 5 && !sel.layer ? ", --layer" : "") + ")");
  for (int a = 0; a < fixed; ++a) {
    const int64_t v = *at[static_cast<size_t>(a)], n = shape[static_cast<size_t>(a)];
    if (v < 0 || v >= n)
      throw ShapeError(where + "; " + flag[static_cast<size_t>(a)] + " is out of range for axis " + std::to_string(a) +
                       " of size " + std::to_string(n));
  }

  const Shape tail(shape.begin() + fixed, shape.end());
  if (fixed == 0) return file.read(dataset, DType::f32);
  // Only the one leading row is read; the other fixed axes index into it.
  const Tensor rows = file.read_rows(dataset, DType::f32, *at[0], *at[0] + 1);
  int64_t flat = 0, count = 1;
  for (int a = 1; a < fixed; ++a) {
    flat = flat * shape[static_cast<size_t>(a)] + *at[static_cast<size_t>(a)];
    count *= shape[static_cast<size_t>(a)];
  }
  Shape stacked{count};
  stacked.insert(stacked.end(), tail.begin(), tail.end());
  return rows.reshape(stacked)[flat].clone();
}

std::vector<std::string> id_labels(const io::File& file, const std::string& ids, int64_t row,
                                   const std::string& vocab) {
  const Shape shape = file.shape(ids);
  const std::string where = file.display_name() + ": dataset '" + ids + "' has shape " + to_string(shape);
  const int want_rank_lo = row >= 0 ? 2 : 1;
  if (static_cast<int>(shape.size()) < want_rank_lo || static_cast<int>(shape.size()) > want_rank_lo + 1)
    throw ShapeError(where + ", expected token ids " + (row >= 0 ? "[N, L] or [N, S, W]" : "[L] or [S, W]"));
  if (row >= 0 && row >= shape[0])
    throw ShapeError(where + "; row " + std::to_string(row) + " is out of range for its " + std::to_string(shape[0]) +
                     " rows");
  Tensor t = row >= 0 ? file.read_rows(ids, DType::i32, row, row + 1) : file.read(ids, DType::i32);
  if (row >= 0) t = t.reshape(Shape(shape.begin() + 1, shape.end()));
  const std::vector<std::string> words = vocab.empty() ? std::vector<std::string>{} : file.read_strings(vocab);
  const std::string row_text = row >= 0 ? " row " + std::to_string(row) : "";
  auto word = [&](int32_t id) -> std::string {
    if (vocab.empty()) return std::to_string(id);
    if (id < 0 || static_cast<size_t>(id) >= words.size())
      throw DataError(file.display_name() + ": id " + std::to_string(id) + " in '" + ids + "'" + row_text +
                      " is outside the vocabulary '" + vocab + "' of " + std::to_string(words.size()) + " words");
    return words[static_cast<size_t>(id)];
  };
  // The tokens of one sequence of L ids, up to its first padding id.
  auto tokens = [&](const int32_t* p, int64_t L) {
    std::vector<std::string> out;
    for (int64_t i = 0; i < L && p[i] != 0; ++i) out.push_back(word(p[i]));
    return out;
  };
  if (t.rank() == 1) return tokens(t.idata(), t.dim(0));
  const int64_t S = t.dim(0), W = t.dim(1);
  std::vector<std::string> sentences;
  for (int64_t s = 0; s < S; ++s) {
    std::string joined;
    for (const auto& w : tokens(t.idata() + s * W, W)) joined += (joined.empty() ? "" : " ") + w;
    sentences.push_back(joined);
  }
  while (!sentences.empty() && sentences.back().empty()) sentences.pop_back();   // padding sentences
  return sentences;
}

Tensor crop(const Tensor& m, int64_t R, int64_t C) {
  if (m.rank() < 2) throw ShapeError("crop: m [..., R, C] has shape " + to_string(m.shape()) + ", expected rank >= 2");
  const int64_t R0 = m.dim(-2), C0 = m.dim(-1);
  if (R < 0 || R > R0 || C < 0 || C > C0)
    throw ShapeError("crop: cannot take [" + std::to_string(R) + ", " + std::to_string(C) + "] out of " +
                     to_string(m.shape()));
  Shape shape = m.shape();
  shape[shape.size() - 2] = R;
  shape[shape.size() - 1] = C;
  Tensor out(shape);
  const int64_t n = R0 == 0 || C0 == 0 ? 0 : m.numel() / (R0 * C0);
  const float* src = m.data();
  float* dst = out.data();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < R; ++i)
      std::memcpy(dst + (b * R + i) * C, src + (b * R0 + i) * C0, static_cast<size_t>(C) * sizeof(float));
  return out;
}

std::vector<std::string> split_labels(const std::string& text) {
  std::vector<std::string> out;
  if (text.find('|') != std::string::npos) {
    std::string item;
    std::istringstream in(text);
    while (std::getline(in, item, '|')) out.push_back(item);
    if (!text.empty() && text.back() == '|') out.push_back("");
    return out;
  }
  std::istringstream in(text);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace attn::plot

// Refinement tables of mask-predict (see refinement.hpp): reading one sentence's iterations out of
// a translation file, and drawing them as a picture or writing them as aligned text.
#include "attn/plot/refinement.hpp"

#include <algorithm>
#include <cmath>

#include "attn/core/error.hpp"
#include "canvas.hpp"

namespace attn::plot {

namespace {

const char* const kLegend = "re-masked and predicted at that iteration";

void check_refinement(const Refinement& r, const char* what) {
  if (r.iterations <= 0 || r.length <= 0)
    throw ShapeError(std::string(what) + ": sentence " + std::to_string(r.sentence) + " has " +
                     std::to_string(r.iterations) + " iterations of " + std::to_string(r.length) +
                     " positions, nothing to draw");
  const auto cells = static_cast<size_t>(r.iterations * r.length);
  if (r.tokens.size() != cells || r.predicted.size() != cells)
    throw ShapeError(std::string(what) + ": " + std::to_string(r.tokens.size()) + " tokens and " +
                     std::to_string(r.predicted.size()) + " marks for " + std::to_string(r.iterations) + " x " +
                     std::to_string(r.length) + " cells");
}

// Characters of a UTF-8 string (bytes that do not continue one): a token's width in text.
int64_t utf8_width(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

// A cell of the text table: "[word]" when marked, " word " otherwise. Appended piecewise, here
// and below: GCC 12 warns falsely (-Wrestrict) on "x" + string.
std::string bracketed(const std::string& word, bool marked) {
  std::string s(1, marked ? '[' : ' ');
  s += word;
  s += marked ? ']' : ' ';
  return s;
}

// `s` and spaces up to `width` characters, after a separating space unless it starts the line.
void append_column(std::string& line, const std::string& s, int64_t width) {
  if (!line.empty()) line += ' ';
  line += s;
  line.append(static_cast<size_t>(std::max<int64_t>(0, width - utf8_width(s))), ' ');
}

void end_line(std::string& out, std::string& line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out += line;
  out += '\n';
  line.clear();
}

}  // namespace

Refinement read_refinement(const io::File& file, int64_t sentence, const std::string& vocab) {
  const std::string& name = file.display_name();
  const std::string tokens_name = kIterationTokens, masked_name = kIterationMasked;
  if (!file.is_dataset(tokens_name)) {
    std::string kind;
    if (file.has_attr("/", "kind")) kind = file.attr_string("/", "kind");
    const std::string why = !kind.empty() && kind != "translation"
                                ? "the file is a '" + kind + "' file, not a translation"
                                : "the translation was not decoded by mask-predict";
    throw FormatError(name + ": no dataset '" + tokens_name + "': " + why +
                      " (attn-transformer translate writes /iterations for a cmlm model only)");
  }
  const Shape shape = file.shape(tokens_name);
  const std::string where = name + ": dataset '" + tokens_name + "' has shape " + to_string(shape);
  if (shape.size() != 3) throw ShapeError(where + ", expected [N, I, L] (sentences, iterations, positions)");
  if (!file.is_dataset(masked_name))
    throw FormatError(name + ": no dataset '" + masked_name + "' beside '" + tokens_name + "' " + to_string(shape) +
                      " (expected int32 " + to_string(shape) + ", 1 where a position was re-masked)");
  const Shape masked_shape = file.shape(masked_name);
  if (masked_shape != shape)
    throw ShapeError(name + ": dataset '" + masked_name + "' has shape " + to_string(masked_shape) + ", expected " +
                     to_string(shape) + ", the shape of '" + tokens_name + "'");
  const int64_t N = shape[0], I = shape[1], L = shape[2];
  if (I == 0 || L == 0) throw ShapeError(where + ": no iterations or positions to draw");
  if (sentence < 0 || sentence >= N)
    throw ShapeError(where + "; --index " + std::to_string(sentence) + " is out of range for its " + std::to_string(N) +
                     " sentences");

  const Tensor ids = file.read_rows(tokens_name, DType::i32, sentence, sentence + 1);     // [1, I, L]
  const Tensor masks = file.read_rows(masked_name, DType::i32, sentence, sentence + 1);   // [1, I, L]
  const std::string row = " sentence " + std::to_string(sentence);
  for (int64_t k = 0; k < I * L; ++k) {
    const int32_t v = masks.idata()[k];
    if (v != 0 && v != 1)
      throw DataError(name + ": dataset '" + masked_name + "'" + row + " holds " + std::to_string(v) +
                      " at iteration " + std::to_string(k / L) + ", position " + std::to_string(k % L) +
                      ", expected 0 or 1");
  }
  const int32_t* last = ids.idata() + (I - 1) * L;
  const int64_t length = std::find(last, last + L, 0) - last;
  if (length == 0)
    throw DataError(name + ": dataset '" + tokens_name + "'" + row + " is empty (its last iteration holds only " +
                    "padding, id 0): nothing to draw");

  const std::vector<std::string> words = file.read_strings(vocab);
  Refinement r;
  r.sentence = sentence;
  r.iterations = I;
  r.length = length;
  for (int64_t i = 0; i < I; ++i)
    for (int64_t l = 0; l < length; ++l) {
      const int32_t id = ids.idata()[i * L + l];
      if (id < 0 || static_cast<size_t>(id) >= words.size())
        throw DataError(name + ": id " + std::to_string(id) + " at iteration " + std::to_string(i) + ", position " +
                        std::to_string(l) + " of '" + tokens_name + "'" + row + " is outside the vocabulary '" + vocab +
                        "' of " + std::to_string(words.size()) + " words");
      r.tokens.push_back(words[static_cast<size_t>(id)]);
      r.predicted.push_back(static_cast<uint8_t>(masks.idata()[i * L + l]));
    }
  return r;
}

Picture refinement_table(const Refinement& r, const RefinementOptions& opts) {
  check_refinement(r, "refinement_table");
  const int64_t I = r.iterations, L = r.length;
  Canvas cv;
  const Font title_font{style::kTitleSize, true}, head_font{style::kLabelSize, true}, cell_font{style::kLabelSize};
  const double pad = 8;
  std::vector<std::string> words(r.tokens.size());
  for (size_t k = 0; k < words.size(); ++k) words[k] = cv.fit_text(r.tokens[k], cell_font, opts.max_token_width);
  // Each column as wide as its widest token or its position number; every row alike.
  std::vector<double> col_w(static_cast<size_t>(L)), col_x(static_cast<size_t>(L) + 1, 0);
  for (int64_t l = 0; l < L; ++l) {
    double w = std::max(cv.text_width(std::to_string(l), head_font), 16.0);
    for (int64_t i = 0; i < I; ++i) w = std::max(w, cv.text_width(words[static_cast<size_t>(i * L + l)], cell_font));
    col_w[static_cast<size_t>(l)] = std::ceil(w + 2 * pad);
    col_x[static_cast<size_t>(l) + 1] = col_x[static_cast<size_t>(l)] + col_w[static_cast<size_t>(l)];
  }
  const std::string row_title = "iteration";
  double label_w = cv.text_width(row_title, head_font);
  for (int64_t i = 0; i < I; ++i) label_w = std::max(label_w, cv.text_width(std::to_string(i), cell_font));
  label_w = std::ceil(label_w + 2 * pad);
  const double cell_h = std::round(cv.text_height(cell_font) + 9), head_h = cell_h;
  const double title_h = opts.title.empty() ? 0 : cv.text_height(title_font) + 10;
  const double swatch = std::round(cv.text_height(cell_font));
  const double legend_h = opts.legend ? swatch + 10 : 0;
  const double legend_w = swatch + style::kPad + cv.text_width(kLegend, cell_font);
  const double table_w = label_w + col_x.back();
  double W = 2 * style::kMargin + table_w;
  if (!opts.title.empty()) W = std::max(W, 2 * style::kMargin + cv.text_width(opts.title, title_font));
  if (opts.legend) W = std::max(W, 2 * style::kMargin + legend_w);
  W = std::ceil(W);
  const double H = 2 * style::kMargin + title_h + head_h + cell_h * static_cast<double>(I) + legend_h;

  const double x0 = std::round((W - table_w) / 2), y0 = style::kMargin + title_h;
  const Rect grid{x0 + label_w, y0 + head_h, col_x.back(), cell_h * static_cast<double>(I)};
  std::vector<Rect> panels{grid};
  if (!opts.title.empty())
    cv.text(opts.title, W / 2, style::kMargin, title_font, style::kText, HAlign::center, VAlign::top);
  cv.text(row_title, x0 + pad, y0 + head_h / 2, head_font, style::kText, HAlign::left, VAlign::middle);
  for (int64_t l = 0; l < L; ++l)
    cv.text(std::to_string(l), grid.x + col_x[static_cast<size_t>(l)] + col_w[static_cast<size_t>(l)] / 2,
            y0 + head_h / 2, head_font, style::kText, HAlign::center, VAlign::middle);
  for (int64_t i = 0; i < I; ++i) {
    const double y = grid.y + static_cast<double>(i) * cell_h;
    cv.text(std::to_string(i), x0 + pad, y + cell_h / 2, cell_font, style::kText, HAlign::left, VAlign::middle);
    for (int64_t l = 0; l < L; ++l) {
      const Rect cell{grid.x + col_x[static_cast<size_t>(l)], y, col_w[static_cast<size_t>(l)], cell_h};
      panels.push_back(cell);
      if (r.is_predicted(i, l)) cv.fill_rect(cell, opts.highlight);
      const Rgb ink = r.is_predicted(i, l) && luminance(opts.highlight) < 0.5 ? style::kWhite : style::kText;
      cv.text(words[static_cast<size_t>(i * L + l)], cell.x + cell.w / 2, y + cell_h / 2, cell_font, ink,
              HAlign::center, VAlign::middle);
    }
  }
  // Light rules between cells, a dark rule under the header and at the bottom.
  for (int64_t l = 1; l < L; ++l) {
    const double x = grid.x + col_x[static_cast<size_t>(l)];
    cv.line(x, grid.y, x, grid.bottom(), style::kGrid, 1);
  }
  for (int64_t i = 1; i < I; ++i) {
    const double y = grid.y + static_cast<double>(i) * cell_h;
    cv.line(grid.x, y, grid.right(), y, style::kGrid, 1);
  }
  cv.line(x0, grid.y, grid.right(), grid.y, style::kAxis, 1.2);
  cv.line(x0, grid.bottom(), grid.right(), grid.bottom(), style::kAxis, 1.2);
  if (opts.legend) {
    const double ly = grid.bottom() + 10, lx = std::round((W - legend_w) / 2);
    const Rect box{lx, ly, swatch, swatch};
    cv.fill_rect(box, opts.highlight);
    cv.stroke_rect(box, style::kAxis, 0.5);
    cv.text(kLegend, lx + swatch + style::kPad, ly + swatch / 2, cell_font, style::kText, HAlign::left, VAlign::middle);
  }
  return cv.finish(W, H, std::move(panels));
}

std::string refinement_text(const Refinement& r, const RefinementOptions& opts) {
  check_refinement(r, "refinement_text");
  const int64_t I = r.iterations, L = r.length;
  const std::string row_title = "iteration";
  auto cell = [&](int64_t i, int64_t l) { return bracketed(r.token(i, l), r.is_predicted(i, l)); };
  std::vector<int64_t> width(static_cast<size_t>(L));
  for (int64_t l = 0; l < L; ++l) {
    int64_t w = utf8_width(bracketed(std::to_string(l), false));
    for (int64_t i = 0; i < I; ++i) w = std::max(w, utf8_width(cell(i, l)));
    width[static_cast<size_t>(l)] = w;
  }
  const int64_t label_w = std::max(utf8_width(row_title), utf8_width(std::to_string(I - 1)));
  std::string out, line;
  if (!opts.title.empty()) {
    line = opts.title;
    end_line(out, line);
  }
  append_column(line, row_title, label_w);
  for (int64_t l = 0; l < L; ++l)
    append_column(line, bracketed(std::to_string(l), false), width[static_cast<size_t>(l)]);
  end_line(out, line);
  for (int64_t i = 0; i < I; ++i) {
    append_column(line, std::to_string(i), label_w);
    for (int64_t l = 0; l < L; ++l) append_column(line, cell(i, l), width[static_cast<size_t>(l)]);
    end_line(out, line);
  }
  if (opts.legend) {
    line = "[token]: ";
    line += kLegend;
    end_line(out, line);
  }
  return out;
}

}  // namespace attn::plot

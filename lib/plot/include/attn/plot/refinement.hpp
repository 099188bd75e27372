// The refinement table of mask-predict decoding (Ghazvininejad et al. 2019): one sentence's output
// after every iteration, one row per iteration and one column per output position, with the
// tokens re-masked and predicted at that iteration marked. A cmlm model's translation file holds
// what it needs (`/iterations/tokens`, `/iterations/masked`, int32 [N, I, L], and `/vocab/tgt`;
// docs/FORMATS.md, "Translations"). It is drawn as a picture (marked cells on a highlighted
// background) or written as aligned text (marked tokens in brackets), for a terminal or a README.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/io/hdf5_file.hpp"
#include "attn/plot/color.hpp"
#include "attn/plot/picture.hpp"

namespace attn::plot {

inline constexpr const char* kIterationTokens = "/iterations/tokens";
inline constexpr const char* kIterationMasked = "/iterations/masked";

// One sentence's refinement: I iterations of L positions, row-major (iteration i, position l at
// i * L + l).
struct Refinement {
  int64_t sentence = 0;                 // its row in the file
  int64_t iterations = 0, length = 0;   // I, L
  std::vector<std::string> tokens;      // [I * L] the word at each position after each iteration
  std::vector<uint8_t> predicted;       // [I * L] 1 where the position was re-masked and predicted
  const std::string& token(int64_t i, int64_t l) const { return tokens[static_cast<size_t>(i * length + l)]; }
  bool is_predicted(int64_t i, int64_t l) const { return predicted[static_cast<size_t>(i * length + l)] != 0; }
};

// Sentence `sentence` of the translation file: its positions before the first padding id 0 of
// the last iteration (the sentence's length; row I - 1 is /predictions), each id looked up in
// the vocabulary dataset `vocab`. Throws, naming the file and the dataset, expected and found:
// FormatError when /iterations/tokens is missing (the file was not decoded by mask-predict) or
// /iterations/masked is; ShapeError for a shape other than [N, I, L], shapes that differ, no
// iterations or positions, a sentence outside [0, N); DataError for a mask other than 0 or 1, an
// id outside the vocabulary, or an empty sentence.
Refinement read_refinement(const io::File& file, int64_t sentence, const std::string& vocab = "/vocab/tgt");

struct RefinementOptions {
  std::string title;
  Rgb highlight{0.99, 0.80, 0.45};   // background of the re-predicted tokens (light orange)
  bool legend = true;                // a line below saying what the marks mean
  double max_token_width = 200;      // longer tokens are cut with an ellipsis (pictures only)
};

// The table as a picture. Rows are labelled with the iteration (0: the first pass, where every
// position is predicted), columns with the position; each column is as wide as its widest token.
// panels(): the grid of cells, then every cell in row-major order (1 + i * L + l).
// Throws ShapeError when `r` holds no cells or its vectors do not hold I * L entries.
Picture refinement_table(const Refinement& r, const RefinementOptions& opts = {});

// The table as text, columns aligned (widths in UTF-8 characters): an optional title line, a
// header "iteration" and the positions, one line per iteration with its number, each token
// written "[word]" when re-predicted at that iteration and " word " otherwise, then the legend
// line. Lines end in "\n", without trailing spaces. Throws as refinement_table.
std::string refinement_text(const Refinement& r, const RefinementOptions& opts = {});

}  // namespace attn::plot

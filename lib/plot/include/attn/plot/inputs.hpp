// Reading what to draw out of attnlab HDF5 files: a matrix (or a stack of them) sliced out of
// any float dataset, token labels from id datasets and vocabularies, and cropping of padding.
//
// Slicing. A dataset of rank r is cut down to its last `keep` axes (2 for one matrix
// [rows, cols], 3 for all heads [NH, rows, cols]) by fixing every axis before them:
//   - `head` fixes axis r - 3 and `layer` axis r - 4, the layout of attention outputs
//     ([N, NH, T, S], [N, layers, NH, T, S]);
//   - `index` fixes the remaining leading axes in order (usually the example number).
// Every failure (missing dataset, wrong rank, index out of range, too few or too many indices)
// throws FormatError or ShapeError naming the file, the dataset, its shape and what was asked.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attn/core/tensor.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::plot {

struct Selection {
  std::vector<int64_t> index;       // leading indices, in order
  std::optional<int64_t> layer;     // axis r - 4
  std::optional<int64_t> head;      // axis r - 3 (not with keep = 3)
  // "--index 3 --head 2": how the selection reads in messages (flag names of attn-plot).
  std::string describe() const;
};

// The float32 slice [..last `keep` axes] of `dataset`; a copy, read with a hyperslab of the
// first axis when that axis is fixed (so a large dataset is not read whole). `what` names the
// expected result in messages ("an image [C, H, W]"; default "a matrix [R, C]" for keep 2).
Tensor read_slice(const io::File& file, const std::string& dataset, const Selection& sel, int keep,
                  const std::string& what = "");

// Labels from token ids: row `row` of `ids` ([N, Lmax], or [Lmax] with row = -1) up to its first
// padding id 0, each id looked up in the vocabulary dataset `vocab` (UTF-8 strings), or
// printed as a number when `vocab` is empty. With ids [N, sentences, words] (as bAbI
// stories) row n gives one label per sentence: its words joined by spaces.
// Throws DataError for an id outside the vocabulary.
std::vector<std::string> id_labels(const io::File& file, const std::string& ids, int64_t row,
                                   const std::string& vocab);

// The top-left block of R rows and C columns (the arguments) of the last two axes of m
// ([..., rows, cols] with R <= rows, C <= cols): a copy, for dropping the padded rows and
// columns of an attention map.
Tensor crop(const Tensor& m, int64_t R, int64_t C);

// Splits a label list given on the command line: on '|' when the text has one (labels with
// spaces, such as sentences), else on whitespace. Empty text gives no labels.
std::vector<std::string> split_labels(const std::string& text);

}  // namespace attn::plot

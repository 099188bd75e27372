// The splits of a data set: the groups /train, /valid and /test that every layout shares
// (token_data.hpp, sequence_data.hpp, and the families' own layouts).
#pragma once
#include <cstdint>
#include <string>

#include "attn/io/hdf5_file.hpp"

namespace attn::data {

// Whether the file has the group /<split>.
bool has_split(const io::File& file, const std::string& split);

// Throws FormatError "<file>: no split '/<split>' (found: /train, ...)" unless it has it.
void require_split(const io::File& file, const std::string& split);

// The rows a split must hold, checked by every split reader once it knows N from the dataset that
// sets it (`dataset`, the full path): /train at least one, since it is what a run trains on and no
// generator writes it empty (a filter script or h5py can). Throws DataError "<file>: dataset
// '/train/inputs' has 0 rows; a training split needs at least 1". /valid and /test may be empty:
// `attn-data babi --valid-fraction 0` writes an empty /valid, and training then validates on
// nothing; what evaluates a split refuses an empty one (train::require_examples).
void check_split_rows(const io::File& file, const std::string& split, const std::string& dataset, int64_t n);

}  // namespace attn::data

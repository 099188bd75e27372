// The splits of a data set: the groups /train, /valid and /test that every layout shares
// (token_data.hpp, sequence_data.hpp).
#pragma once
#include <string>

#include "attn/io/hdf5_file.hpp"

namespace attn::data {

// Whether the file has the group /<split>.
bool has_split(const io::File& file, const std::string& split);

// Throws FormatError "<file>: no split '/<split>' (found: /train, ...)" unless it has it.
void require_split(const io::File& file, const std::string& split);

}  // namespace attn::data

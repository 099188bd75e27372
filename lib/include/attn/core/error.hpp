// Typed errors of libattn. The library never prints and never exits: it throws one of these,
// and the tools (apps/common) map them to exit codes: ConfigError -> 2 (usage), IoError,
// FormatError and ShapeError on input data -> 3 (bad input), anything else -> 1.
#pragma once
#include <stdexcept>
#include <string>

namespace attn {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A file cannot be opened, read, written or renamed.
class IoError : public Error { using Error::Error; };
// A file opens but its content is not what was expected (missing dataset, dtype, layout).
class FormatError : public Error { using Error::Error; };
// A tensor (from a caller or a file) has the wrong shape.
class ShapeError : public Error { using Error::Error; };
// A configuration value (option, hyper-parameter) is out of range or inconsistent.
class ConfigError : public Error { using Error::Error; };
// The data itself is bad: NaN/Inf where a finite number is required, ids out of range.
class DataError : public Error { using Error::Error; };

}  // namespace attn

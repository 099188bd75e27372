// Model checkpoints: everything needed to use a trained model or to resume its training to
// the same bits, in one self-describing HDF5 file (DESIGN.md, "HDF5 conventions"):
//
//   /                 format = "attnlab/model", format_version, kind, created_by, command
//   /config           one attribute per hyper-parameter (string, int64 or float64)
//   /params/<name>    the parameters, float32 (or int32), named by module path; a name such as
//                     "encoder/layer0/w_q" makes groups
//   /optimizer/<name> optimizer state tensors (moments, velocities), named the same way
//   /state            attributes step, epoch (int64), rng_seed, rng_counter (uint64)
//
// Saving is atomic (through io::File): a crash while saving leaves the previous checkpoint
// intact. Tensors round-trip bit for bit. A tool that stores more (a vocabulary, metrics)
// writes the checkpoint into its own File with write_checkpoint() before commit().
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "attn/core/rng.hpp"
#include "attn/core/tensor.hpp"
#include "attn/io/hdf5_file.hpp"
#include "attn/nn/param.hpp"

namespace attn::io {

using TensorMap = std::map<std::string, Tensor>;

struct Checkpoint {
  std::string kind;                          // model kind: "transformer", "seq2seq", ...
  std::map<std::string, AttrValue> config;   // hyper-parameters, /config attributes
  TensorMap params;                          // /params/<name>
  TensorMap optimizer;                       // /optimizer/<name>
  int64_t step = 0;                          // optimizer steps taken
  int64_t epoch = 0;                         // epochs completed
  RngState rng;                              // the training RNG, to resume its stream exactly
  std::string created_by;                    // root attributes (provenance)
  std::string command;
  std::string source;                        // set by load: the file it came from (for messages)

  // Typed configuration lookups; a missing key or another type throws FormatError naming
  // `source` and the key. config_double also accepts an integer.
  std::string config_string(const std::string& key) const;
  int64_t config_int(const std::string& key) const;
  double config_double(const std::string& key) const;
};

// Writes the checkpoint into an open output file (root attributes included), without commit.
void write_checkpoint(File& file, const Checkpoint& ckpt);
// Reads a checkpoint; throws FormatError unless the file is an attnlab model (of `kind`, when
// non-empty), and DataError naming the file, the tensor and the element when a float value of
// /params or /optimizer is NaN or infinite (every model loader, resume and averaging come through
// here). A file without /optimizer (saved for inference only) gives an empty optimizer map.
Checkpoint read_checkpoint(const File& file, const std::string& kind = "");

// Atomic: creates `path` ("-" for stdout), writes, commits.
void save_checkpoint(const std::string& path, const Checkpoint& ckpt);
Checkpoint load_checkpoint(const std::string& path, const std::string& kind = "");

// Deep copies of the params' values keyed by name (a snapshot: later training steps do not
// change it). Throws ConfigError on an empty or duplicate name.
TensorMap collect_params(const ParamList& params);
// Copies saved[p->name] into every p->value. Every parameter must be present with its shape
// and dtype, and every saved entry must belong to a parameter; otherwise throws FormatError
// (missing or unclaimed names) or ShapeError naming `source` (the file) and the parameter.
void restore_params(const TensorMap& saved, const ParamList& params, const std::string& source);

}  // namespace attn::io

// The files of a training run: where periodic checkpoints go, which ones exist, the newest to
// resume from, rotation (keep the last k) and checkpoint averaging.
//
// A run saving its model as "runs/tf.h5" writes periodic checkpoints next to it as
// "runs/tf.step<step, 9 digits>.h5" ("runs/tf.step000001200.h5"): they sort by name in step
// order, and a glance at the folder tells how far a run got.
//
// Averaging is Vaswani et al. 2017, sec. 6.1: "for the base models, we used a single model
// obtained by averaging the last 5 checkpoints, which were written at 10-minute intervals".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/io/checkpoint.hpp"

namespace attn::train {

// "dir/tf.h5", 1200 -> "dir/tf.step000001200.h5" (a trailing ".h5" of the model is dropped).
std::string checkpoint_path(const std::string& model_path, int64_t step);

struct CheckpointFile {
  int64_t step = 0;
  std::string path;
};
// The periodic checkpoints of `model_path` present on disk, oldest first (by the step in the
// name). Files of other names are ignored.
std::vector<CheckpointFile> list_checkpoints(const std::string& model_path);

// The file to resume a run of `model_path` from: the one with the highest stored step among
// model_path itself (when it exists) and its periodic checkpoints. Throws IoError when there is
// none.
std::string latest_checkpoint(const std::string& model_path);

// Removes the oldest periodic checkpoints of `model_path` so that at most `keep` (>= 1) remain.
// Returns the removed paths.
std::vector<std::string> rotate_checkpoints(const std::string& model_path, int64_t keep);

// The element-wise mean of the parameters of `paths` (accumulated in double, in the order
// given), with kind, config, step, epoch and provenance of the last file and no optimizer
// state. Every file must be a model of the same kind with the same parameter names, shapes and
// dtypes (FormatError / ShapeError naming the file and parameter). int32 parameters must be
// equal in every file. Throws ConfigError on an empty list.
io::Checkpoint average_checkpoints(const std::vector<std::string>& paths);

}  // namespace attn::train

// Checkpoint files of a run: naming, listing, the newest, rotation, averaging (checkpoints.hpp).
#include "attn/train/checkpoints.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string_view>

#include "attn/core/error.hpp"

namespace attn::train {
namespace fs = std::filesystem;

namespace {

// "dir/tf.h5" -> "tf": the name checkpoints of this model start with.
std::string model_stem(const std::string& model_path) {
  std::string name = fs::path(model_path).filename().string();
  if (name.size() > 3 && name.ends_with(".h5")) name.resize(name.size() - 3);
  return name;
}

// The step of "<stem>.step<digits>.h5", or -1 for any other name.
int64_t step_of(const std::string& file_name, const std::string& stem) {
  const std::string prefix = stem + ".step", suffix = ".h5";
  if (file_name.size() <= prefix.size() + suffix.size() || !file_name.starts_with(prefix) ||
      !file_name.ends_with(suffix))
    return -1;
  const std::string_view digits(file_name.data() + prefix.size(),
                                file_name.size() - prefix.size() - suffix.size());
  if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(std::string(digits));
}

}  // namespace

std::string checkpoint_path(const std::string& model_path, int64_t step) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%09lld", static_cast<long long>(step));
  const fs::path dir = fs::path(model_path).parent_path();
  return (dir / (model_stem(model_path) + ".step" + digits + ".h5")).string();
}

std::vector<CheckpointFile> list_checkpoints(const std::string& model_path) {
  const fs::path dir = fs::path(model_path).parent_path();
  const fs::path folder = dir.empty() ? fs::path(".") : dir;
  const std::string stem = model_stem(model_path);
  std::vector<CheckpointFile> out;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const int64_t step = step_of(name, stem);
    if (step >= 0 && it->is_regular_file()) out.push_back({step, (dir / name).string()});
  }
  std::sort(out.begin(), out.end(), [](const CheckpointFile& a, const CheckpointFile& b) {
    return a.step < b.step;
  });
  return out;
}

std::string latest_checkpoint(const std::string& model_path) {
  std::string best;
  int64_t best_step = -1;
  for (const CheckpointFile& c : list_checkpoints(model_path))
    if (c.step > best_step) best_step = c.step, best = c.path;
  std::error_code ec;
  if (fs::is_regular_file(model_path, ec)) {
    const int64_t step = io::File::open_read(model_path).attr_int("/state", "step");
    if (step >= best_step) best = model_path;
  }
  if (best.empty())
    throw IoError("no checkpoint to resume from: neither '" + model_path + "' nor '" +
                  (fs::path(model_path).parent_path() / (model_stem(model_path) + ".step*.h5")).string() +
                  "' exists");
  return best;
}

std::vector<std::string> rotate_checkpoints(const std::string& model_path, int64_t keep) {
  if (keep < 1) throw ConfigError("rotate_checkpoints: keep must be >= 1, got " + std::to_string(keep));
  const std::vector<CheckpointFile> files = list_checkpoints(model_path);
  std::vector<std::string> removed;
  for (size_t i = 0; i + static_cast<size_t>(keep) < files.size(); ++i) {
    std::error_code ec;
    if (fs::remove(files[i].path, ec)) removed.push_back(files[i].path);
  }
  return removed;
}

io::Checkpoint average_checkpoints(const std::vector<std::string>& paths) {
  if (paths.empty()) throw ConfigError("average_checkpoints: no checkpoint given");
  io::Checkpoint first = io::load_checkpoint(paths.front());
  std::map<std::string, std::vector<double>> sums;
  for (const auto& [name, t] : first.params)
    if (t.dtype() == DType::f32) sums[name].assign(t.data(), t.data() + t.numel());

  io::Checkpoint last = first;
  for (size_t k = 1; k < paths.size(); ++k) {
    io::Checkpoint c = io::load_checkpoint(paths[k], first.kind);
    for (const auto& [name, t] : first.params) {
      const auto it = c.params.find(name);
      if (it == c.params.end())
        throw FormatError(paths[k] + ": no parameter '/params/" + name + "' (" + paths.front() +
                          " has it): checkpoints of different models cannot be averaged");
      const Tensor& u = it->second;
      if (u.shape() != t.shape() || u.dtype() != t.dtype())
        throw ShapeError(paths[k] + ": parameter '/params/" + name + "' is " + dtype_name(u.dtype()) + " " +
                         to_string(u.shape()) + ", expected " + dtype_name(t.dtype()) + " " +
                         to_string(t.shape()) + " as in " + paths.front());
      if (t.dtype() == DType::f32) {
        std::vector<double>& acc = sums[name];
        const float* v = u.data();
        for (size_t i = 0; i < acc.size(); ++i) acc[i] += v[i];
      } else if (!std::equal(t.idata(), t.idata() + t.numel(), u.idata())) {
        throw FormatError(paths[k] + ": integer parameter '/params/" + name + "' differs from " +
                          paths.front() + "; it cannot be averaged");
      }
    }
    if (c.params.size() != first.params.size())
      throw FormatError(paths[k] + ": has " + std::to_string(c.params.size()) + " parameters, " +
                        paths.front() + " has " + std::to_string(first.params.size()));
    last = std::move(c);
  }

  io::Checkpoint out = std::move(last);
  out.optimizer.clear();
  const double n = static_cast<double>(paths.size());
  for (auto& [name, t] : out.params) {
    if (t.dtype() != DType::f32) continue;
    Tensor mean(t.shape());
    const std::vector<double>& acc = sums.at(name);
    for (size_t i = 0; i < acc.size(); ++i) mean.data()[i] = static_cast<float>(acc[i] / n);
    t = mean;
  }
  return out;
}

}  // namespace attn::train

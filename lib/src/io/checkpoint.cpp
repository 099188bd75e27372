// Checkpoints as HDF5 files (layout in checkpoint.hpp), written and read through io::File only.
#include "attn/io/checkpoint.hpp"

#include "attn/io/config_reader.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

namespace attn::io {
namespace {

constexpr const char* kModelFormat = "attnlab/model";

// A tensor name such as "encoder/layer0/w_q": non-empty, relative, no empty, "." or ".." part.
void check_name(const std::string& name, const std::string& what) {
  bool ok = !name.empty() && name.front() != '/' && name.back() != '/';
  for (size_t begin = 0; ok && begin <= name.size();) {
    const size_t end = std::min(name.find('/', begin), name.size());
    const std::string part = name.substr(begin, end - begin);
    ok = !part.empty() && part != "." && part != "..";
    begin = end + 1;
  }
  if (!ok)
    throw ConfigError("checkpoint: " + what + " name '" + name +
                      "' is not a relative path like 'encoder/layer0/w_q'");
}

void write_tensors(File& file, const std::string& group, const TensorMap& tensors, const std::string& what) {
  for (const auto& [name, t] : tensors) {
    check_name(name, what);
    file.write(group + "/" + name, t);
  }
}

// Every float value must be finite: a model that diverged, or a damaged file, must not be used or
// trained on as if it had not (DataError naming the file, the tensor and the element).
void check_finite(const File& file, const std::string& dataset, const Tensor& t) {
  if (t.dtype() != DType::f32) return;
  const float* v = t.data();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(v[i]))
      throw DataError(file.display_name() + ": " + (dataset.starts_with("/params/") ? "parameter" : "optimizer state") +
                      " '" + dataset + "' holds " + std::to_string(v[i]) + " at element " + std::to_string(i) +
                      "; a model with non-finite values cannot be used");
}

TensorMap read_tensors(const File& file, const std::string& group) {
  TensorMap out;
  if (!file.is_group(group)) return out;
  for (const auto& name : file.list_datasets(group)) {
    Tensor t = file.read(group + "/" + name);
    check_finite(file, group + "/" + name, t);
    out.emplace(name, std::move(t));
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Config lookups

std::string Checkpoint::config_string(const std::string& key) const { return ConfigReader(config, source).text(key); }
int64_t Checkpoint::config_int(const std::string& key) const { return ConfigReader(config, source).integer(key); }
double Checkpoint::config_double(const std::string& key) const { return ConfigReader(config, source).real(key); }

// ---------------------------------------------------------------------------------------------
// Files

void write_checkpoint(File& file, const Checkpoint& ckpt) {
  write_file_info(file, {kModelFormat, kFormatVersion, ckpt.kind, ckpt.created_by, ckpt.command});
  for (const auto& [key, value] : ckpt.config) file.set_attr("/config", key, value);
  write_tensors(file, "/params", ckpt.params, "parameter");
  write_tensors(file, "/optimizer", ckpt.optimizer, "optimizer state");
  file.set_attr("/state", "step", ckpt.step);
  file.set_attr("/state", "epoch", ckpt.epoch);
  file.set_attr("/state", "rng_seed", ckpt.rng.seed);
  file.set_attr("/state", "rng_counter", ckpt.rng.counter);
}

Checkpoint read_checkpoint(const File& file, const std::string& kind) {
  require_format(file, kModelFormat, kind);
  const FileInfo info = read_file_info(file);
  if (info.format_version < 2)
    throw FormatError(file.display_name() + ": a model of format version " + std::to_string(info.format_version) +
                      ", written before /config took the tools' option names (format 2, docs/FORMATS.md); "
                      "train it again with this version");
  Checkpoint ckpt;
  ckpt.source = file.display_name();
  ckpt.kind = info.kind;
  ckpt.created_by = info.created_by;
  ckpt.command = info.command;
  if (file.exists("/config"))
    for (const auto& key : file.attr_names("/config")) ckpt.config.emplace(key, file.attr("/config", key));
  ckpt.params = read_tensors(file, "/params");
  ckpt.optimizer = read_tensors(file, "/optimizer");
  ckpt.step = file.attr_int("/state", "step");
  ckpt.epoch = file.attr_int("/state", "epoch");
  ckpt.rng.seed = file.attr_uint("/state", "rng_seed");
  ckpt.rng.counter = file.attr_uint("/state", "rng_counter");
  return ckpt;
}

void save_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  File file = File::create(path);
  write_checkpoint(file, ckpt);
  file.commit();
}

Checkpoint load_checkpoint(const std::string& path, const std::string& kind) {
  return read_checkpoint(File::open_read(path), kind);
}

// ---------------------------------------------------------------------------------------------
// Parameters

TensorMap collect_params(const ParamList& params) {
  TensorMap out;
  for (const Param* p : params) {
    check_name(p->name, "parameter");
    if (!out.emplace(p->name, p->value.clone()).second)
      throw ConfigError("checkpoint: two parameters are named '" + p->name + "'");
  }
  return out;
}

void restore_params(const TensorMap& saved, const ParamList& params, const std::string& source) {
  std::set<std::string> claimed;
  for (Param* p : params) {
    const auto it = saved.find(p->name);
    if (it == saved.end())
      throw FormatError(source + ": no parameter '" + p->name + "' in /params (the model has it; " +
                        "was the file saved by another model or configuration?)");
    const Tensor& t = it->second;
    const std::string what = source + ": parameter '/params/" + p->name + "'";
    if (t.dtype() != p->value.dtype())
      throw ShapeError(what + " holds " + dtype_name(t.dtype()) + " values, expected " +
                       dtype_name(p->value.dtype()));
    if (t.shape() != p->value.shape())
      throw ShapeError(what + " has shape " + to_string(t.shape()) + ", expected " +
                       to_string(p->value.shape()) + " (was the file saved with another configuration?)");
    claimed.insert(p->name);
  }
  std::vector<std::string> unclaimed;
  for (const auto& [name, t] : saved)
    if (!claimed.count(name)) unclaimed.push_back("'" + name + "'");
  if (!unclaimed.empty()) {
    std::string list;
    for (size_t i = 0; i < unclaimed.size() && i < 12; ++i) list += (i ? ", " : "") + unclaimed[i];
    if (unclaimed.size() > 12) list += ", ...";
    throw FormatError(source + ": the file has parameters the model does not: " + list +
                      " (was the file saved by another model or configuration?)");
  }
  // Copy only once everything matched, so a failed restore leaves the model untouched.
  for (Param* p : params) p->value.copy_from(saved.at(p->name));
}

}  // namespace attn::io

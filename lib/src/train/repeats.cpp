// Repeated runs, the best by validation kept (repeats.hpp).
#include "attn/train/repeats.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "attn/core/error.hpp"
#include "attn/core/median.hpp"
#include "attn/core/tensor.hpp"
#include "attn/io/hdf5_file.hpp"

namespace attn::train {
namespace {

std::string beside(const std::string& model, const std::string& tag) {
  const std::filesystem::path p(model);
  return (p.parent_path() / (p.stem().string() + "." + tag + p.extension().string())).string();
}

double final_value(const io::File& file, const std::string& curve) {
  if (!file.is_dataset("/metrics/" + curve)) return NAN;
  const Tensor t = file.read("/metrics/" + curve);
  return t.numel() > 0 ? t.at(t.numel() - 1) : NAN;
}

// a before b: a number before NaN, then the smaller.
bool less(double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); }

Tensor column(std::span<const RepeatRun> runs, auto value) {
  std::vector<float> v;
  for (const RepeatRun& r : runs) v.push_back(static_cast<float>(value(r)));
  return Tensor::from({static_cast<int64_t>(v.size())}, v);
}

}  // namespace

std::string repeat_run_path(const std::string& model, int64_t k) { return beside(model, "run" + std::to_string(k)); }
std::string repeats_summary_path(const std::string& model) { return beside(model, "repeats"); }

void read_final_scores(RepeatRun& run, const std::string& metric) {
  const io::File f = io::File::open_read(run.path);
  run.valid_metric = final_value(f, "valid_" + metric);
  run.valid_loss = final_value(f, "valid_loss");
  if (std::isnan(run.valid_metric) && std::isnan(run.valid_loss)) {
    run.valid_metric = final_value(f, "train_" + metric);
    run.valid_loss = final_value(f, "train_loss");
  }
}

size_t best_run(std::span<const RepeatRun> runs) {
  size_t kept = 0;
  for (size_t k = 1; k < runs.size(); ++k) {
    const RepeatRun &r = runs[k], &b = runs[kept];
    if (less(r.valid_metric, b.valid_metric) ||
        (!less(b.valid_metric, r.valid_metric) && less(r.valid_loss, b.valid_loss)))
      kept = k;
  }
  return kept;
}

std::vector<ScoreSpread> test_spreads(std::span<const RepeatRun> runs, size_t kept) {
  std::vector<ScoreSpread> out;
  for (size_t s = 0; s < runs[kept].test.size(); ++s) {
    std::vector<double> all;
    for (const RepeatRun& r : runs) all.push_back(r.test[s].second);
    const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
    out.push_back({runs[kept].test[s].first, runs[kept].test[s].second, median(all), *lo, *hi});
  }
  return out;
}

void keep_best(std::span<const RepeatRun> runs, size_t kept, const std::string& metric, const std::string& model,
               const std::string& created_by) {
  io::copy_file_atomically(runs[kept].path, model);

  io::File f = io::File::create(repeats_summary_path(model));
  f.set_attr("/", "format", "attnlab/output");
  f.set_attr("/", "kind", "repeats");
  f.set_attr("/", "created_by", created_by);
  f.set_attr("/", "selected_by", "valid_" + metric);
  f.set_attr("/", "kept_run", static_cast<int64_t>(kept + 1));
  std::vector<int32_t> seeds;
  for (const RepeatRun& r : runs) seeds.push_back(static_cast<int32_t>(r.seed));
  f.write("/seed", Tensor::from_ints({static_cast<int64_t>(runs.size())}, seeds));
  f.write("/valid_" + metric, column(runs, [](const RepeatRun& r) { return r.valid_metric; }));
  if (metric != "loss") f.write("/valid_loss", column(runs, [](const RepeatRun& r) { return r.valid_loss; }));
  for (size_t s = 0; s < runs[0].test.size(); ++s)
    f.write("/" + runs[0].test[s].first, column(runs, [s](const RepeatRun& r) { return r.test[s].second; }));
  for (const ScoreSpread& spread : test_spreads(runs, kept)) {
    f.set_attr("/", spread.name + "_kept", spread.kept);
    f.set_attr("/", spread.name + "_median", spread.median);
  }
  f.commit();
}

}  // namespace attn::train

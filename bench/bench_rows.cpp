// Reading a training batch's rows (data/rows.hpp): rows gathered from memory against the same
// rows read from the HDF5 file (`--keep-data file`), for scattered batches as a shuffled epoch
// draws them. The numbers behind docs/ARCHITECTURE.md ("Chunks of about 16 KiB") and
// data/rows.hpp: what keeping the data in the file costs a step.
//
// Data sets, written once per process into a temporary folder as the tools write them (io::File:
// ~16 KiB chunks, shuffle + deflate, a Fletcher-32 checksum per chunk):
//   tokens  int32 [200000, 40]: sentence-like rows of ids below 1000, 10-40 long, 0 after
//   images  float32 [20000, 1, 32, 160]: MNIST-strip-sized images, mostly 0 (compressible)
// Arguments: which (0 tokens, 1 images), where (0 memory, 1 file), B (rows per batch).
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "attn/core/rng.hpp"
#include "attn/data/rows.hpp"
#include "attn/io/hdf5_file.hpp"

namespace {

using attn::DType;
using attn::Tensor;

struct DataFile {
  std::string path;
  Tensor tokens, images;

  DataFile() {
    attn::Rng rng(1);
    tokens = Tensor({200000, 40}, DType::i32);
    for (int64_t i = 0; i < tokens.dim(0); ++i) {
      const int64_t len = 10 + rng.uniform_int(31);
      for (int64_t t = 0; t < len; ++t) tokens.idata()[i * 40 + t] = static_cast<int32_t>(4 + rng.uniform_int(996));
    }
    images = Tensor({20000, 1, 32, 160});
    for (int64_t i = 0; i < images.dim(0); ++i)   // a few strokes of ink per image
      for (int k = 0; k < 600; ++k) images.at(i * 5120 + rng.uniform_int(5120)) = rng.uniform(0.2f, 1.0f);
    path = (std::filesystem::temp_directory_path() / ("bench_rows." + std::to_string(::getpid()) + ".h5")).string();
    attn::io::File f = attn::io::File::create(path);
    f.write("/tokens", tokens);
    f.write("/images", images);
    f.commit();
  }
  ~DataFile() { std::filesystem::remove(path); }
};

const DataFile& data_file() {
  static const DataFile d;
  return d;
}

void BM_rows_gather(benchmark::State& state) {
  const bool images = state.range(0) == 1, in_file = state.range(1) == 1;
  const int64_t B = state.range(2);
  const DataFile& d = data_file();
  const attn::io::File file = attn::io::File::open_read(d.path);
  const std::string name = images ? "/images" : "/tokens";
  const DType dtype = images ? DType::f32 : DType::i32;
  const attn::data::Rows rows = in_file ? attn::data::Rows(file, name, dtype)
                                        : attn::data::Rows(images ? d.images : d.tokens);
  attn::Rng rng(2);
  std::vector<int64_t> index(static_cast<size_t>(B));
  for (auto _ : state) {
    for (auto& i : index) i = rng.uniform_int(rows.size());
    benchmark::DoNotOptimize(rows.gather(index));
  }
  state.SetLabel(std::string(images ? "images" : "tokens") + (in_file ? " from the file" : " from memory"));
}

}  // namespace

BENCHMARK(BM_rows_gather)
    ->ArgNames({"images", "file", "B"})
    ->Args({0, 0, 300})
    ->Args({0, 1, 300})
    ->Args({1, 0, 32})
    ->Args({1, 1, 32})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();

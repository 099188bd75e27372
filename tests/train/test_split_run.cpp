// run_split: per-batch outputs go back to split order, padded to the largest batch, sums added
// (on several ranks: tests/dist); the eval verbs' readers open a large split in the file.
#include "attn/train/split_run.hpp"

#include "attn/core/memory.hpp"
#include "attn/data/sequence_data.hpp"
#include "attn/families/ntm/model.hpp"
#include "attn/families/ntm/run.hpp"
#include "attn/io/hdf5_file.hpp"
#include "test_support.hpp"

using namespace attn;

TEST_CASE("split_batches: consecutive runs, or token-budget batches in length order", "[unit][split_run]") {
  const std::vector<int32_t> lengths{3, 1, 2, 2, 1};
  CHECK(train::split_batches(lengths, 0, 2) == std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}, {4}});
  // Budget 4: [1, 1] (lengths 1), [2, 2], [3].
  CHECK(train::split_batches(lengths, 4) == std::vector<std::vector<int64_t>>{{1, 4}, {2, 3}, {0}});
}

TEST_CASE("run_split puts every output row back in split order, zero-padded to the largest batch", "[unit][split_run]") {
  // Example i of a batch yields: a scalar i; a [T, 2] matrix of i's with T = the batch's own
  // length (1 + its first index); a [T, 1, B] block with B = batch size.
  const std::vector<std::vector<int64_t>> batches{{3, 0}, {2}, {1, 4}};
  const auto out = train::run_split(5, batches, [](std::span<const int64_t> index) {
    const auto B = static_cast<int64_t>(index.size());
    const int64_t T = 1 + index[0];
    Tensor scalar({B}), mat({B, T, 2}), block({B, T, 1, B});
    for (int64_t b = 0; b < B; ++b) {
      scalar.at(b) = static_cast<float>(index[static_cast<size_t>(b)]);
      for (int64_t i = 0; i < T * 2; ++i) mat.at(b * T * 2 + i) = static_cast<float>(index[static_cast<size_t>(b)]);
      for (int64_t i = 0; i < T * B; ++i) block.at(b * T * B + i) = 1.0f + static_cast<float>(index[static_cast<size_t>(b)]);
    }
    Tensor ids({B}, DType::i32);
    for (int64_t b = 0; b < B; ++b) ids.idata()[b] = static_cast<int32_t>(100 + index[static_cast<size_t>(b)]);
    return train::BatchOutput{.tensors = {{"scalar", scalar}, {"mat", mat}, {"block", block}, {"ids", ids}},
                              .sums = {static_cast<double>(B), 0.5 * static_cast<double>(index[0])}};
  });
  REQUIRE(out.tensors.size() == 4);
  CHECK(out.tensors[0].first == "scalar");
  CHECK(out.tensors[0].second.shape() == Shape{5});
  for (int64_t i = 0; i < 5; ++i) CHECK(out.tensors[0].second.at(i) == static_cast<float>(i));
  const Tensor& ids = out.at("ids");   // int32 outputs keep their type
  REQUIRE(ids.dtype() == DType::i32);
  for (int64_t i = 0; i < 5; ++i) CHECK(ids.idata()[i] == 100 + i);
  CHECK(out.sums == std::vector<double>{5.0, 0.5 * (3 + 2 + 1)});   // summed over the batches
  const Tensor& mat = out.tensors[1].second;
  REQUIRE(mat.shape() == Shape{5, 4, 2});   // the longest batch: T = 4 (batch {3, 0})
  CHECK(mat.at((2 * 4 + 2) * 2) == 2.0f);   // example 2 (batch {2}, T = 3): rows 0..2 hold 2
  CHECK(mat.at((2 * 4 + 3) * 2) == 0.0f);   // ...and row 3 is padding
  CHECK(mat.at((4 * 4 + 1) * 2 + 1) == 4.0f);   // example 4 (batch {1, 4}, T = 2): row 1
  CHECK(mat.at((4 * 4 + 2) * 2) == 0.0f);
  const Tensor& block = out.tensors[2].second;
  REQUIRE(block.shape() == Shape{5, 4, 1, 2});
  CHECK(block.at(((2 * 4 + 0) * 1 + 0) * 2 + 0) == 3.0f);   // example 2: B = 1, column 0 holds 1 + 2
  CHECK(block.at(((2 * 4 + 0) * 1 + 0) * 2 + 1) == 0.0f);   // column 1 is padding
  CHECK(block.at(((0 * 4 + 3) * 1 + 0) * 2 + 1) == 1.0f);   // example 0: T = 4, B = 2

  REQUIRE_THROWS_AS(train::run_split(2, {{0, 1}}, [](std::span<const int64_t>) {
                      return train::BatchOutput{.tensors = {{"bad", Tensor({3, 2})}}, .sums = {}};
                    }),
                    ShapeError);
  CHECK_THROWS_AS(out.at("absent"), ConfigError);
}

TEST_CASE("the eval readers leave a split over a 16th of the memory budget in the file, to the in-memory results",
          "[unit][split_run]") {
  test::TempDir dir;
  Rng rng(3);
  constexpr int64_t kN = 40, kTin = 6, kTout = 4, kIn = 5, kOut = 4;
  Tensor inputs({kN, kTin, kIn}), targets({kN, kTout, kOut}), in_len({kN}, DType::i32), out_len({kN}, DType::i32);
  for (int64_t i = 0; i < kN; ++i) {
    in_len.idata()[i] = static_cast<int32_t>(1 + i % kTin);
    out_len.idata()[i] = static_cast<int32_t>(1 + i % kTout);
    for (int64_t t = 0; t < in_len.idata()[i]; ++t)
      for (int64_t c = 0; c < kIn; ++c) inputs.at((i * kTin + t) * kIn + c) = rng.uniform(0.0f, 1.0f) < 0.5f ? 0.0f : 1.0f;
    for (int64_t t = 0; t < out_len.idata()[i]; ++t)
      for (int64_t c = 0; c < kOut; ++c) targets.at((i * kTout + t) * kOut + c) = rng.uniform(0.0f, 1.0f) < 0.5f ? 0.0f : 1.0f;
  }
  {
    io::File f = io::File::create(dir.file("seq.h5"));
    data::write_sequence_split(f, "test", {inputs, in_len, targets, out_len});
    f.commit();
  }
  ntm::NtmConfig c;
  c.input_size = kIn, c.output_size = kOut, c.controller_size = 8, c.memory_rows = 8, c.memory_width = 4;
  Rng init(1);
  const ntm::Ntm model(c, init);
  const io::File data = io::File::open_read(dir.file("seq.h5"));
  const data::SequenceSplit memory = ntm::read_ntm_split(data, "test", c);
  set_memory_budget(64 * 1024);   // the split's 7.5 KiB of rows are over a 16th of it
  const data::SequenceSplit in_file = ntm::read_ntm_split(data, "test", c);
  set_memory_budget(0);
  REQUIRE_FALSE(memory.inputs.in_file());
  REQUIRE(in_file.inputs.in_file());
  const train::BatchStats a = ntm::evaluate_ntm(model, memory, 7), b = ntm::evaluate_ntm(model, in_file, 7);
  CHECK(a.loss_sum == b.loss_sum);
  CHECK(a.count == b.count);
  CHECK(a.sums == b.sums);
}

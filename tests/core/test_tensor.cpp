#include "attn/core/tensor.hpp"

#include "test_support.hpp"

using namespace attn;

TEST_CASE("tensor: shape, zero fill and element access", "[unit][tensor]") {
  Tensor t({2, 3});
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.numel() == 6);
  CHECK(t.rank() == 2);
  CHECK(t.dim(-1) == 3);
  for (int64_t i = 0; i < 6; ++i) CHECK(t.at(i) == 0.0f);
  Tensor ids = Tensor::from_ints({3}, {4, 5, 6});
  CHECK(ids.dtype() == DType::i32);
  CHECK(ids.idata()[2] == 6);
  REQUIRE_THROWS_WITH(ids.data(), Catch::Contains("int32, expected float32"));
}

TEST_CASE("tensor: uninitialized has the asked shape and dtype, and the constructor still zero-fills",
          "[unit][tensor]") {
  const Shape big{256, 128};   // 128 KiB: a block the allocator recycles
  {
    Tensor used = Tensor::uninitialized(big);
    CHECK(used.shape() == big);
    CHECK(used.dtype() == DType::f32);
    used.fill(7.0f);   // writable in full; its block goes back to the cache below
  }
  Tensor ids = Tensor::uninitialized({4}, DType::i32);
  CHECK(ids.dtype() == DType::i32);
  CHECK(ids.numel() == 4);
  const Tensor fresh(big);   // may reuse the block filled with 7s: must read as zeros
  bool all_zero = true;
  for (int64_t i = 0; i < fresh.numel(); ++i) all_zero = all_zero && fresh.at(i) == 0.0f;
  CHECK(all_zero);
  REQUIRE_THROWS_WITH(Tensor::uninitialized({2, -2}), Catch::Contains("cannot make a tensor of shape [2, -2]"));
}

TEST_CASE("tensor: views share storage and address whole rows", "[unit][tensor]") {
  Tensor t = Tensor::from({3, 2}, {0, 1, 2, 3, 4, 5});
  Tensor mid = t.rows(1, 3);
  CHECK(mid.shape() == Shape{2, 2});
  CHECK(mid.at(0) == 2.0f);
  mid.at(0) = 20.0f;
  CHECK(t.at(2) == 20.0f);
  Tensor row = t[2];
  CHECK(row.shape() == Shape{2});
  CHECK(row.at(1) == 5.0f);
  Tensor flat = t.reshape({kAny});
  CHECK(flat.shape() == Shape{6});
  CHECK(flat.shares_storage_with(t));
  Tensor copy = t.clone();
  copy.at(0) = 99.0f;
  CHECK(t.at(0) == 0.0f);
}

TEST_CASE("tensor: bad shapes throw with both shapes in the message", "[unit][tensor]") {
  Tensor t({2, 3});
  REQUIRE_THROWS_WITH(t.reshape({4, 2}), Catch::Contains("cannot reshape [2, 3] to [4, 2]"));
  REQUIRE_THROWS_WITH(t.rows(1, 3), Catch::Contains("out of range for shape [2, 3]"));
  REQUIRE_THROWS_AS(t[5], ShapeError);
  REQUIRE_THROWS_WITH(check_shape(t.shape(), {2, kAny, 4}, "attention: keys [B, S, D]"),
                      Catch::Equals("attention: keys [B, S, D] has shape [2, 3], expected [2, *, 4]"));
  REQUIRE_THROWS_WITH(check_tensor(t, {2, 3}, "ids [B, T]", DType::i32),
                      Catch::Contains("ids [B, T] has dtype float32, expected int32"));
  REQUIRE_THROWS_WITH(Tensor::from({2, 2}, {1, 2, 3}), Catch::Contains("3 values for shape [2, 2]"));
}

#include "attn/ops/shape_ops.hpp"

#include "test_support.hpp"

using namespace attn;

namespace {

// The naive twin of permute: every output element located by its multi-index.
Tensor naive_permute(const Tensor& x, const std::vector<int>& perm) {
  const int r = x.rank();
  Shape ys(r);
  for (int i = 0; i < r; ++i) ys[i] = x.shape()[perm[i]];
  std::vector<int64_t> xstride(r);
  for (int d = r - 1, s = 1; d >= 0; --d) { xstride[d] = s; s *= static_cast<int>(x.shape()[d]); }
  Tensor y(ys);
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t rest = i, src = 0;
    for (int d = r - 1; d >= 0; --d) {
      src += (rest % ys[d]) * xstride[perm[d]];
      rest /= ys[d];
    }
    y.at(i) = x.at(src);
  }
  return y;
}

}  // namespace

TEST_CASE("concat joins along any axis, by hand", "[unit][shape_ops]") {
  const Tensor a = Tensor::from({2, 2}, {1, 2, 3, 4}), b = Tensor::from({2, 1}, {5, 6});
  CHECK_THAT(ops::concat_forward({a, b}, 1, nullptr),
             test::close_to(Tensor::from({2, 3}, {1, 2, 5, 3, 4, 6}), 0));
  CHECK_THAT(ops::concat_forward({a, b}, -1, nullptr),
             test::close_to(Tensor::from({2, 3}, {1, 2, 5, 3, 4, 6}), 0));
  const Tensor c = Tensor::from({1, 2}, {7, 8});
  CHECK_THAT(ops::concat_forward({a, c}, 0, nullptr),
             test::close_to(Tensor::from({3, 2}, {1, 2, 3, 4, 7, 8}), 0));
  // Token ids concatenate too: [BOS] + sequence.
  const Tensor ids = ops::concat_forward({Tensor::from_ints({2, 1}, {1, 1}),
                                          Tensor::from_ints({2, 2}, {5, 6, 7, 8})}, 1, nullptr);
  CHECK(ids.dtype() == DType::i32);
  CHECK(std::vector<int32_t>(ids.idata(), ids.idata() + 6) == std::vector<int32_t>{1, 5, 6, 1, 7, 8});
}

TEST_CASE("concat_backward matches finite differences for every input", "[gradcheck][shape_ops]") {
  Rng rng(7);
  Tensor x0 = randn({2, 1, 3}, rng), x1 = randn({2, 3, 3}, rng), x2 = randn({2, 2, 3}, rng);
  const Tensor r = randn({2, 6, 3}, rng);
  auto loss = [&] { return test::dot(r, ops::concat_forward({x0, x1, x2}, 1, nullptr)); };
  ops::ConcatCache cache;
  ops::concat_forward({x0, x1, x2}, 1, &cache);
  const std::vector<Tensor> dxs = ops::concat_backward(r, cache);
  REQUIRE(dxs.size() == 3);
  CHECK_THAT(dxs[0], test::close_to(test::numeric_grad(loss, x0), 1e-2));
  CHECK_THAT(dxs[1], test::close_to(test::numeric_grad(loss, x1), 1e-2));
  CHECK_THAT(dxs[2], test::close_to(test::numeric_grad(loss, x2), 1e-2));
}

TEST_CASE("slice copies [begin, end) along an axis, by hand", "[unit][shape_ops]") {
  const Tensor x = Tensor::from({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  CHECK_THAT(ops::slice_forward(x, 1, 1, 3, nullptr), test::close_to(Tensor::from({2, 2}, {1, 2, 5, 6}), 0));
  CHECK_THAT(ops::slice_forward(x, 0, 1, 2, nullptr), test::close_to(Tensor::from({1, 4}, {4, 5, 6, 7}), 0));
  CHECK(ops::slice_forward(x, -1, 2, 2, nullptr).shape() == Shape{2, 0});
  // Teacher forcing: inputs ids[:, :-1].
  const Tensor ids = ops::slice_forward(Tensor::from_ints({1, 4}, {1, 9, 8, 2}), 1, 0, 3, nullptr);
  CHECK(std::vector<int32_t>(ids.idata(), ids.idata() + 3) == std::vector<int32_t>{1, 9, 8});
  ops::SliceCache cache;
  const Tensor y = ops::slice_forward(x, 1, 1, 3, &cache);
  CHECK_THAT(ops::slice_backward(Tensor::from({2, 2}, {1, 2, 3, 4}), cache),
             test::close_to(Tensor::from({2, 4}, {0, 1, 2, 0, 0, 3, 4, 0}), 0));
}

TEST_CASE("slice_backward matches finite differences", "[gradcheck][shape_ops]") {
  Rng rng(9);
  Tensor x = randn({2, 5, 3}, rng);
  const Tensor r = randn({2, 2, 3}, rng);
  auto loss = [&] { return test::dot(r, ops::slice_forward(x, 1, 2, 4, nullptr)); };
  ops::SliceCache cache;
  ops::slice_forward(x, 1, 2, 4, &cache);
  CHECK_THAT(ops::slice_backward(r, cache), test::close_to(test::numeric_grad(loss, x), 1e-2));
}

TEST_CASE("permute and transpose by hand and against the naive loop", "[unit][shape_ops]") {
  const Tensor x = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THAT(ops::transpose_forward(x, 0, 1, nullptr),
             test::close_to(Tensor::from({3, 2}, {1, 4, 2, 5, 3, 6}), 0));
  Rng rng(17);
  // Each kernel: runs (inner axis kept), tiles (last two swap), strided gather (neither),
  // on small and threaded sizes.
  const std::pair<Shape, std::vector<int>> cases[] = {
      {{2, 3, 4, 5}, {0, 2, 1, 3}},     {{2, 3, 4}, {0, 2, 1}},   {{3, 4, 5}, {2, 1, 0}},
      {{3, 4, 5}, {1, 2, 0}},           {{2, 1, 3}, {2, 1, 0}},   {{4, 3, 8, 16}, {0, 2, 1, 3}},
      {{3, 70, 90}, {0, 2, 1}},         {{33, 40, 30}, {2, 0, 1}}, {{40, 30, 33}, {2, 1, 0}},
      {{2, 3}, {0, 1}}};
  for (const auto& [shape, perm] : cases) {
    INFO(to_string(shape));
    const Tensor v = randn(shape, rng);
    CHECK_THAT(ops::permute_forward(v, perm, nullptr), test::close_to(naive_permute(v, perm), 0));
  }
  const Tensor ids = ops::permute_forward(Tensor::from_ints({2, 2}, {1, 2, 3, 4}), {1, 0}, nullptr);
  CHECK(std::vector<int32_t>(ids.idata(), ids.idata() + 4) == std::vector<int32_t>{1, 3, 2, 4});
}

TEST_CASE("permute_backward and transpose_backward match finite differences", "[gradcheck][shape_ops]") {
  Rng rng(5);
  Tensor x = randn({2, 3, 4}, rng);
  for (const std::vector<int>& perm : {std::vector<int>{2, 0, 1}, {1, 0, 2}, {0, -1, 1}}) {
    ops::PermuteCache cache;
    const Tensor y = ops::permute_forward(x, perm, &cache);
    const Tensor r = randn(y.shape(), rng);
    auto loss = [&] { return test::dot(r, ops::permute_forward(x, perm, nullptr)); };
    CHECK_THAT(ops::permute_backward(r, cache), test::close_to(test::numeric_grad(loss, x), 1e-2));
  }
  ops::PermuteCache cache;
  const Tensor y = ops::transpose_forward(x, 0, -1, &cache);
  CHECK(y.shape() == Shape{4, 3, 2});
  const Tensor r = randn(y.shape(), rng);
  auto loss = [&] { return test::dot(r, ops::transpose_forward(x, 0, -1, nullptr)); };
  CHECK_THAT(ops::transpose_backward(r, cache), test::close_to(test::numeric_grad(loss, x), 1e-2));
}

TEST_CASE("reshape is a view and its backward reshapes back", "[gradcheck][shape_ops]") {
  Rng rng(2);
  Tensor x = randn({2, 6}, rng);
  ops::ReshapeCache cache;
  const Tensor y = ops::reshape_forward(x, {3, kAny}, &cache);
  CHECK(y.shape() == Shape{3, 4});
  CHECK(y.shares_storage_with(x));
  const Tensor r = randn({3, 4}, rng);
  auto loss = [&] { return test::dot(r, ops::reshape_forward(x, {3, 4}, nullptr)); };
  const Tensor dx = ops::reshape_backward(r, cache);
  CHECK(dx.shape() == Shape{2, 6});
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
}

TEST_CASE("shape ops: bad arguments are named in the message", "[unit][shape_ops]") {
  const Tensor a({2, 3}), b({3, 3});
  REQUIRE_THROWS_WITH(ops::concat_forward({a, b}, 1, nullptr),
                      Catch::Equals("concat: input 1 (along axis 1) has shape [3, 3], expected [2, *]"));
  REQUIRE_THROWS_WITH(ops::concat_forward({a, Tensor({2, 3}, DType::i32)}, 0, nullptr),
                      Catch::Contains("input 1 (along axis 0) has dtype int32, expected float32"));
  REQUIRE_THROWS_WITH(ops::concat_forward({a}, 2, nullptr),
                      Catch::Equals("concat: axis 2 is out of range for shape [2, 3]"));
  REQUIRE_THROWS_WITH(ops::concat_forward({}, 0, nullptr), Catch::Equals("concat: no input tensors"));
  REQUIRE_THROWS_WITH(ops::slice_forward(a, 1, 2, 4, nullptr),
                      Catch::Equals("slice: range [2, 4) is out of bounds for axis 1 of size 3 "
                                    "(x has shape [2, 3])"));
  REQUIRE_THROWS_WITH(ops::permute_forward(a, {1, 1}, nullptr),
                      Catch::Equals("permute: perm {1, 1} repeats axis 1; it must list every axis "
                                    "of x (shape [2, 3]) once"));
  REQUIRE_THROWS_WITH(ops::permute_forward(a, {0}, nullptr),
                      Catch::Contains("perm has 1 entries for x of shape [2, 3] (rank 2)"));
  REQUIRE_THROWS_WITH(ops::reshape_forward(a, {4, 2}, nullptr),
                      Catch::Equals("reshape: cannot reshape [2, 3] to [4, 2]"));
  ops::SliceCache cache;
  ops::slice_forward(a, 1, 0, 2, &cache);
  REQUIRE_THROWS_WITH(ops::slice_backward(Tensor({3, 2}), cache),
                      Catch::Contains("slice_backward: dy has shape [3, 2], expected [2, *]"));
}

#include "attn/ops/embedding.hpp"

#include "test_support.hpp"

using namespace attn;

TEST_CASE("embedding_forward gathers rows by hand", "[unit][embedding]") {
  const Tensor table = Tensor::from({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});   // [V = 4, E = 2]
  const Tensor ids = Tensor::from_ints({2, 2}, {3, 0, 1, 3});
  const Tensor y = ops::embedding_forward(ids, table, nullptr);
  CHECK(y.shape() == Shape{2, 2, 2});
  CHECK_THAT(y, test::close_to(Tensor::from({2, 2, 2}, {30, 31, 0, 1, 10, 11, 30, 31}), 0));
}

TEST_CASE("embedding_backward matches finite differences", "[gradcheck][embedding]") {
  Rng rng(7);
  Tensor table = randn({5, 3}, rng);
  const Tensor ids = Tensor::from_ints({2, 3}, {1, 4, 1, 0, 1, 2});   // id 1 repeats, 3 unused
  const Tensor r = randn({2, 3, 3}, rng);
  auto loss = [&] { return test::dot(r, ops::embedding_forward(ids, table, nullptr)); };
  ops::EmbeddingCache cache;
  ops::embedding_forward(ids, table, &cache);
  Tensor dtable = zeros_like(table);
  ops::embedding_backward(r, cache, dtable);
  CHECK_THAT(dtable, test::close_to(test::numeric_grad(loss, table), 1e-2));
}

TEST_CASE("embedding_backward accumulates and skips the padding id", "[unit][embedding]") {
  const Tensor table({3, 2});
  const Tensor ids = Tensor::from_ints({4}, {0, 2, 0, 1});
  ops::EmbeddingCache cache;
  ops::embedding_forward(ids, table, &cache, /*padding_id=*/0);
  const Tensor dy = Tensor::from({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor dtable = Tensor::full({3, 2}, 1.0f);
  ops::embedding_backward(dy, cache, dtable);
  // Row 0 (padding) keeps its 1s; rows 1 and 2 add dy's rows 3 and 1.
  CHECK_THAT(dtable, test::close_to(Tensor::from({3, 2}, {1, 1, 8, 9, 4, 5}), 0));
}

TEST_CASE("embedding_backward on the threaded path equals the sequential scatter", "[unit][embedding]") {
  Rng rng(3);
  const int64_t V = 50, E = 200, n = 400;   // n * E above the threading threshold, E in 4 blocks
  std::vector<int32_t> idv(n);
  for (auto& id : idv) id = static_cast<int32_t>(rng.uniform_int(V));
  const Tensor ids = Tensor::from_ints({n}, idv), table = randn({V, E}, rng), dy = randn({n, E}, rng);
  ops::EmbeddingCache cache;
  const Tensor y = ops::embedding_forward(ids, table, &cache);
  CHECK_THAT(y[n - 1], test::close_to(table[idv[n - 1]], 0));
  Tensor dtable({V, E});
  ops::embedding_backward(dy, cache, dtable);
  Tensor want({V, E});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < E; ++j) want.at(idv[i] * E + j) += dy.at(i * E + j);
  CHECK_THAT(dtable, test::close_to(want, 0));   // same order of additions: bit-identical
}

TEST_CASE("embedding: bad ids name the id, its position and V", "[unit][embedding]") {
  const Tensor table({4, 2});
  REQUIRE_THROWS_AS(ops::embedding_forward(Tensor::from_ints({2, 2}, {0, 1, 7, 2}), table, nullptr),
                    DataError);
  REQUIRE_THROWS_WITH(ops::embedding_forward(Tensor::from_ints({2, 2}, {0, 1, 7, 2}), table, nullptr),
                      Catch::Equals("embedding: id 7 at position [1, 0] of ids [2, 2] is out of "
                                    "range [0, V = 4)"));
  REQUIRE_THROWS_WITH(ops::embedding_forward(Tensor::from_ints({3}, {0, -1, 2}), table, nullptr),
                      Catch::Contains("id -1 at position [1] of ids [3]"));
  REQUIRE_THROWS_WITH(ops::embedding_forward(Tensor({3}), table, nullptr),
                      Catch::Contains("embedding: ids [...] has dtype float32, expected int32"));
  REQUIRE_THROWS_AS(ops::embedding_forward(Tensor::from_ints({1}, {0}), table, nullptr, 4), ConfigError);
  ops::EmbeddingCache cache;
  ops::embedding_forward(Tensor::from_ints({3}, {0, 1, 2}), table, &cache);
  Tensor dtable({4, 2});
  REQUIRE_THROWS_WITH(ops::embedding_backward(Tensor({3, 3}), cache, dtable),
                      Catch::Equals("embedding_backward: dy [..., E] has shape [3, 3], expected [3, 2]"));
}

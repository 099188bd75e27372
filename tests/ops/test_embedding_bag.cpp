// Embedding bags: bags by hand, a naive-loop reference for every kind of weight at every width
// (the register kernels up to E = 67, the block-by-block ones beyond, 64-column units from
// E = 128), finite-difference gradients, padding, empty and absent bags, the same bits on one
// thread and on two, the one-bag row sums, bad inputs.
#include "attn/ops/embedding_bag.hpp"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;

namespace {

// The bags of a test: ids [N, W] with bag n's length lengths[n] (-1: absent) and ids beyond it
// left at the padding id 0.
struct Bags {
  Tensor ids, lengths;
};

Bags random_bags(int64_t N, int64_t W, int64_t V, Rng& rng, bool absent = true) {
  Bags b{Tensor({N, W}, DType::i32), Tensor({N}, DType::i32)};
  for (int64_t n = 0; n < N; ++n) {
    const int64_t J = absent && n % 5 == 3 ? -1 : rng.uniform_int(W + 1);   // 0 .. W ids, or absent
    b.lengths.idata()[n] = static_cast<int32_t>(J);
    for (int64_t j = 0; j < std::max<int64_t>(J, 0); ++j)
      b.ids.idata()[n * W + j] = static_cast<int32_t>(1 + rng.uniform_int(V - 1));
  }
  return b;
}

// The op takes its tables by pointer: these point at a list's tensors (the list outlives the call).
std::vector<const Tensor*> in(const std::vector<Tensor>& tables) {
  std::vector<const Tensor*> out;
  for (const Tensor& t : tables) out.push_back(&t);
  return out;
}
std::vector<Tensor*> out(std::vector<Tensor>& grads) {
  std::vector<Tensor*> out;
  for (Tensor& t : grads) out.push_back(&t);
  return out;
}

// Position weights [W + 1, W, E] of random values.
Tensor random_positions(int64_t W, int64_t E, Rng& rng) { return randn({W + 1, W, E}, rng); }

// y[t, n] by the definition, element by element in the op's order (the start row, then the ids
// in bag order, each term w (l x)); absent bags' rows stay 0.
Tensor naive_bags(const Tensor& ids, const std::vector<Tensor>& tables, const std::vector<Tensor>& starts,
                  const ops::EmbeddingBagOptions& o, const Tensor& lengths) {
  const int64_t N = ids.dim(0), W = ids.dim(1), T = static_cast<int64_t>(tables.size()), E = tables[0].dim(1);
  const int64_t L = o.position_weights.defined() ? o.position_weights.dim(1) : 0;
  Tensor y({T, N, E});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t J = lengths.idata()[n];
      if (J < 0) continue;
      for (int64_t c = 0; c < E; ++c) {
        float acc = starts.empty() ? 0.0f : starts[t].at(o.start_ids.idata()[n] * E + c);
        for (int64_t j = 0; j < J; ++j) {
          const float x = tables[t].at(ids.idata()[n * W + j] * E + c);
          const float l = L ? o.position_weights.at((J * L + j) * E + c) : 1.0f;
          const float w = o.sample_weights.defined() ? o.sample_weights.at(n * W + j) : 1.0f;
          acc += w * (l * x);
        }
        y.at((t * N + n) * E + c) = acc;
      }
    }
  return y;
}

// sum(r * y) over the present bags only (an absent bag's rows of y hold no defined value).
double present_dot(const Tensor& r, const Tensor& y, const Tensor& lengths) {
  const int64_t T = y.dim(0), N = y.dim(1), E = y.dim(2);
  double sum = 0.0;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n)
      if (lengths.idata()[n] >= 0)
        for (int64_t c = 0; c < E; ++c) {
          const int64_t i = (t * N + n) * E + c;
          sum += static_cast<double>(r.at(i)) * y.at(i);
        }
  return sum;
}

// The present rows of y (absent ones zeroed), for comparing with the naive reference.
Tensor present_rows(Tensor y, const Tensor& lengths) {
  const int64_t T = y.dim(0), N = y.dim(1), E = y.dim(2);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n)
      if (lengths.idata()[n] < 0)
        for (int64_t c = 0; c < E; ++c) y.at((t * N + n) * E + c) = 0.0f;
  return y;
}

}  // namespace

TEST_CASE("embedding_bag_forward: bags by hand", "[unit][embedding_bag]") {
  // V = 4, E = 2; row v of the table is (10 v, 10 v + 1).
  const Tensor table = Tensor::from({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  // Bag 0: ids 1, 3 (then padding); bag 1: id 2, then the padding id 0 ends it before 3; bag 2: empty.
  const Tensor ids = Tensor::from_ints({3, 3}, {1, 3, 0, 2, 0, 3, 0, 1, 1});
  ops::EmbeddingBagOptions o;
  o.padding_id = 0;
  const Tensor y = ops::embedding_bag_forward(ids, in({table}), {}, o, nullptr);
  CHECK(y.shape() == Shape{1, 3, 2});
  CHECK_THAT(y, test::close_to(Tensor::from({1, 3, 2}, {40, 42, 20, 21, 0, 0}), 0));

  // Sample weights (2, -1 on bag 0), position weights of a 2-id bag (row J = 2: (1, 2) then
  // (3, 4)) and a start row each (row 1 and row 0 of [[100, 200], [5, 6]]), two tables (the
  // second the first times -1).
  ops::EmbeddingBagOptions w;
  w.padding_id = 0;
  w.sample_weights = Tensor::from({3, 3}, {2, -1, 0, 1, 1, 1, 1, 1, 1});
  Tensor pos({4, 3, 2});
  for (int64_t J = 0; J <= 3; ++J)
    for (int64_t i = 0; i < 6; ++i) pos.at(J * 6 + i) = 1.0f;
  const float two_ids[4] = {1, 2, 3, 4};
  for (int64_t i = 0; i < 4; ++i) pos.at(2 * 6 + i) = two_ids[i];
  w.position_weights = pos;
  w.start_ids = Tensor::from_ints({3}, {1, 0, 1});
  Tensor negated = table.clone();
  for (float& v : negated.values()) v = -v;
  const Tensor start = Tensor::from({2, 2}, {100, 200, 5, 6});
  const Tensor y2 = ops::embedding_bag_forward(ids, in({table, negated}), in({start, start}), w, nullptr);
  // Bag 0, table 0: (5, 6) + 2 (1, 2) ∘ (10, 11) - (3, 4) ∘ (30, 31) = (5 + 20 - 90, 6 + 44 - 124).
  // Bag 1: (100, 200) + (20, 21) (a 1-id bag: weights 1). Bag 2: its start row (5, 6).
  CHECK_THAT(y2[0], test::close_to(Tensor::from({3, 2}, {-65, -74, 120, 221, 5, 6}), 0));
  CHECK_THAT(y2[1], test::close_to(Tensor::from({3, 2}, {5 - 20 + 90, 6 - 44 + 124, 80, 179, 5, 6}), 0));
}

TEST_CASE("embedding_bag_forward matches the naive loops: every weight, every width", "[unit][embedding_bag]") {
  Rng rng(11);
  const int64_t N = 23, W = 7, V = 30, R = 9;
  // Register kernels for E < 68 (tails of 1-3 floats, the largest block count at 64-67), block by
  // block beyond, 64-column backward units from E = 128.
  for (int64_t E : {1, 2, 3, 4, 5, 7, 8, 20, 23, 50, 63, 64, 67, 68, 71, 130, 200})
    for (int kind = 0; kind < 8; ++kind) {
      const bool position = kind & 1, sample = kind & 2, start = kind & 4;
      const int64_t T = E % 2 ? 1 : 3;
      INFO("E " << E << (position ? ", position weights" : "") << (sample ? ", sample weights" : "")
                << (start ? ", start rows" : "") << ", T " << T);
      const Bags bags = random_bags(N, W, V, rng);
      std::vector<Tensor> tables, starts;
      for (int64_t t = 0; t < T; ++t) tables.push_back(randn({V, E}, rng));
      if (start)
        for (int64_t t = 0; t < T; ++t) starts.push_back(randn({R, E}, rng));
      ops::EmbeddingBagOptions o;
      o.lengths = bags.lengths;
      if (position) o.position_weights = random_positions(W + 2, E, rng);   // L > W is allowed
      if (sample) o.sample_weights = randn({N, W}, rng);
      if (start) {
        o.start_ids = Tensor({N}, DType::i32);
        for (int64_t n = 0; n < N; ++n) o.start_ids.idata()[n] = static_cast<int32_t>(rng.uniform_int(R));
      }
      const Tensor y = ops::embedding_bag_forward(bags.ids, in(tables), in(starts), o, nullptr);
      REQUIRE(y.shape() == Shape{T, N, E});
      CHECK_THAT(present_rows(y, bags.lengths),
                 test::close_to(naive_bags(bags.ids, tables, starts, o, bags.lengths), 1e-6));
    }
}

TEST_CASE("embedding_bag_backward matches finite differences", "[gradcheck][embedding_bag]") {
  Rng rng(5);
  const int64_t N = 6, W = 4, V = 7, R = 3;
  for (int64_t E : {6, 70, 130}) {   // a register kernel with a tail; block by block; 64-column units
    INFO("E " << E);
    const Bags bags = random_bags(N, W, V, rng);
    std::vector<Tensor> tables{randn({V, E}, rng), randn({V, E}, rng)}, starts{randn({R, E}, rng), randn({R, E}, rng)};
    ops::EmbeddingBagOptions o;
    o.lengths = bags.lengths;
    o.position_weights = random_positions(W, E, rng);
    o.sample_weights = randn({N, W}, rng);
    o.start_ids = Tensor::from_ints({N}, {2, 0, 2, 1, 0, 2});
    const Tensor r = randn({2, N, E}, rng);
    auto loss = [&] {
      return present_dot(r, ops::embedding_bag_forward(bags.ids, in(tables), in(starts), o, nullptr), bags.lengths);
    };
    ops::EmbeddingBagCache cache;
    ops::embedding_bag_forward(bags.ids, in(tables), in(starts), o, &cache);
    std::vector<Tensor> dtables{zeros_like(tables[0]), zeros_like(tables[1])};
    std::vector<Tensor> dstarts{zeros_like(starts[0]), zeros_like(starts[1])};
    const Tensor dw = ops::embedding_bag_backward(r, cache, out(dtables), out(dstarts));
    for (size_t t = 0; t < 2; ++t) {
      CHECK_THAT(dtables[t], test::close_to(test::numeric_grad(loss, tables[t]), 1e-2));
      CHECK_THAT(dstarts[t], test::close_to(test::numeric_grad(loss, starts[t]), 1e-2));
    }
    CHECK_THAT(dw, test::close_to(test::numeric_grad(loss, o.sample_weights), 1e-2));
  }
}

TEST_CASE("embedding_bag_backward: bag-of-words gradients by hand, accumulated", "[unit][embedding_bag]") {
  // Bags {1, 1, 2} and {2} (ids after the padding id 0 are not in the bag): row 1 gets dy[0]
  // twice, row 2 gets dy[0] + dy[1]; row 0 and 3 nothing. Gradients add to what is there.
  const Tensor table({4, 2});
  const Tensor ids = Tensor::from_ints({2, 4}, {1, 1, 2, 0, 2, 0, 3, 3});
  ops::EmbeddingBagOptions o;
  o.padding_id = 0;
  ops::EmbeddingBagCache cache;
  ops::embedding_bag_forward(ids, in({table}), {}, o, &cache);
  std::vector<Tensor> dtable{Tensor::full({4, 2}, 1.0f)};
  const Tensor dy = Tensor::from({1, 2, 2}, {1, 2, 10, 20});
  const Tensor dw = ops::embedding_bag_backward(dy, cache, out(dtable), {});
  CHECK_FALSE(dw.defined());   // no sample weights, no gradient for them
  CHECK_THAT(dtable[0], test::close_to(Tensor::from({4, 2}, {1, 1, 3, 5, 12, 23, 1, 1}), 0));
}

TEST_CASE("embedding_bag: empty and absent bags", "[unit][embedding_bag]") {
  // Bag 0 empty (length 0): its start row; bag 1 absent (-1): nothing written, its dy not read
  // (NaN there leaves every gradient finite); bag 2 one id.
  Rng rng(3);
  const int64_t E = 5;
  const Tensor table = randn({3, E}, rng), start = randn({2, E}, rng);
  const Tensor ids = Tensor::from_ints({3, 2}, {2, 1, 1, 1, 2, 2});
  ops::EmbeddingBagOptions o;
  o.lengths = Tensor::from_ints({3}, {0, -1, 1});
  o.start_ids = Tensor::from_ints({3}, {1, 0, 0});
  ops::EmbeddingBagCache cache;
  const Tensor y = ops::embedding_bag_forward(ids, in({table}), in({start}), o, &cache);
  CHECK_THAT(y[0][0], test::close_to(start[1], 0));
  Tensor want = start[0].clone();
  for (int64_t c = 0; c < E; ++c) want.at(c) += table.at(2 * E + c);
  CHECK_THAT(y[0][2], test::close_to(want, 0));

  Tensor dy = Tensor::full({1, 3, E}, 1.0f);
  for (int64_t c = 0; c < E; ++c) dy.at(E + c) = std::numeric_limits<float>::quiet_NaN();
  std::vector<Tensor> dtable{zeros_like(table)}, dstart{zeros_like(start)};
  ops::embedding_bag_backward(dy, cache, out(dtable), out(dstart));
  CHECK_THAT(dtable[0], test::close_to(Tensor::from({3, E}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}), 0));
  CHECK_THAT(dstart[0], test::close_to(Tensor::full({2, E}, 1.0f), 0));   // bag 2 into row 0, bag 0 into row 1

  // Without lengths or a padding id every id of a row is in its bag (kNoPadding).
  const Tensor all = ops::embedding_bag_forward(Tensor::from_ints({1, 2}, {0, 0}), in({table}), {}, {}, nullptr);
  Tensor twice = table[0].clone();
  for (float& v : twice.values()) v += v;
  CHECK_THAT(all[0][0], test::close_to(twice, 0));
}

TEST_CASE("embedding_bag: ids of any rank [..., W] are rows of bags", "[unit][embedding_bag]") {
  // A [2, 3, W] grid (a batch of stories' sentence slots) gives y [T, 2, 3, E], the same rows as
  // the [6, W] bags; lengths, start ids and sample weights take the grid's shape.
  Rng rng(12);
  const int64_t W = 4, V = 9, E = 6;
  const Bags flat = random_bags(6, W, V, rng);
  const std::vector<Tensor> tables{randn({V, E}, rng), randn({V, E}, rng)},
      starts{randn({3, E}, rng), randn({3, E}, rng)};
  ops::EmbeddingBagOptions o;
  o.lengths = flat.lengths;
  o.sample_weights = randn({6, W}, rng);
  o.start_ids = Tensor::from_ints({6}, {0, 1, 2, 2, 1, 0});
  ops::EmbeddingBagCache flat_cache, grid_cache;
  const Tensor y_flat = ops::embedding_bag_forward(flat.ids, in(tables), in(starts), o, &flat_cache);
  ops::EmbeddingBagOptions g = o;
  g.lengths = o.lengths.reshape({2, 3});
  g.sample_weights = o.sample_weights.reshape({2, 3, W});
  g.start_ids = o.start_ids.reshape({2, 3});
  const Tensor y_grid = ops::embedding_bag_forward(flat.ids.reshape({2, 3, W}), in(tables), in(starts), g, &grid_cache);
  REQUIRE(y_grid.shape() == Shape{2, 2, 3, E});
  CHECK_THAT(present_rows(y_grid.reshape({2, 6, E}), flat.lengths),
             test::close_to(present_rows(y_flat, flat.lengths), 0));
  const Tensor dy = randn({2, 6, E}, rng);
  std::vector<Tensor> d_flat{zeros_like(tables[0]), zeros_like(tables[1])},
      d_grid{zeros_like(tables[0]), zeros_like(tables[1])};
  const Tensor dw_flat = ops::embedding_bag_backward(dy, flat_cache, out(d_flat), {});
  const Tensor dw_grid = ops::embedding_bag_backward(dy.reshape({2, 2, 3, E}), grid_cache, out(d_grid), {});
  CHECK(dw_grid.shape() == Shape{2, 3, W});
  CHECK_THAT(dw_grid.reshape({6, W}), test::close_to(dw_flat, 0));
  for (size_t t = 0; t < 2; ++t) CHECK_THAT(d_grid[t], test::close_to(d_flat[t], 0));
  REQUIRE_THROWS_WITH(ops::embedding_bag_forward(flat.ids.reshape({2, 3, W}), in(tables), in(starts), o, nullptr),
                      Catch::Contains("start_ids [...] has shape [6], expected [2, 3]"));
}

TEST_CASE("embedding_bag: the same bits on one thread and on two", "[unit][embedding_bag]") {
  // 5,000 bags of up to 12 ids over 4 tables of E = 64 (about 7 million multiply-adds, above
  // kEmbeddingBagParallelMinWork: the forward splits the bags, the backward the tables), and over
  // one table of E = 200 (the backward splits it in 64-column units).
  Rng rng(21);
  const int64_t N = 5000, W = 12, V = 300;
  const Bags bags = random_bags(N, W, V, rng);
  for (const auto& [T_, E_] : {std::pair<int64_t, int64_t>{4, 64}, {1, 200}}) {
    const int64_t T = T_, E = E_;
    INFO("T " << T << ", E " << E);
    std::vector<Tensor> tables, starts;
    for (int64_t t = 0; t < T; ++t) {
      tables.push_back(randn({V, E}, rng));
      starts.push_back(randn({50, E}, rng));
    }
    ops::EmbeddingBagOptions o;
    o.lengths = bags.lengths;
    o.position_weights = random_positions(W, E, rng);
    o.sample_weights = randn({N, W}, rng);
    o.start_ids = Tensor({N}, DType::i32);
    for (int64_t n = 0; n < N; ++n) o.start_ids.idata()[n] = static_cast<int32_t>(rng.uniform_int(50));
    const Tensor dy = randn({T, N, E}, rng);
    auto run = [&](int threads) {
      set_num_threads(threads);
      ops::EmbeddingBagCache cache;
      std::vector<Tensor> results{
          present_rows(ops::embedding_bag_forward(bags.ids, in(tables), in(starts), o, &cache), bags.lengths)};
      std::vector<Tensor> dtables, dstarts;
      for (int64_t t = 0; t < T; ++t) {
        dtables.push_back(Tensor::full({V, E}, 0.5f));
        dstarts.push_back(Tensor::full({50, E}, 0.5f));
      }
      results.push_back(ops::embedding_bag_backward(dy, cache, out(dtables), out(dstarts)));
      results.insert(results.end(), dtables.begin(), dtables.end());
      results.insert(results.end(), dstarts.begin(), dstarts.end());
      set_num_threads(1);
      return results;
    };
    const std::vector<Tensor> one = run(1), two = run(2);
    for (size_t i = 0; i < one.size(); ++i) CHECK_THAT(two[i], test::close_to(one[i], 0));
  }
}

TEST_CASE("weighted_rows_sum, its backward and rows_dot match the naive loops", "[unit][embedding_bag]") {
  Rng rng(8);
  for (int64_t E : {1, 3, 4, 20, 50, 67, 68, 90}) {
    INFO("E " << E);
    const int64_t n = 9;
    const Tensor rows = randn({n, E}, rng), w = randn({n}, rng), g = randn({E}, rng);
    Tensor out = randn({E}, rng), want = out.clone();
    ops::weighted_rows_sum(rows.data(), E, w.data(), n, out.data());
    for (int64_t c = 0; c < E; ++c)
      for (int64_t i = 0; i < n; ++i) want.at(c) += w.at(i) * rows.at(i * E + c);
    CHECK_THAT(out, test::close_to(want, 1e-6));

    Tensor dw({n}), drows = randn({n, E}, rng);
    const Tensor before = drows.clone();
    ops::weighted_rows_sum_backward(rows.data(), E, w.data(), n, g.data(), dw.data(), drows.data(),
                                    /*accumulate=*/true);
    Tensor want_dw({n}), want_drows = before.clone(), written({n, E});
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < E; ++c) {
        want_dw.at(i) += g.at(c) * rows.at(i * E + c);
        want_drows.at(i * E + c) += w.at(i) * g.at(c);
        written.at(i * E + c) = w.at(i) * g.at(c);
      }
    CHECK_THAT(dw, test::close_to(want_dw, 1e-5));
    CHECK_THAT(drows, test::close_to(want_drows, 1e-6));
    // rows_dot (the hops' scores) is dw's arithmetic: the same bits.
    Tensor scores = randn({n}, rng);
    ops::rows_dot(rows.data(), E, g.data(), n, scores.data());
    CHECK_THAT(scores, test::close_to(dw, 0));
    ops::weighted_rows_sum_backward(/*rows=*/nullptr, E, w.data(), n, g.data(), /*dw=*/nullptr, drows.data(),
                                    /*accumulate=*/false);
    CHECK_THAT(drows, test::close_to(written, 0));
  }
}

TEST_CASE("weighted_rows_sum_backward matches finite differences", "[gradcheck][embedding_bag]") {
  Rng rng(9);
  const int64_t n = 5, E = 22;
  Tensor rows = randn({n, E}, rng), w = randn({n}, rng);
  const Tensor r = randn({E}, rng);
  auto loss = [&] {
    Tensor out({E});
    ops::weighted_rows_sum(rows.data(), E, w.data(), n, out.data());
    return test::dot(r, out);
  };
  Tensor dw({n}), drows({n, E});
  ops::weighted_rows_sum_backward(rows.data(), E, w.data(), n, r.data(), dw.data(), drows.data(), /*accumulate=*/false);
  CHECK_THAT(dw, test::close_to(test::numeric_grad(loss, w), 1e-2));
  CHECK_THAT(drows, test::close_to(test::numeric_grad(loss, rows), 1e-2));
}

TEST_CASE("embedding_bag: bad inputs name the tensor, expected and found", "[unit][embedding_bag]") {
  const Tensor table({5, 3}), ids = Tensor::from_ints({2, 2}, {1, 2, 3, 4});
  REQUIRE_THROWS_WITH(ops::embedding_bag_forward(Tensor::from_ints({2, 2}, {1, 2, 7, 4}), in({table}), {}, {}, nullptr),
                      Catch::Equals("embedding_bag: id 7 at position [1, 0] of ids [2, 2] is out of range [0, V = 5)"));
  REQUIRE_THROWS_AS(ops::embedding_bag_forward(Tensor::from_ints({2, 2}, {1, 2, -1, 4}), in({table}), {}, {}, nullptr),
                    DataError);
  REQUIRE_THROWS_WITH(ops::embedding_bag_forward(ids, in({table, Tensor({7, 3})}), {}, {}, nullptr),
                      Catch::Equals("embedding_bag: tables[1] [V, E] has shape [7, 3], expected [5, 3]"));
  REQUIRE_THROWS_WITH(ops::embedding_bag_forward(ids, {}, {}, {}, nullptr), Catch::Contains("no tables"));
  REQUIRE_THROWS_WITH(ops::embedding_bag_forward(Tensor({2, 2}), in({table}), {}, {}, nullptr),
                      Catch::Contains("embedding_bag: ids [..., W] has dtype float32, expected int32"));
  ops::EmbeddingBagOptions o;
  o.lengths = Tensor::from_ints({2}, {1, 3});
  REQUIRE_THROWS_WITH(ops::embedding_bag_forward(ids, in({table}), {}, o, nullptr),
                      Catch::Equals("embedding_bag: length 3 at position [1] of lengths [2] is outside [-1, W = 2] "
                                    "(-1: an absent bag)"));
  o.lengths = Tensor::from_ints({2}, {1, 2});
  o.padding_id = 0;
  REQUIRE_THROWS_AS(ops::embedding_bag_forward(ids, in({table}), {}, o, nullptr), ConfigError);
  ops::EmbeddingBagOptions p;
  p.position_weights = Tensor({2, 1, 3});
  REQUIRE_THROWS_WITH(ops::embedding_bag_forward(ids, in({table}), {}, p, nullptr),
                      Catch::Contains("position_weights [L + 1, L, E] has shape [2, 1, 3], expected [L + 1, L, 3] "
                                      "with L >= W = 2"));
  ops::EmbeddingBagOptions s;
  s.sample_weights = Tensor({2, 3});
  REQUIRE_THROWS_WITH(ops::embedding_bag_forward(ids, in({table}), {}, s, nullptr),
                      Catch::Equals("embedding_bag: sample_weights [..., W] has shape [2, 3], expected [2, 2]"));
  ops::EmbeddingBagOptions st;
  st.start_ids = Tensor::from_ints({2}, {0, 4});
  REQUIRE_THROWS_WITH(
      ops::embedding_bag_forward(ids, in({table}), in({Tensor({4, 3})}), st, nullptr),
      Catch::Equals("embedding_bag: start id 4 at position [1] of start ids [2] is out of range [0, R = 4)"));
  REQUIRE_THROWS_WITH(ops::embedding_bag_forward(ids, in({table}), in({Tensor({4, 3})}), {}, nullptr),
                      Catch::Contains("start tables without start_ids"));

  ops::EmbeddingBagCache cache;
  ops::embedding_bag_forward(ids, in({table}), {}, {}, &cache);
  std::vector<Tensor> dtable{zeros_like(table)};
  REQUIRE_THROWS_WITH(ops::embedding_bag_backward(Tensor({1, 2, 4}), cache, out(dtable), {}),
                      Catch::Equals("embedding_bag_backward: dy [T, ..., E] has shape [1, 2, 4], expected [1, 2, 3]"));
  std::vector<Tensor> wrong{Tensor({4, 3})};
  REQUIRE_THROWS_WITH(ops::embedding_bag_backward(Tensor({1, 2, 3}), cache, out(wrong), {}),
                      Catch::Equals("embedding_bag_backward: dtables[0] [V, E] has shape [4, 3], expected [5, 3]"));
  REQUIRE_THROWS_WITH(ops::embedding_bag_backward(Tensor({1, 2, 3}), cache, out(dtable), out(wrong)),
                      Catch::Contains("1 start table gradients for 0 start tables"));
}

TEST_CASE("embedding_bag_prepare + embedding_bag_sum over row ranges: the forward's bits", "[unit][embedding_bag]") {
  // The memory network's way: prepared once, summed range by range (any split, absent bags
  // included), the same bits as one forward, and a cache its backward reads.
  Rng rng(21);
  const int64_t N = 7, W = 5, V = 11, E = 13;
  const Bags bags = random_bags(N, W, V, rng);
  const std::vector<Tensor> tables{randn({V, E}, rng), randn({V, E}, rng)},
      starts{randn({4, E}, rng), randn({4, E}, rng)};
  ops::EmbeddingBagOptions o;
  o.lengths = bags.lengths;
  o.start_ids = Tensor::from_ints({N}, {0, 1, 2, 3, 3, 2, 1});
  o.position_weights = randn({W + 1, W, E}, rng);
  ops::EmbeddingBagCache forward_cache;
  const Tensor want = ops::embedding_bag_forward(bags.ids, in(tables), in(starts), o, &forward_cache);
  const Tensor dy = randn(want.shape(), rng);
  std::vector<Tensor> d_want{zeros_like(tables[0]), zeros_like(tables[1])};
  ops::embedding_bag_backward(dy, forward_cache, out(d_want), {});
  for (const std::vector<int64_t>& cuts : {std::vector<int64_t>{0, N}, {0, 1, 4, N}, {0, 3, 3, 6, N}}) {
    ops::EmbeddingBagCache cache;
    Tensor y = ops::embedding_bag_prepare(bags.ids, in(tables), in(starts), o, cache);
    REQUIRE(y.shape() == want.shape());
    for (size_t i = 0; i + 1 < cuts.size(); ++i)
      ops::embedding_bag_sum(cache, in(tables), in(starts), cuts[i], cuts[i + 1], y);
    CHECK_THAT(present_rows(y, bags.lengths), test::close_to(present_rows(want, bags.lengths), 0));
    std::vector<Tensor> d{zeros_like(tables[0]), zeros_like(tables[1])};
    ops::embedding_bag_backward(dy, cache, out(d), {});   // the prepared cache is the forward's
    for (size_t t = 0; t < 2; ++t) CHECK_THAT(d[t], test::close_to(d_want[t], 0));
  }
  ops::EmbeddingBagCache cache;
  REQUIRE_THROWS_WITH(ops::embedding_bag_prepare(bags.ids, in(tables), {}, o, cache),
                      Catch::Contains("start_ids without start tables"));
}

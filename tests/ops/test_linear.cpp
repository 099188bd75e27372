#include "attn/ops/linear.hpp"

#include <cmath>
#include <vector>

#include "test_support.hpp"

using namespace attn;

TEST_CASE("linear_forward by hand", "[unit][linear]") {
  const Tensor x = Tensor::from({2, 2}, {1, 2, -1, 0});
  const Tensor W = Tensor::from({3, 2}, {1, 0, 0, 1, 1, 1});   // [out = 3, in = 2]
  const Tensor b = Tensor::from({3}, {0.5f, -1, 2});
  CHECK_THAT(ops::linear_forward(x, W, b, nullptr),
             test::close_to(Tensor::from({2, 3}, {1.5f, 1, 5, -0.5f, -1, 1}), 1e-6));
  CHECK_THAT(ops::linear_forward(x, W, Tensor(), nullptr),   // no bias
             test::close_to(Tensor::from({2, 3}, {1, 2, 3, -1, 0, -1}), 1e-6));
}

TEST_CASE("linear_forward on [B, T, in] equals the flattened [B*T, in] product", "[unit][linear]") {
  Rng rng(1);
  const Tensor x = randn({2, 3, 4}, rng), W = randn({5, 4}, rng), b = randn({5}, rng);
  const Tensor y = ops::linear_forward(x, W, b, nullptr);
  CHECK(y.shape() == Shape{2, 3, 5});
  CHECK_THAT(y.reshape({6, 5}), test::close_to(ops::linear_forward(x.reshape({6, 4}), W, b, nullptr), 1e-6));
}

TEST_CASE("linear_backward matches finite differences", "[gradcheck][linear]") {
  Rng rng(7);   // fixed seed: a failure reproduces exactly
  Tensor x = randn({2, 3, 4}, rng), W = randn({5, 4}, rng), b = randn({5}, rng);
  const Tensor r = randn({2, 3, 5}, rng);   // loss = sum(r * y), so dloss/dy = r
  auto loss = [&] { return test::dot(r, ops::linear_forward(x, W, b, nullptr)); };
  ops::LinearCache cache;
  ops::linear_forward(x, W, b, &cache);
  // Parameter gradients accumulate: start from ones and expect ones + gradient.
  Tensor dW = Tensor::full(W.shape(), 1.0f), db = Tensor::full(b.shape(), 1.0f);
  const Tensor dx = ops::linear_backward(r, W, cache, dW, db);
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
  Tensor want_dW = test::numeric_grad(loss, W), want_db = test::numeric_grad(loss, b);
  for (float& v : want_dW.values()) v += 1.0f;
  for (float& v : want_db.values()) v += 1.0f;
  CHECK_THAT(dW, test::close_to(want_dW, 1e-2));
  CHECK_THAT(db, test::close_to(want_db, 1e-2));
}

TEST_CASE("linear_backward without bias matches finite differences", "[gradcheck][linear]") {
  Rng rng(8);
  Tensor x = randn({3, 4}, rng), W = randn({2, 4}, rng);
  const Tensor r = randn({3, 2}, rng);
  auto loss = [&] { return test::dot(r, ops::linear_forward(x, W, Tensor(), nullptr)); };
  ops::LinearCache cache;
  ops::linear_forward(x, W, Tensor(), &cache);
  Tensor dW = zeros_like(W), db;
  const Tensor dx = ops::linear_backward(r, W, cache, dW, db);
  CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
  CHECK_THAT(dW, test::close_to(test::numeric_grad(loss, W), 1e-2));
}

TEST_CASE("linear: the bias gradient on the threaded path is the column sum", "[unit][linear]") {
  Rng rng(5);
  const Tensor x = randn({256, 8}, rng), W = randn({600, 8}, rng), b = randn({600}, rng);
  ops::LinearCache cache;
  ops::linear_forward(x, W, b, &cache);
  const Tensor dy = randn({256, 600}, rng);
  Tensor dW = zeros_like(W), db = zeros_like(b);
  ops::linear_backward(dy, W, cache, dW, db);
  Tensor want({600});
  for (int64_t j = 0; j < 600; ++j) {
    double s = 0;
    for (int64_t i = 0; i < 256; ++i) s += dy.at(i * 600 + j);
    want.at(j) = static_cast<float>(s);
  }
  CHECK_THAT(db, test::close_to(want, 1e-4));
}

TEST_CASE("linear: bad shapes are named in the message", "[unit][linear]") {
  Rng rng(7);
  const Tensor x = randn({3, 4}, rng), W = randn({5, 4}, rng), b = randn({5}, rng);
  REQUIRE_THROWS_WITH(ops::linear_forward(x, Tensor({5, 3}), b, nullptr),
                      Catch::Contains("W [out, in] has shape [5, 3], expected [*, 4]"));
  REQUIRE_THROWS_WITH(ops::linear_forward(x, W, Tensor({4}), nullptr),
                      Catch::Equals("linear: b [out] has shape [4], expected [5]"));
  ops::LinearCache cache;
  ops::linear_forward(x, W, b, &cache);
  Tensor dW = zeros_like(W), db = zeros_like(b);
  REQUIRE_THROWS_WITH(ops::linear_backward(Tensor({3, 4}), W, cache, dW, db),
                      Catch::Equals("linear_backward: dy [..., out] has shape [3, 4], expected [3, 5]"));
  Tensor bad_dW({4, 5});
  REQUIRE_THROWS_WITH(ops::linear_backward(Tensor({3, 5}), W, cache, bad_dW, db),
                      Catch::Contains("dW [out, in] has shape [4, 5], expected [5, 4]"));
}

// ---- on raw rows ------------------------------------------------------------------------------

namespace {

// Columns [c0, c0 + n) of x [rows, in] copied into a buffer of row stride ld >= n (the rest of
// each row NaN, which no op may read).
std::vector<float> column_block(const Tensor& x, int64_t c0, int64_t n, int64_t ld) {
  const int64_t rows = x.dim(0), in = x.dim(1);
  std::vector<float> out(static_cast<size_t>(rows * ld), std::nanf(""));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) out[static_cast<size_t>(r * ld + j)] = x.at(r * in + c0 + j);
  return out;
}

// y = x W^T + b through linear_rows_forward, x given as its two column blocks [u; v] in separate
// buffers of row strides 3 and 5 (u: 2 columns, v: 2), as a recurrence holds them.
Tensor rows_forward(const Tensor& x, const Tensor& W, const Tensor& b) {
  const int64_t rows = x.dim(0), out = W.dim(0);
  const std::vector<float> u = column_block(x, 0, 2, 3), v = column_block(x, 2, 2, 5);
  Tensor y = Tensor::full({rows, out}, std::nanf(""));   // beta = 0 must not read it
  ops::linear_rows_forward(u.data(), 3, rows, W, /*col=*/0, 2, /*b=*/nullptr, 0.0f, y.data(), out);
  ops::linear_rows_forward(v.data(), 5, rows, W, /*col=*/2, 2, b.data(), 1.0f, y.data(), out);
  return y;
}

}  // namespace

TEST_CASE("linear_rows: two column blocks equal linear_forward/backward, at 1 row (gemv) and 3", "[unit][linear]") {
  for (int64_t rows : {1, 3}) {
    Rng rng(30 + static_cast<uint64_t>(rows));
    const Tensor x = randn({rows, 4}, rng), W = randn({5, 4}, rng), b = randn({5}, rng), dy = randn({rows, 5}, rng);
    CHECK_THAT(rows_forward(x, W, b), test::close_to(ops::linear_forward(x, W, b, nullptr), 1e-6));

    ops::LinearCache cache;
    ops::linear_forward(x, W, b, &cache);
    Tensor want_dW = Tensor::full(W.shape(), 0.5f), want_db = Tensor::full(b.shape(), 0.5f);
    const Tensor want_dx = ops::linear_backward(dy, W, cache, want_dW, want_db);

    // dx by blocks into one [rows, 4] buffer (row stride 4): beta 0 overwrites NaN, beta 1 adds.
    Tensor dx = Tensor::full({rows, 4}, std::nanf(""));
    ops::linear_rows_backward_input(dy.data(), 5, rows, W, /*col=*/0, 2, 0.0f, dx.data(), 4);
    for (int64_t r = 0; r < rows; ++r) dx.at(r * 4 + 2) = dx.at(r * 4 + 3) = 0.0f;
    ops::linear_rows_backward_input(dy.data(), 5, rows, W, /*col=*/2, 2, 1.0f, dx.data() + 2, 4);
    CHECK_THAT(dx, test::close_to(want_dx, 1e-6));

    // The parameters' gradients add to what is there, as linear_backward's do.
    const std::vector<float> u = column_block(x, 0, 2, 3), v = column_block(x, 2, 2, 5);
    Tensor dW = Tensor::full(W.shape(), 0.5f), db = Tensor::full(b.shape(), 0.5f);
    ops::linear_rows_backward_params(dy.data(), 5, rows, u.data(), 3, /*col=*/0, 2, dW, /*db=*/nullptr);
    ops::linear_rows_backward_params(dy.data(), 5, rows, v.data(), 5, /*col=*/2, 2, dW, db.data());
    CHECK_THAT(dW, test::close_to(want_dW, 1e-6));
    CHECK_THAT(db, test::close_to(want_db, 0));   // the same column sums, the same bits
  }
}

TEST_CASE("linear_rows backward matches finite differences", "[gradcheck][linear]") {
  for (int64_t rows : {1, 3}) {
    Rng rng(40 + static_cast<uint64_t>(rows));
    Tensor x = randn({rows, 4}, rng), W = randn({5, 4}, rng), b = randn({5}, rng);
    const Tensor r = randn({rows, 5}, rng);   // loss = sum(r * y), so dloss/dy = r
    auto loss = [&] { return test::dot(r, rows_forward(x, W, b)); };

    Tensor dx({rows, 4}), dW = zeros_like(W), db = zeros_like(b);
    ops::linear_rows_backward_input(r.data(), 5, rows, W, /*col=*/0, 4, 0.0f, dx.data(), 4);
    ops::linear_rows_backward_params(r.data(), 5, rows, x.data(), 4, /*col=*/0, 4, dW, db.data());
    CHECK_THAT(dx, test::close_to(test::numeric_grad(loss, x), 1e-2));
    CHECK_THAT(dW, test::close_to(test::numeric_grad(loss, W), 1e-2));
    CHECK_THAT(db, test::close_to(test::numeric_grad(loss, b), 1e-2));
  }
}

TEST_CASE("linear_rows: an empty block leaves beta y + b, and a block outside W is named", "[unit][linear]") {
  const Tensor W = Tensor::from({2, 3}, {1, 2, 3, 4, 5, 6}), b = Tensor::from({2}, {0.5f, -1});
  Tensor y = Tensor::from({1, 2}, {10, 20});
  ops::linear_rows_forward(nullptr, 0, 1, W, /*col=*/3, 0, b.data(), 1.0f, y.data(), 2);
  CHECK_THAT(y, test::close_to(Tensor::from({1, 2}, {10.5f, 19}), 0));
  ops::linear_rows_forward(nullptr, 0, 1, W, /*col=*/3, 0, /*b=*/nullptr, 0.0f, y.data(), 2);
  CHECK_THAT(y, test::close_to(Tensor::from({1, 2}, {0, 0}), 0));

  const float x[2] = {1, 1};
  REQUIRE_THROWS_WITH(ops::linear_rows_forward(x, 2, 1, W, /*col=*/2, 2, nullptr, 0.0f, y.data(), 2),
                      Catch::Equals("linear_rows_forward: columns [2, 4) of W [out, in] of shape [2, 3] (expected a "
                                    "2-D W holding them)"));
  Tensor dW1({6});
  REQUIRE_THROWS_WITH(ops::linear_rows_backward_params(x, 2, 1, x, 2, /*col=*/0, 1, dW1, nullptr),
                      Catch::Contains("linear_rows_backward_params: columns [0, 1) of dW [out, in] of shape [6]"));
}

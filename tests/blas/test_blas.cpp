#include "attn/blas/blas.hpp"

#include "attn/core/flops.hpp"
#include "attn/core/threading.hpp"
#include "test_support.hpp"

using namespace attn;
using blas::Trans;

TEST_CASE("blas: gemm on a 2x2 example", "[unit][blas]") {
  Tensor A = Tensor::from({2, 2}, {1, 2, 3, 4}), B = Tensor::from({2, 2}, {5, 6, 7, 8});
  Tensor C({2, 2});
  blas::gemm(Trans::N, Trans::N, 2, 2, 2, 1.0f, A.data(), 2, B.data(), 2, 0.0f, C.data(), 2);
  CHECK_THAT(C, test::close_to(Tensor::from({2, 2}, {19, 22, 43, 50}), 1e-6));
}

TEST_CASE("blas: gemm and batched gemm match the naive loops for every transpose", "[unit][blas]") {
  Rng rng(3);
  const int64_t M = 5, N = 7, K = 6, batch = 3;
  for (Trans ta : {Trans::N, Trans::T})
    for (Trans tb : {Trans::N, Trans::T}) {
      Tensor A = randn({batch, M * K}, rng), B = randn({batch, K * N}, rng);
      Tensor C = randn({batch, M * N}, rng), R = C.clone();
      const int64_t lda = ta == Trans::T ? M : K, ldb = tb == Trans::T ? K : N;
      blas::gemm_strided_batched(ta, tb, M, N, K, 0.5f, A.data(), lda, M * K, B.data(), ldb, K * N,
                                 0.25f, C.data(), N, M * N, batch);
      blas::gemm_strided_batched_reference(ta, tb, M, N, K, 0.5f, A.data(), lda, M * K, B.data(),
                                           ldb, K * N, 0.25f, R.data(), N, M * N, batch);
      CHECK_THAT(C, test::close_to(R, 1e-5));
    }
}

// Products of 2^19 multiply-adds and more are split into one block of C per thread (by rows,
// or by columns when C has few rows), and large batches of them spread one matrix per thread or
// run one split product at a time; every way must give the naive loops' numbers, also when the
// operands are views with row strides wider than their rows.
TEST_CASE("blas: products split over threads match the naive loops", "[unit][blas]") {
  const int before = num_threads();
  set_num_threads(2);
  Rng rng(5);
  struct Shape { int64_t M, N, K, batch; };
  for (const Shape& s : {Shape{96, 80, 80, 1}, Shape{20, 300, 100, 1}, Shape{130, 70, 70, 3},
                         Shape{300, 120, 120, 3}})
    for (Trans ta : {Trans::N, Trans::T})
      for (Trans tb : {Trans::N, Trans::T}) {
        CAPTURE(s.M, s.N, s.K, s.batch, ta == Trans::T, tb == Trans::T);
        const int64_t lda = (ta == Trans::T ? s.M : s.K) + 3, ldb = (tb == Trans::T ? s.K : s.N) + 5;
        const int64_t ldc = s.N + 2;
        const int64_t sa = lda * (ta == Trans::T ? s.K : s.M), sb = ldb * (tb == Trans::T ? s.N : s.K);
        const int64_t sc = ldc * s.M;
        Tensor A = randn({s.batch, sa}, rng), B = randn({s.batch, sb}, rng);
        Tensor C = randn({s.batch, sc}, rng), R = C.clone();
        flops::reset();
        blas::gemm_strided_batched(ta, tb, s.M, s.N, s.K, 0.5f, A.data(), lda, sa, B.data(), ldb, sb,
                                   0.25f, C.data(), ldc, sc, s.batch);
        CHECK(flops::count() == s.batch * s.M * s.N * s.K);
        blas::gemm_strided_batched_reference(ta, tb, s.M, s.N, s.K, 0.5f, A.data(), lda, sa,
                                             B.data(), ldb, sb, 0.25f, R.data(), ldc, sc, s.batch);
        CHECK_THAT(C, test::close_to(R, 1e-4));
      }
  set_num_threads(before);
}

TEST_CASE("blas: the running thread count changes no bit of a split product", "[unit][blas][threads]") {
  // 64 x 64 x 450 is one where OpenBLAS (SkylakeX) sums a 32-row half in another order than the
  // whole product: with the split tied to the running threads, 1 and 2 threads gave other bits.
  const int before = num_parts();
  set_num_threads(2);
  Rng rng(9);
  struct Shape { int64_t M, N, K, batch; };
  for (const Shape& s : {Shape{64, 64, 450, 1}, Shape{64, 64, 470, 3}, Shape{300, 120, 120, 3}}) {
    CAPTURE(s.M, s.N, s.K, s.batch);
    Tensor A = randn({s.batch, s.M * s.K}, rng), B = randn({s.batch, s.K * s.N}, rng);
    Tensor C2 = randn({s.batch, s.M * s.N}, rng), C1 = C2.clone();
    for (Tensor* C : {&C2, &C1}) {
      set_running_threads(C == &C2 ? 2 : 1);
      blas::gemm_strided_batched(Trans::T, Trans::N, s.M, s.N, s.K, 1.0f, A.data(), s.M, s.M * s.K, B.data(), s.N,
                                 s.K * s.N, 1.0f, C->data(), s.N, s.M * s.N, s.batch);
    }
    CHECK_THAT(C1, test::close_to(C2, 0));
  }
  set_num_threads(before);
}

TEST_CASE("blas: every product feeds the multiply-add counter", "[unit][blas]") {
  Tensor A({4, 3}), B({3, 5}), C({4, 5});
  flops::reset();
  blas::gemm(Trans::N, Trans::N, 4, 5, 3, 1.0f, A.data(), 3, B.data(), 5, 0.0f, C.data(), 5);
  CHECK(flops::count() == 60);
  blas::gemm_strided_batched(Trans::N, Trans::N, 2, 5, 3, 1.0f, A.data(), 3, 6, B.data(), 5, 0,
                             0.0f, C.data(), 5, 10, 2);
  CHECK(flops::count() == 120);
}

TEST_CASE("blas: SplitGemm's parts, run in any order, are gemm's product to the bit", "[unit][blas][threads]") {
  const int before = num_parts();
  set_num_threads(2);
  Rng rng(4);
  struct Shape { Trans ta, tb; int64_t M, N, K; };
  // Split by rows, by columns (M < N and too few rows for a register block per part), and small
  // enough to stay whole; with every transpose the LSTM's products use.
  for (const Shape& s : {Shape{Trans::T, Trans::N, 512, 128, 32}, Shape{Trans::N, Trans::T, 32, 512, 128},
                         Shape{Trans::N, Trans::N, 32, 128, 512}, Shape{Trans::N, Trans::N, 16, 16, 16}}) {
    CAPTURE(s.M, s.N, s.K);
    const int64_t lda = s.ta == Trans::T ? s.M : s.K, ldb = s.tb == Trans::T ? s.K : s.N;
    const Tensor A = randn({s.M * s.K}, rng), B = randn({s.K * s.N}, rng);
    Tensor want = randn({s.M, s.N}, rng), got = want.clone();
    blas::gemm(s.ta, s.tb, s.M, s.N, s.K, 0.5f, A.data(), lda, B.data(), ldb, 1.0f, want.data(), s.N);
    flops::reset();
    const blas::SplitGemm product(s.ta, s.tb, s.M, s.N, s.K, 0.5f, A.data(), lda, B.data(), ldb, 1.0f, got.data(),
                                  s.N);
    CHECK(flops::count() == s.M * s.N * s.K);
    CHECK(product.parts() == (s.M * s.N * s.K >= (int64_t{1} << 19) ? 2 : 1));
    for (int part = product.parts(); part-- > 0;) product.run(part);
    CHECK_THAT(got, test::close_to(want, 0));
  }
  set_num_threads(before);
}

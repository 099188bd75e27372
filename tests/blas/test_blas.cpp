#include "attn/blas/blas.hpp"

#include "attn/core/flops.hpp"
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

TEST_CASE("blas: every product feeds the multiply-add counter", "[unit][blas]") {
  Tensor A({4, 3}), B({3, 5}), C({4, 5});
  flops::reset();
  blas::gemm(Trans::N, Trans::N, 4, 5, 3, 1.0f, A.data(), 3, B.data(), 5, 0.0f, C.data(), 5);
  CHECK(flops::count() == 60);
  blas::gemm_strided_batched(Trans::N, Trans::N, 2, 5, 3, 1.0f, A.data(), 3, 6, B.data(), 5, 0,
                             0.0f, C.data(), 5, 10, 2);
  CHECK(flops::count() == 120);
}

// CBLAS calls and their reference twins.
#include "attn/blas/blas.hpp"

#include <cblas.h>
#include <omp.h>

#include "attn/core/flops.hpp"

namespace attn::blas {
namespace {

CBLAS_TRANSPOSE cblas_trans(Trans t) { return t == Trans::T ? CblasTrans : CblasNoTrans; }

// Below this many multiply-adds per matrix, a batch runs one matrix per thread (each GEMM
// single-threaded) instead of handing every small GEMM to all BLAS threads. OpenBLAS itself
// runs any GEMM of at most 2^18 multiply-adds on one thread (GEMM_MULTITHREAD_THRESHOLD), so
// a cutoff at or below that left a batch of 64 x 64 x 64 products (attention heads at T = 64)
// on one core; up to about 100^3, one matrix per thread beats threading each one.
constexpr int64_t kSmallGemm = 1 << 20;
// ...but a whole batch below this many multiply-adds runs on the calling thread: waking the
// team would cost more than the arithmetic.
constexpr int64_t kMinSpread = 1 << 15;

}  // namespace

void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  flops::add(M * N * K);
  cblas_sgemm(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(M),
              static_cast<blasint>(N), static_cast<blasint>(K), alpha, A, static_cast<blasint>(lda),
              B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
}

void gemm_strided_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
                          const float* A, int64_t lda, int64_t strideA, const float* B,
                          int64_t ldb, int64_t strideB, float beta, float* C, int64_t ldc,
                          int64_t strideC, int64_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  flops::add(batch * M * N * K);
  const bool spread = M * N * K < kSmallGemm && batch * M * N * K >= kMinSpread && batch > 1 &&
                      omp_get_max_threads() > 1;
  // Inside an OpenMP parallel region OpenBLAS runs each call on the calling thread only.
#pragma omp parallel for schedule(static) if (spread)
  for (int64_t b = 0; b < batch; ++b)
    cblas_sgemm(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(M),
                static_cast<blasint>(N), static_cast<blasint>(K), alpha, A + b * strideA,
                static_cast<blasint>(lda), B + b * strideB, static_cast<blasint>(ldb), beta,
                C + b * strideC, static_cast<blasint>(ldc));
}

void gemv(Trans ta, int64_t rows, int64_t cols, float alpha, const float* A, int64_t lda,
          const float* x, float beta, float* y) {
  if (rows == 0 || cols == 0) return;
  flops::add(rows * cols);
  cblas_sgemv(CblasRowMajor, cblas_trans(ta), static_cast<blasint>(rows), static_cast<blasint>(cols),
              alpha, A, static_cast<blasint>(lda), x, 1, beta, y, 1);
}

void axpy(int64_t n, float alpha, const float* x, float* y) {
  flops::add(n);
  cblas_saxpy(static_cast<blasint>(n), alpha, x, 1, y, 1);
}

void gemm_reference(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
                    const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                    int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        const float a = ta == Trans::T ? A[k * lda + i] : A[i * lda + k];
        const float b = tb == Trans::T ? B[j * ldb + k] : B[k * ldb + j];
        acc += static_cast<double>(a) * b;
      }
      float& c = C[i * ldc + j];
      c = static_cast<float>(alpha * acc + (beta == 0.0f ? 0.0 : static_cast<double>(beta) * c));
    }
}

void gemm_strided_batched_reference(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K,
                                    float alpha, const float* A, int64_t lda, int64_t strideA,
                                    const float* B, int64_t ldb, int64_t strideB, float beta,
                                    float* C, int64_t ldc, int64_t strideC, int64_t batch) {
  for (int64_t b = 0; b < batch; ++b)
    gemm_reference(ta, tb, M, N, K, alpha, A + b * strideA, lda, B + b * strideB, ldb, beta,
                   C + b * strideC, ldc);
}

void set_num_threads(int n) { openblas_set_num_threads(n); }

}  // namespace attn::blas

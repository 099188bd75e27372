// The BLAS seam: the only code in attnlab that calls CBLAS (OpenBLAS). Every matrix product
// in the library goes through these functions, which also feed the multiply-add counter
// (core/flops.hpp). Each has a naive-loop twin (`*_reference`) that tests compare against.
//
// All matrices are row-major. op(X) is X or X^T as selected by the Trans flag. M, N, K are
// BLAS's sizes of a product (C [M, N] = A [M, K] B [K, N]), not docs/ARCHITECTURE.md's letters.
#pragma once
#include <cstdint>
#include <string>

namespace attn::blas {

enum class Trans : bool { N = false, T = true };

// C[M, N] = alpha * op(A)[M, K] * op(B)[K, N] + beta * C.   lda/ldb/ldc are row strides.
// Outside a parallel region, a product of 2^19 multiply-adds or more is split into one block of
// C per thread, each a single-threaded sgemm; a smaller one, or any inside a parallel region,
// runs on the calling thread (OpenBLAS held to one thread for it).
void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// gemm's product cut into its parts, for a caller that runs them inside a parallel region of its
// own (core/team.hpp) beside other work, rather than gemm opening a region for the product
// alone: the same parts as gemm, so the same bits. Construct it outside any region (it counts
// the multiply-adds and decides the parts there); then run(part) for every part in [0, parts()),
// each on one thread, in any order. With parts() == 1, run(0) is the whole product.
class SplitGemm {
 public:
  SplitGemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
            int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
  int parts() const { return parts_; }
  void run(int part) const;

 private:
  Trans ta_, tb_;
  int64_t M_, N_, K_;
  float alpha_;
  const float* A_;
  int64_t lda_;
  const float* B_;
  int64_t ldb_;
  float beta_;
  float* C_;
  int64_t ldc_;
  int parts_ = 1;
  bool by_rows_ = true;
};

// `batch` independent GEMMs; matrix b of each operand starts at X + b * strideX.
// Spread over the threads one matrix each when that balances; else one product at a time.
void gemm_strided_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
                          const float* A, int64_t lda, int64_t strideA, const float* B,
                          int64_t ldb, int64_t strideB, float beta, float* C, int64_t ldc,
                          int64_t strideC, int64_t batch);

// y[M] = alpha * op(A)[M, N] x + beta * y, where A is stored [rows, cols] with row stride lda.
void gemv(Trans ta, int64_t rows, int64_t cols, float alpha, const float* A, int64_t lda,
          const float* x, float beta, float* y);

// y += alpha * x
void axpy(int64_t n, float alpha, const float* x, float* y);

// Naive triple loops with double accumulation, for tests.
void gemm_reference(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
                    const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
                    int64_t ldc);
void gemm_strided_batched_reference(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K,
                                    float alpha, const float* A, int64_t lda, int64_t strideA,
                                    const float* B, int64_t ldb, int64_t strideB, float beta,
                                    float* C, int64_t ldc, int64_t strideC, int64_t batch);

// OpenBLAS's description of itself: version, build options and the kernels it chose for this
// CPU, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64". The kernels
// follow the CPU unless the environment forces them (OPENBLAS_CORETYPE), which can halve sgemm's
// rate; the tools print this with --version so that a measurement says what it ran on.
std::string library_config();

// OpenBLAS's own thread setting. Registered with attn::on_set_num_threads (core/threading.hpp),
// so attn::set_num_threads sets it together with OpenMP's.
void set_num_threads(int n);

}  // namespace attn::blas

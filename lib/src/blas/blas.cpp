// CBLAS calls and their reference twins.
#include "attn/blas/blas.hpp"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <utility>

#include "attn/core/background.hpp"
#include "attn/core/flops.hpp"
#include "attn/core/threading.hpp"

namespace attn::blas {
namespace {

CBLAS_TRANSPOSE cblas_trans(Trans t) { return t == Trans::T ? CblasTrans : CblasNoTrans; }

// OpenBLAS 0.3.21 (Debian 12) threads a GEMM poorly below a few million multiply-adds, and
// worse than one thread between 2^18 and 2^22. Splitting C into one block of rows (or columns)
// per thread, each block a single-threaded sgemm, measured faster at every size from 2^19 up,
// large ones included (bench/README.md, "The BLAS seam's split"). Below kMinSplit one thread is
// fastest.
constexpr int64_t kMinSplit = int64_t{1} << 19;
// A batch of matrices runs one matrix per thread when that balances (every item below
// kSpreadAny, or the items balance over the threads: tasks_balance); a whole batch
// below kMinSpread runs on the calling thread: waking the team costs more than the arithmetic.
constexpr int64_t kSpreadAny = int64_t{1} << 22;
constexpr int64_t kMinSpread = int64_t{1} << 15;
// Split points fall on multiples of the sgemm kernels' register block.
constexpr int64_t kSplitAlign = 16;

void sgemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(M),
              static_cast<blasint>(N), static_cast<blasint>(K), alpha, A, static_cast<blasint>(lda),
              B, static_cast<blasint>(ldb), beta, C, static_cast<blasint>(ldc));
}

// sgemm on the calling thread alone. OpenBLAS's OpenMP build takes its thread count from
// omp_get_max_threads() at every call and splits any product above 2^18 multiply-adds over the
// threads: between 2^18 and kMinSplit that is the range the comment above finds slower than one
// thread (32 x 178 x 50, the memory network's answer layer on the joint bAbI set, ran several
// times slower split by OpenBLAS over two: experiments/perf/memnet, "Threads: why 2 were slower
// than 1, and the fix"). One thread for the call, then the setting back.
void sgemm_one_thread(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                      int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads > 1) omp_set_num_threads(1);
  sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (threads > 1) omp_set_num_threads(threads);
}

// Parts a product starting here divides its work into: one inside a parallel region, where
// OpenBLAS also runs on the calling thread only. The parts, not the threads running them, fix the
// shapes of the sgemm calls and so the bits (threading.hpp: num_parts). Outside a region the
// thread's background work is polled first (core/background.hpp: gradients on their way to other
// ranks move between products).
int begin_product() {
  if (in_parallel_region()) return 1;
  poll_background();
  return num_parts();
}

// Threads for a loop over `parts` parts.
int threads_for(int parts) { return std::min(parts, num_threads()); }

// [begin, end) of part `part` of `n` split into `parts` aligned pieces (some may be empty).
std::pair<int64_t, int64_t> piece(int64_t n, int part, int parts) {
  const int64_t step = (n / parts + kSplitAlign - 1) / kSplitAlign * kSplitAlign;
  return {std::min(n, part * step), part + 1 == parts ? n : std::min(n, (part + 1) * step)};
}

}  // namespace

SplitGemm::SplitGemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                     int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc)
    : ta_(ta), tb_(tb), M_(M), N_(N), K_(K), alpha_(alpha), A_(A), lda_(lda), B_(B), ldb_(ldb), beta_(beta), C_(C),
      ldc_(ldc) {
  if (M == 0 || N == 0) return;
  flops::add(M * N * K);
  const int parts = begin_product();
  if (parts == 1 || M * N * K < kMinSplit) return;
  parts_ = parts;
  // Rows of C (of op(A)) while each part gets a full register block of them, else columns.
  by_rows_ = M >= 2 * kSplitAlign * parts || M >= N;
}

// Every part on the calling thread, in a region or not: outside one (a team of one thread, a
// test) OpenBLAS would otherwise split a large part over its own threads, with other bits.
void SplitGemm::run(int part) const {
  if (M_ == 0 || N_ == 0) return;
  if (parts_ == 1) {
    sgemm_one_thread(ta_, tb_, M_, N_, K_, alpha_, A_, lda_, B_, ldb_, beta_, C_, ldc_);
  } else if (by_rows_) {
    const auto [m0, m1] = piece(M_, part, parts_);
    if (m1 > m0)
      sgemm_one_thread(ta_, tb_, m1 - m0, N_, K_, alpha_, ta_ == Trans::T ? A_ + m0 : A_ + m0 * lda_, lda_, B_,
                       ldb_, beta_, C_ + m0 * ldc_, ldc_);
  } else {
    const auto [n0, n1] = piece(N_, part, parts_);
    if (n1 > n0)
      sgemm_one_thread(ta_, tb_, M_, n1 - n0, K_, alpha_, A_, lda_, tb_ == Trans::T ? B_ + n0 * ldb_ : B_ + n0,
                       ldb_, beta_, C_ + n0, ldc_);
  }
}

void gemm(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
          int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  const SplitGemm product(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (product.parts() == 1) {
    product.run(0);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads_for(product.parts()))
  for (int t = 0; t < product.parts(); ++t) product.run(t);
}

void gemm_strided_batched(Trans ta, Trans tb, int64_t M, int64_t N, int64_t K, float alpha,
                          const float* A, int64_t lda, int64_t strideA, const float* B,
                          int64_t ldb, int64_t strideB, float beta, float* C, int64_t ldc,
                          int64_t strideC, int64_t batch) {
  if (M == 0 || N == 0 || batch == 0) return;
  const int64_t item = M * N * K;
  const int parts = begin_product();
  const bool spread = parts > 1 && batch > 1 && batch * item >= kMinSpread &&
                      (item < kSpreadAny || tasks_balance(batch, parts));
  if (!spread) {   // each product on its own, split over the threads when it is large enough
    for (int64_t b = 0; b < batch; ++b)
      gemm(ta, tb, M, N, K, alpha, A + b * strideA, lda, B + b * strideB, ldb, beta, C + b * strideC,
           ldc);
    return;
  }
  flops::add(batch * item);
#pragma omp parallel for schedule(static) num_threads(threads_for(parts))
  for (int64_t b = 0; b < batch; ++b)
    sgemm(ta, tb, M, N, K, alpha, A + b * strideA, lda, B + b * strideB, ldb, beta, C + b * strideC,
          ldc);
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

std::string library_config() { return openblas_get_config(); }

void set_num_threads(int n) { openblas_set_num_threads(n); }

namespace {
// attn::set_num_threads (core, below this layer) sets OpenBLAS's threads through this hook.
[[maybe_unused]] const bool kThreadHookRegistered = (attn::on_set_num_threads(&blas::set_num_threads), true);
}  // namespace

}  // namespace attn::blas

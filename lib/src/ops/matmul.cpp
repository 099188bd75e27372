// Batched matrix products through blas::gemm / blas::gemm_strided_batched. One plan (sizes,
// leading dimensions, which operand is shared) serves the forward and both gradients; a
// shared b under a non-transposed a folds the batch into the row dimension so that forward,
// da and db are each a single GEMM.
#include "attn/ops/matmul.hpp"

#include <string>

#include "attn/blas/blas.hpp"

namespace attn::ops {
namespace {

using blas::Trans;

struct Plan {
  int64_t batch = 1;          // number of products
  int64_t M = 0, N = 0, K = 0;
  int64_t lda = 0, ldb = 0;   // row strides of a and b as stored
  bool shared_a = false;      // a is 2-D and b batched: the same a for every product
  bool shared_b = false;      // b is 2-D and a batched
  Shape y_shape;
};

Shape leading(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

Plan make_plan(const Tensor& a, const Tensor& b, const MatmulOptions& o) {
  const char* a_label = o.transpose_a ? "matmul: a [..., K, M]" : "matmul: a [..., M, K]";
  const char* b_label2 = o.transpose_b ? "matmul: b [N, K]" : "matmul: b [K, N]";
  const char* b_label = o.transpose_b ? "matmul: b [..., N, K]" : "matmul: b [..., K, N]";
  for (const auto& [t, label] : {std::pair{&a, a_label}, std::pair{&b, b_label}}) {
    check_tensor(*t, t->shape(), label);
    if (t->rank() < 2)
      throw ShapeError(std::string(label) + " has shape " + to_string(t->shape()) +
                       ", expected at least 2 dimensions");
  }
  Plan p;
  p.M = a.dim(o.transpose_a ? -1 : -2);
  p.K = a.dim(o.transpose_a ? -2 : -1);
  p.N = b.dim(o.transpose_b ? -2 : -1);
  p.lda = o.transpose_a ? p.M : p.K;
  p.ldb = o.transpose_b ? p.K : p.N;

  const Shape inner = o.transpose_b ? Shape{kAny, p.K} : Shape{p.K, kAny};
  Shape lead;
  if (b.rank() == 2) {   // plain 2-D product, or b shared over a's batch
    check_shape(b.shape(), inner, b_label2);
    lead = leading(a.shape());
    p.shared_b = a.rank() > 2;
  } else {               // a shared over b's batch, or the same batch dimensions on both
    Shape want = a.rank() == 2 ? leading(b.shape()) : leading(a.shape());
    want.insert(want.end(), inner.begin(), inner.end());
    check_shape(b.shape(), want, b_label);
    lead = leading(b.shape());
    p.shared_a = a.rank() == 2;
  }
  p.batch = numel(lead);
  p.y_shape = lead;
  p.y_shape.push_back(p.M);
  p.y_shape.push_back(p.N);
  return p;
}

// C_i = op(X_i) op(Y_i) for i < batch, where X_i = X + i * sx (sx = 0: the same X for all),
// likewise Y. With sc == 0 the products are summed into the one C (the gradient of a shared
// operand): GEMMs in sequence, each adding into C. C is overwritten either way.
void products(Trans tx, Trans ty, int64_t m, int64_t n, int64_t k, const float* X, int64_t ldx,
              int64_t sx, const float* Y, int64_t ldy, int64_t sy, float* C, int64_t ldc,
              int64_t sc, int64_t batch) {
  if (batch == 1 || sc == 0) {
    for (int64_t i = 0; i < batch; ++i)
      blas::gemm(tx, ty, m, n, k, 1.0f, X + i * sx, ldx, Y + i * sy, ldy, i ? 1.0f : 0.0f, C, ldc);
  } else {
    blas::gemm_strided_batched(tx, ty, m, n, k, 1.0f, X, ldx, sx, Y, ldy, sy, 0.0f, C, ldc, sc,
                               batch);
  }
}

}  // namespace

Tensor matmul_forward(const Tensor& a, const Tensor& b, const MatmulOptions& options,
                      MatmulCache* cache) {
  const Plan p = make_plan(a, b, options);
  Tensor y = Tensor::uninitialized(p.y_shape);   // every GEMM below runs with beta = 0 first
  const Trans ta = options.transpose_a ? Trans::T : Trans::N;
  const Trans tb = options.transpose_b ? Trans::T : Trans::N;
  if (p.shared_b && !options.transpose_a) {
    // x[B, T, D] @ W[D, O]: the batch is just more rows of one product.
    blas::gemm(ta, tb, p.batch * p.M, p.N, p.K, 1.0f, a.data(), p.lda, b.data(), p.ldb, 0.0f,
               y.data(), p.N);
  } else {
    products(ta, tb, p.M, p.N, p.K, a.data(), p.lda, p.shared_a ? 0 : p.M * p.K, b.data(), p.ldb,
             p.shared_b ? 0 : p.K * p.N, y.data(), p.N, p.M * p.N, p.batch);
  }
  if (cache) *cache = {a, b, options};
  return y;
}

MatmulGrads matmul_backward(const Tensor& dy, const MatmulCache& cache) {
  const Tensor& a = cache.a;
  const Tensor& b = cache.b;
  const MatmulOptions& o = cache.options;
  const Plan p = make_plan(a, b, o);
  check_tensor(dy, p.y_shape, "matmul_backward: dy [..., M, N]");
  // Overwritten in full: each gradient's first GEMM runs with beta = 0.
  MatmulGrads g{Tensor::uninitialized(a.shape()), Tensor::uninitialized(b.shape())};

  // Fold the batch into rows when b is shared and a is not transposed: then a, dy and da
  // are [batch*M, *] matrices and each gradient is one GEMM.
  const bool fold = p.shared_b && !o.transpose_a;
  const int64_t batch = fold ? 1 : p.batch, M = fold ? p.batch * p.M : p.M;
  const int64_t N = p.N, K = p.K;
  const int64_t sa = p.shared_a ? 0 : M * K, sb = p.shared_b ? 0 : K * N, sy = M * N;
  const float* A = a.data();
  const float* B = b.data();
  const float* dY = dy.data();

  // d op(a) = dy op(b)^T. Stored a: [M, K] -> da = dy op(b)^T; [K, M] -> da = op(b) dy^T.
  if (!o.transpose_a)
    products(Trans::N, o.transpose_b ? Trans::N : Trans::T, M, K, N, dY, N, sy, B, p.ldb, sb,
             g.da.data(), K, sa, batch);
  else
    products(o.transpose_b ? Trans::T : Trans::N, Trans::T, K, M, N, B, p.ldb, sb, dY, N, sy,
             g.da.data(), M, sa, batch);

  // d op(b) = op(a)^T dy. Stored b: [K, N] -> db = op(a)^T dy; [N, K] -> db = dy^T op(a).
  if (!o.transpose_b)
    products(o.transpose_a ? Trans::N : Trans::T, Trans::N, K, N, M, A, p.lda, sa, dY, N, sy,
             g.db.data(), N, sb, batch);
  else
    products(Trans::T, o.transpose_a ? Trans::T : Trans::N, N, K, M, dY, N, sy, A, p.lda, sa,
             g.db.data(), K, sb, batch);
  return g;
}

}  // namespace attn::ops

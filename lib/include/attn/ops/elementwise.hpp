// Elementwise arithmetic with numpy broadcasting: add, mul, scale, the reduction that undoes
// a broadcast (sum_to), and in-place accumulation. Broadcasting follows numpy: shapes are
// aligned on their trailing dimensions, and each pair of sizes must be equal or one of them
// 1 (a missing leading dimension counts as 1), so [B, T, D] + [D], [B, T, D] * [B, 1, D] and
// [B, 1, D] + [1, T, D] all work. The backward of a broadcast operand sums the gradient over
// the dimensions it was repeated along (sum_to). Reference: NumPy broadcasting rules,
// https://numpy.org/doc/stable/user/basics.broadcasting.html
#pragma once
#include <string>

#include "attn/core/tensor.hpp"

namespace attn::ops {

// The shape of a op b under broadcasting. Throws ShapeError naming `label` and both shapes
// when they are incompatible.
Shape broadcast_shape(const Shape& a, const Shape& b, const std::string& label);

// Sums x over the dimensions along which `shape` was broadcast to x's shape, so that
// sum_to(x, s) has shape s. x: [...]; s must broadcast to x's shape. Returns a new tensor.
// Each output element is summed in a fixed order, whatever the thread count.
Tensor sum_to(const Tensor& x, const Shape& shape);

// y = a + b (broadcast).   a, b: broadcastable   ->   y: broadcast_shape(a, b)
struct AddCache { Shape a_shape, b_shape; };
struct AddGrads { Tensor da, db; };
Tensor add_forward(const Tensor& a, const Tensor& b, AddCache* cache);
// dy: [broadcast shape]. Returns new da = sum_to(dy, a), db = sum_to(dy, b).
AddGrads add_backward(const Tensor& dy, const AddCache& cache);

// y = a * b (broadcast, elementwise).
struct MulCache { Tensor a, b; };   // the inputs (shared, not copied): do not modify them in place
struct MulGrads { Tensor da, db; };
Tensor mul_forward(const Tensor& a, const Tensor& b, MulCache* cache);
// dy: [broadcast shape]. Returns new da = sum_to(dy * b, a), db = sum_to(dy * a, b).
MulGrads mul_backward(const Tensor& dy, const MulCache& cache);

// y = alpha * x. No cache: the backward needs only alpha.
Tensor scale_forward(const Tensor& x, float alpha);
// Returns new dx = alpha * dy.
Tensor scale_backward(const Tensor& dy, float alpha);

// dst += alpha * src, same shape (e.g. summing the gradients of a tensor used twice).
void accumulate(Tensor& dst, const Tensor& src, float alpha = 1.0f);

}  // namespace attn::ops

// Dispatch for matrix multiplication: check the operands, then call the CPU or
// CUDA version. out[..., M, N] = a[..., M, K] @ b[..., K, N], batch dimensions
// broadcast (NumPy rules). The CPU kernel is matmul_cpu (cpu/matmul_cpu.cpp); the
// autograd op (autograd/ops/matmul_op.cpp) sizes its output with matmul_shape.
#include <algorithm>

#include "zero/kernels/checks.h"
#include "zero/kernels/dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

ZERO_DEFINE_KERNEL(matmul);

Shape matmul_shape(const Shape& a, const Shape& b) {
  const auto both = [&] { return shape_to_string(a) + " @ " + shape_to_string(b); };
  ZERO_CHECK(a.size() >= 2 && b.size() >= 2, "matmul: expected operands of at least 2 "
             "dimensions [..., rows, cols], got ", both(), "; add one with Unsqueeze");
  const int64_t K = a.end()[-1];
  ZERO_CHECK(b.end()[-2] == K, "matmul: inner dimensions differ in ", both(), ": a has K = ", K,
             " columns but b has K = ", b.end()[-2], " rows");
  // Batch dimensions align from the right; each pair must match or one be 1.
  const size_t a_batch = a.size() - 2, b_batch = b.size() - 2;
  const size_t n = std::max(a_batch, b_batch);
  Shape out(n + 2);
  for (size_t i = 0; i < n; ++i) {
    const int64_t sa = i < n - a_batch ? 1 : a[i - (n - a_batch)];
    const int64_t sb = i < n - b_batch ? 1 : b[i - (n - b_batch)];
    ZERO_CHECK(sa == sb || sa == 1 || sb == 1, "matmul: batch dimensions of ", both(),
               " do not broadcast (batch dimension ", i, ": ", sa, " vs ", sb, ")");
    out[i] = sa == 1 ? sb : sa;
  }
  out[n] = a.end()[-2];      // M
  out[n + 1] = b.end()[-1];  // N
  return out;
}

void matmul(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  check_same_device("matmul", {&a, &b, &out});
  for (const Tensor* t : {&a, &b, &out}) check_dtype("matmul", *t, "operands", DataType::F32);
  const Shape expected = matmul_shape(a.sizes(), b.sizes());
  ZERO_CHECK(out.sizes() == expected, "matmul: expected an output of shape ",
             shape_to_string(expected), " for ", shape_to_string(a.sizes()), " @ ",
             shape_to_string(b.sizes()), ", got ", shape_to_string(out.sizes()));
  ZERO_CHECK(out.is_contiguous() || out.numel() == 0,
             "matmul: expected a contiguous output, got strides ", shape_to_string(out.strides()));
  matmul_stub(out.device(), a, b, out, accumulate);
}

}  // namespace zero::ops

// Helpers for the tests of the GPT's kernels in BF16 and F16 (the *_half_test.cpp files
// of this folder): conversions, random inputs already rounded to a 16-bit format, and
// the comparison every such test makes.
//
// Note [Testing a 16-bit kernel against FP32]
// A 16-bit kernel loads its inputs into float, computes as the FP32 kernel does and
// rounds each output once. So the reference is the FP32 CPU kernel run on the *rounded*
// inputs (converted back to F32 exactly), and the 16-bit result must be that reference
// rounded to the format: within half a unit in the last place, u|want| with u = 2^-8
// (BF16) or 2^-11 (F16). Not bit for bit, even on the CPU: the compiler fuses a
// multiply and an add into one FMA in some instantiations of a loop and not in others,
// so the float before the rounding can differ in its last bit, and a value next to a
// rounding midpoint then rounds to the other neighbour. On CUDA the FP32 arithmetic
// differs more (float instead of double accumulators, another order): the tolerance
// there is one unit in the last place, 2u|want|. Both add an absolute term far below
// u for results that cancel to near zero (a fraction of max |want|) and F16's
// subnormal spacing. An FP16 result computed in BF16, or any 16-bit accumulation,
// misses these bounds by a wide margin.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "zero/core/tensor.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::testing {

// The two 16-bit float types every half test runs.
inline constexpr DataType kHalfTypes[] = {DataType::BF16, DataType::F16};

// Round-to-nearest-even's relative error bound u: 2^-8 for BF16, 2^-11 for F16.
inline double unit_roundoff(DataType dtype) {
  return dtype == DataType::BF16 ? 0x1p-8 : dtype == DataType::F16 ? 0x1p-11 : 0x1p-24;
}

// `t` converted to `dtype` on `device`.
inline Tensor as(const Tensor& t, DataType dtype, Device device) {
  const Tensor src = t.To(device);
  Tensor out = Tensor::Empty(src.sizes(), TensorOption().WithDtype(dtype).OnDevice(device));
  ops::convert(src, out);
  return out;
}

// `t` converted to `dtype` on its own device.
inline Tensor as(const Tensor& t, DataType dtype) { return as(t, dtype, t.device()); }

// `t` as F32 on the CPU (exact from any float dtype).
inline Tensor cpu_f32(const Tensor& t) { return as(t, DataType::F32, Device::Cpu()); }

// Standard normal values times `scale`, rounded to `dtype`, as F32 on the CPU: inputs
// that the 16-bit kernel and the FP32 reference both hold exactly.
inline Tensor rounded_randn(const Shape& sizes, DataType dtype, uint64_t seed,
                            float scale = 1.0f) {
  Generator gen(seed);
  const Tensor x = Tensor::Randn(sizes, TensorOption(), &gen);
  ops::binary_scalar(ops::BinaryOp::kMul, x, scale, x);
  return cpu_f32(as(x, dtype));
}

// An empty tensor of `sizes`, `dtype`, on `device`.
inline Tensor empty(const Shape& sizes, DataType dtype, Device device) {
  return Tensor::Empty(sizes, TensorOption().WithDtype(dtype).OnDevice(device));
}

// Expects the 16-bit (or F32) result `got` to be the FP32 reference `want` rounded to
// got's dtype: within half an ulp on the CPU and one ulp on CUDA, plus `atol_fraction`
// of max |want| (Note [Testing a 16-bit kernel against FP32]).
inline void expect_rounded_from(const Tensor& got, const Tensor& want,
                                double atol_fraction = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const DataType dtype = got.dtype();
  const std::vector<float> g = cpu_f32(got).ToVector<float>();
  const std::vector<float> w = cpu_f32(want).ToVector<float>();
  double scale = 0.0;
  for (float v : w) scale = std::max(scale, std::fabs(static_cast<double>(v)));
  const double u = unit_roundoff(dtype);
  const double rtol = got.device().is_cpu() ? u * (1.0 + 0x1p-8) : 2.0 * u;
  const double atol = atol_fraction * scale + (dtype == DataType::F16 ? 0x1p-25 : 0.0);
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double err = std::fabs(static_cast<double>(g[i]) - w[i]);
    const bool ok = err <= rtol * std::fabs(static_cast<double>(w[i])) + atol ||
                    (std::isnan(g[i]) && std::isnan(w[i])) || (std::isinf(w[i]) && g[i] == w[i]);
    if (!ok && reported++ < 8) {
      ADD_FAILURE() << to_string(dtype) << " element " << i << ": got " << g[i]
                    << ", FP32 reference " << w[i] << " (error " << err << ", tolerance "
                    << rtol * std::fabs(static_cast<double>(w[i])) + atol << ")";
    }
  }
}

}  // namespace zero::testing

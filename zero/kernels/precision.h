/// @file
/// How an FP32 matrix product is computed on CUDA: the public precision switch.
///
/// Inputs and outputs are FP32 in every mode; what changes is the arithmetic inside
/// cuBLAS and inside the fused attention's tile products. The default is IEEE FP32
/// (cuBLAS SGEMM, attention on FP32 fused multiply-adds), as PyTorch computes FP32 with
/// TF32 off. The faster modes are opt-in and named for what they do:
///
/// | `MX_FAST_MATMUL`  | MatmulPrecision | inside                                       |
/// |-------------------|-----------------|----------------------------------------------|
/// | unset, `0`, `ieee`| kIeee           | FP32 multiply-adds (cuBLAS SGEMM)            |
/// | `3xtf32`          | kSplitTf32      | three TF32 Tensor-Core products per product  |
/// | `tf32`            | kTf32           | one TF32 product (10-bit mantissa operands)  |
/// | `1`, `fp16`       | kFp16           | FP16 Tensor Cores (GEMMs), TF32 (attention)  |
///
/// Chapter 07 measures the speed and error of each mode; tools/torch_reference.py
/// compares a whole GPT step in each against a float64 model. The CPU always computes
/// in FP32. The environment variable is read once per process; set_matmul_precision
/// and ScopedMatmulPrecision replace it in-process (benchmarks and tests that compare
/// the modes in one run).
#pragma once

#include <string>

namespace zero {

/// The arithmetic of an FP32 GEMM or attention product on CUDA.
enum class MatmulPrecision {
  kIeee,       ///< FP32 fused multiply-adds: the default.
  kSplitTf32,  ///< Each operand as a TF32 part plus the TF32 rounding of the rest: 3 products.
  kTf32,       ///< One TF32 Tensor-Core product; about 1e-3 relative error.
  kFp16,       ///< GEMM operands rounded to FP16 (FP32 accumulation); attention as kTf32.
};

/// The precision in force: the one set in-process if any, else `MX_FAST_MATMUL`.
/// @throws zero::Error naming the accepted values if the variable holds another.
MatmulPrecision matmul_precision();

/// Sets the precision for this process from now on (all threads), in place of the
/// environment variable.
void set_matmul_precision(MatmulPrecision precision);

/// Goes back to the environment variable's choice.
void clear_matmul_precision();

/// Parses a value of `MX_FAST_MATMUL` ("", "0", "ieee", "3xtf32", "tf32", "1", "fp16").
/// @throws zero::Error naming the accepted values for any other.
MatmulPrecision parse_matmul_precision(const std::string& value);

/// The canonical name of a precision: "ieee", "3xtf32", "tf32" or "fp16".
const char* matmul_precision_name(MatmulPrecision precision);

/// Sets a precision for the lifetime of the guard, then restores what was in force
/// before (an in-process setting, or the environment's choice).
class ScopedMatmulPrecision {
 public:
  /// Sets `precision` until destruction.
  explicit ScopedMatmulPrecision(MatmulPrecision precision);
  /// Restores the previous setting.
  ~ScopedMatmulPrecision();
  ScopedMatmulPrecision(const ScopedMatmulPrecision&) = delete;
  ScopedMatmulPrecision& operator=(const ScopedMatmulPrecision&) = delete;

 private:
  int previous_;  // the previous in-process setting, -1 for none
};

/// True when GPU `device` has TF32 Tensor Cores (sm_80 or newer), which kSplitTf32
/// and kTf32 need. False in a build without CUDA.
bool tf32_supported(int device);

}  // namespace zero

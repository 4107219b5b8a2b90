/// @file
/// The arithmetic inside an FP32 GEMM on CUDA, as `MX_FAST_MATMUL` chooses it.
///
/// Inputs and outputs stay FP32 in every mode; what changes is how cuBLAS (and the
/// fused attention's tile products) multiply: exact FP32, one TF32 product, or FP16
/// Tensor Cores. The CPU always computes in FP32. Chapter 07 measures each mode.
#pragma once

namespace zero::ops {

/// The GEMM modes, named by the values of `MX_FAST_MATMUL` that select them.
enum class MatmulMode {
  kSplit,  ///< unset or `0`: exact; large GEMMs as split TF32 (three TF32 products).
  kIeee,   ///< `ieee`: cuBLAS SGEMM on the FP32 units.
  kTf32,   ///< `tf32`: one TF32 product (inputs rounded to a 10-bit mantissa).
  kFp16,   ///< `1` or `fp16`: operands rounded to FP16, FP32 accumulation and output.
};

/// The mode in force: the override while one is set, else `MX_FAST_MATMUL`, read once
/// per process. @throws zero::Error naming the accepted values for any other value.
MatmulMode matmul_mode();

/// Overrides `MX_FAST_MATMUL` for this process from now on ("0", "ieee", "1"/"fp16",
/// "tf32"); nullptr goes back to the environment's choice. For benchmarks and tests
/// that compare the modes in one run (chapter 07); programs set the variable instead.
void set_matmul_mode_override(const char* mode);

/// True when GPU `device` has TF32 Tensor Cores (sm_80 or newer), so exact mode can run
/// large GEMMs as split TF32. False in a build without CUDA.
bool split_tf32_supported(int device);

}  // namespace zero::ops

// CUDA kernels behind tensor_ops.h (private to the library). Arguments arrive
// checked by the dispatch functions: same device, fitting shapes and dtypes.
// Each family lives in one .cu file under kernels/cuda/; a build without CUDA
// links no_cuda/kernels.cpp instead, whose definitions throw.
#pragma once

#include "zero/kernels/tensor_ops.h"

namespace zero::ops {

void binary_cuda(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out);
void binary_scalar_cuda(BinaryOp op, const Tensor& a, float s, const Tensor& out, bool scalar_first);
void unary_cuda(UnaryOp op, const Tensor& x, const Tensor& out);
void unary_backward_cuda(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                        const Tensor& grad_x);
void fill_cuda(const Tensor& out, float value);
void arange_cuda(const Tensor& out, double start, double step);
void rand_uniform_cuda(const Tensor& out, uint64_t seed, uint64_t offset);
void rand_normal_cuda(const Tensor& out, uint64_t seed, uint64_t offset);
void copy_cuda(const Tensor& src, const Tensor& dst);
void sum_cuda(const Tensor& x, int dim, const Tensor& out);
void sum_all_cuda(const Tensor& x, const Tensor& out);
void mean_cuda(const Tensor& x, int dim, const Tensor& out);
void mean_all_cuda(const Tensor& x, const Tensor& out);
void max_cuda(const Tensor& x, int dim, const Tensor& values, const Tensor& indices);
void max_all_cuda(const Tensor& x, const Tensor& value, const Tensor& index);
void max_backward_cuda(const Tensor& grad_values, const Tensor& indices, int dim,
                       const Tensor& grad_x);
void softmax_forward_cuda(const Tensor& x, const Tensor& y);
void softmax_backward_cuda(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x);
void log_softmax_forward_cuda(const Tensor& x, const Tensor& y);
void log_softmax_backward_cuda(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x);
void matmul_cuda(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate = false);
// Overrides MX_FAST_MATMUL for this process from now on ("0", "ieee", "1"/"fp16", "tf32");
// nullptr goes back to the environment's choice. Only for benchmarks that compare the
// modes in one run (chapter 07); everything else sets the environment variable.
void set_matmul_mode_override(const char* mode);
// True when GPU `device` has TF32 Tensor Cores (sm_80+), so exact mode can run large
// GEMMs as split TF32 (Note [FP32 GEMMs on TF32 Tensor Cores], split_tf32.cuh).
bool split_tf32_supported(int device);
void layer_norm_forward_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                            const Tensor& y, const Tensor& mean, const Tensor& rstd);
void layer_norm_backward_cuda(const Tensor& grad_y, const Tensor& x, const Tensor& weight,
                             const Tensor& mean, const Tensor& rstd, const Tensor& grad_x,
                             const Tensor& grad_weight, const Tensor& grad_bias);
void embedding_forward_cuda(const Tensor& weight, const Tensor& ids, const Tensor& out);
void embedding_backward_cuda(const Tensor& grad_out, const Tensor& ids, const Tensor& grad_weight);
void cross_entropy_forward_cuda(const Tensor& logits, const Tensor& targets, int ignore_index,
                               const Tensor& loss, const Tensor& lse);
void cross_entropy_backward_cuda(const Tensor& logits, const Tensor& targets, const Tensor& lse,
                                const Tensor& grad_loss, int ignore_index,
                                const Tensor& grad_logits);
void dropout_forward_cuda(const Tensor& x, float p, uint64_t seed, uint64_t offset, const Tensor& y);
void dropout_backward_cuda(const Tensor& grad_y, float p, uint64_t seed, uint64_t offset,
                          const Tensor& grad_x);
void masked_fill_cuda(const Tensor& x, const Tensor& mask, float value, const Tensor& out);
void concat_cuda(const std::vector<Tensor>& inputs, int dim, const Tensor& out);
void adamw_update_cuda(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v,
                      const AdamWParams& hp);

// Fused ops (linear.cpp, attention.cpp, linear_cross_entropy.cpp dispatch to these).
void linear_forward_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias,
                         const Tensor& out);
void linear_backward_params_cuda(const Tensor& grad_out, const Tensor& x,
                                 const Tensor& grad_weight, const Tensor& grad_bias);
void attention_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                            float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out,
                            const Tensor& lse);
void attention_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                             const Tensor& lse, const Tensor& grad_out, bool causal, float dropout_p,
                             uint64_t seed, uint64_t offset, const Tensor& grad_q, const Tensor& grad_k,
                             const Tensor& grad_v);
void cross_entropy_count_cuda(const Tensor& targets, int ignore_index, int64_t vocab,
                              const Tensor& count);
void cross_entropy_chunk_forward_cuda(const Tensor& logits, const Tensor& targets, int ignore_index,
                                     const Tensor& count, const Tensor& lse, const Tensor& loss);
void cross_entropy_chunk_backward_cuda(const Tensor& logits, const Tensor& targets,
                                      const Tensor& lse, const Tensor& grad_loss,
                                      const Tensor& count, int ignore_index,
                                      const Tensor& transposed);

}  // namespace zero::ops

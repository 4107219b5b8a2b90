// The *_cuda kernel entry points of a CPU-only build (-DZERO_CUDA=OFF or no CUDA
// toolkit): the dispatch functions still name them, so they must exist, but
// nothing reaches them, since no CUDA tensor can be made in such a build
// (no_cuda/device.cpp refuses). Each throws the same clear error anyway.
#include "zero/kernels/cuda/cuda_ops.h"

namespace zero::ops {
namespace {

[[noreturn]] void no_cuda_kernel(const char* op) {
  ZERO_CHECK(false, op, ": Zero was built without CUDA; rebuild with -DZERO_CUDA=ON");
  __builtin_unreachable();
}

}  // namespace

void binary_cuda(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out) { no_cuda_kernel("binary"); }
void binary_scalar_cuda(BinaryOp op, const Tensor& a, float s, const Tensor& out, bool scalar_first) { no_cuda_kernel("binary_scalar"); }
void unary_cuda(UnaryOp op, const Tensor& x, const Tensor& out) { no_cuda_kernel("unary"); }
void unary_backward_cuda(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) { no_cuda_kernel("unary_backward"); }
void fill_cuda(const Tensor& out, float value) { no_cuda_kernel("fill"); }
void arange_cuda(const Tensor& out, double start, double step) { no_cuda_kernel("arange"); }
void rand_uniform_cuda(const Tensor& out, uint64_t seed, uint64_t offset) { no_cuda_kernel("rand_uniform"); }
void rand_normal_cuda(const Tensor& out, uint64_t seed, uint64_t offset) { no_cuda_kernel("rand_normal"); }
void copy_cuda(const Tensor& src, const Tensor& dst) { no_cuda_kernel("copy"); }
void sum_cuda(const Tensor& x, int dim, const Tensor& out) { no_cuda_kernel("sum"); }
void sum_all_cuda(const Tensor& x, const Tensor& out) { no_cuda_kernel("sum_all"); }
void mean_cuda(const Tensor& x, int dim, const Tensor& out) { no_cuda_kernel("mean"); }
void mean_all_cuda(const Tensor& x, const Tensor& out) { no_cuda_kernel("mean_all"); }
void max_cuda(const Tensor& x, int dim, const Tensor& values, const Tensor& indices) { no_cuda_kernel("max"); }
void max_all_cuda(const Tensor& x, const Tensor& value, const Tensor& index) { no_cuda_kernel("max_all"); }
void max_backward_cuda(const Tensor& grad_values, const Tensor& indices, int dim, const Tensor& grad_x) { no_cuda_kernel("max_backward"); }
void softmax_forward_cuda(const Tensor& x, const Tensor& y) { no_cuda_kernel("softmax_forward"); }
void softmax_backward_cuda(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) { no_cuda_kernel("softmax_backward"); }
void log_softmax_forward_cuda(const Tensor& x, const Tensor& y) { no_cuda_kernel("log_softmax_forward"); }
void log_softmax_backward_cuda(const Tensor& y, const Tensor& grad_y, const Tensor& grad_x) { no_cuda_kernel("log_softmax_backward"); }
void layer_norm_forward_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, const Tensor& y, const Tensor& mean, const Tensor& rstd) { no_cuda_kernel("layer_norm_forward"); }
void layer_norm_backward_cuda(const Tensor& grad_y, const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd, const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias) { no_cuda_kernel("layer_norm_backward"); }
void embedding_forward_cuda(const Tensor& weight, const Tensor& ids, const Tensor& out) { no_cuda_kernel("embedding_forward"); }
void embedding_backward_cuda(const Tensor& grad_out, const Tensor& ids, const Tensor& grad_weight) { no_cuda_kernel("embedding_backward"); }
void cross_entropy_forward_cuda(const Tensor& logits, const Tensor& targets, int ignore_index, const Tensor& loss, const Tensor& lse) { no_cuda_kernel("cross_entropy_forward"); }
void cross_entropy_backward_cuda(const Tensor& logits, const Tensor& targets, const Tensor& lse, const Tensor& grad_loss, int ignore_index, const Tensor& grad_logits) { no_cuda_kernel("cross_entropy_backward"); }
void dropout_forward_cuda(const Tensor& x, float p, uint64_t seed, uint64_t offset, const Tensor& y) { no_cuda_kernel("dropout_forward"); }
void dropout_backward_cuda(const Tensor& grad_y, float p, uint64_t seed, uint64_t offset, const Tensor& grad_x) { no_cuda_kernel("dropout_backward"); }
void masked_fill_cuda(const Tensor& x, const Tensor& mask, float value, const Tensor& out) { no_cuda_kernel("masked_fill"); }
void concat_cuda(const std::vector<Tensor>& inputs, int dim, const Tensor& out) { no_cuda_kernel("concat"); }
void adamw_update_cuda(const Tensor& param, const Tensor& grad, const Tensor& m, const Tensor& v, const AdamWParams& hp) { no_cuda_kernel("adamw_update"); }
void matmul_cuda(const Tensor&, const Tensor&, const Tensor&, bool) { no_cuda_kernel("matmul"); }
void linear_forward_cuda(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out) { no_cuda_kernel("linear_forward"); }
void linear_backward_params_cuda(const Tensor& grad_out, const Tensor& x, const Tensor& grad_weight, const Tensor& grad_bias) { no_cuda_kernel("linear_backward_params"); }
void attention_forward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, float dropout_p, uint64_t seed, uint64_t offset, const Tensor& out, const Tensor& lse) { no_cuda_kernel("attention_forward"); }
void attention_backward_cuda(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse, const Tensor& grad_out, bool causal, float dropout_p, uint64_t seed, uint64_t offset, const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v) { no_cuda_kernel("attention_backward"); }
void cross_entropy_count_cuda(const Tensor& targets, int ignore_index, int64_t vocab, const Tensor& count) { no_cuda_kernel("cross_entropy_count"); }
void cross_entropy_chunk_forward_cuda(const Tensor& logits, const Tensor& targets, int ignore_index, const Tensor& count, const Tensor& lse, const Tensor& loss) { no_cuda_kernel("cross_entropy_chunk_forward"); }
void cross_entropy_chunk_backward_cuda(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int, const Tensor&) { no_cuda_kernel("cross_entropy_chunk_backward"); }

// Without CUDA there is no GEMM mode to override; accepting the call keeps tests and
// chapters that sweep the modes buildable on a CPU-only machine.
void set_matmul_mode_override(const char* mode) {}
bool split_tf32_supported(int device) { return false; }

}  // namespace zero::ops

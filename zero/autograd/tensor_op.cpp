// TensorOp::Apply (recording) and the bookkeeping the engine relies on.
#include "zero/autograd/tensor_op.h"

#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/autograd/profiler.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::autograd {

// Note [Edges without values]
// An op keeps its inputs, and through them the graph below it; but a kept input also
// keeps its buffer alive until the backward, whether or not the backward reads it. In a
// GPT block the output of attention's c_proj is read only by the dropout after it, and
// the dropout's output only by the residual addition: neither backward reads its input
// (the dropout remakes its mask from the seed), yet kept as inputs those two tensors,
// [B, T, C] each, and the MLP's two like them, would live through the whole forward:
// about 300 MB for the char model in BF16, a fifth of its peak. So an op says which
// inputs its backward reads (KeepsInput_), and for the others Apply keeps an edge: a
// tensor with the input's metadata, producer and output index but no buffer. The
// engine needs nothing more to route a gradient, and there is no value whose in-place
// change could make the gradient wrong, so its version is not checked. A leaf is always
// kept whole: the engine writes its .grad. (PyTorch's autograd nodes likewise hold edges
// to their inputs' producers, and save only the tensors their backward reads.)
namespace {

// `t`'s place in the graph without its values: its metadata, producer and output index.
Tensor edge_of(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>();
  impl->meta = t.meta();
  impl->grad_fn = t.grad_fn();
  impl->output_index = t.impl()->output_index;
  return Tensor(std::move(impl));
}

}  // namespace

// Whether `producer` recomputes `t`, one of its outputs, as it is: not a view of it
// (a recomputation is a new contiguous tensor).
bool TensorOp::remade_whole(const Tensor& t, const TensorOp& producer) {
  const size_t k = static_cast<size_t>(t.impl()->output_index);
  return producer.RecomputesOutput_(k) && k < producer.output_metas_.size() &&
         t.is_contiguous() && t.meta().offset == 0 &&
         t.sizes() == producer.output_metas_[k].sizes;
}

// Note [Recomputed inputs]
// Some activations are cheap to make again and costly to keep. A LayerNorm's output is
// read by the Linear or MLP after it, whose backward needs it for the weight gradient,
// so kept it lives from the forward to that backward: two [B, T, C] tensors a block,
// for the char model in FP32 300 MB, an eighth of its peak. Yet the LayerNorm keeps
// its own input and statistics anyway for its backward, and one pass over a row remakes
// the output. So a producer may say that it recomputes an output (RecomputesOutput_);
// a consumer that would keep that output keeps its edge instead (as in Note [Edges
// without values]), and RunBackward has the producer compute it again from its kept
// inputs just before the consumer's backward, then drops it after. The producer's
// backward always runs after its consumers', so its inputs are still there; its
// version check runs first, so an input changed in place since the forward is an error
// here as it would be in its own backward. The recomputation must give the same bits
// as the forward did, which a LayerNorm's kernels do (one pass per row, no atomics).
// This is the trade PyTorch's activation checkpointing makes for whole blocks, made for
// one op.

std::vector<Tensor> TensorOp::Apply(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outputs;
  {
    NoGradGuard no_grad;  // ops used inside OpValue_ must not record themselves
    profiler::Scope scope(name(), "forward");
    outputs = OpValue_(inputs);
  }
  if (!GradMode::enabled()) return outputs;
  bool any = false;
  std::vector<bool> needs(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    needs[i] = inputs[i].defined() && inputs[i].requires_grad();
    any = any || needs[i];
  }
  if (!any) return outputs;
  inputs_.clear();
  input_versions_.clear();
  recomputed_.assign(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const TensorOp* producer = t.defined() ? t.grad_fn().get() : nullptr;
    recomputed_[i] = producer != nullptr && KeepsInput_(i) && remade_whole(t, *producer);
    const bool edge = producer != nullptr && (!KeepsInput_(i) || recomputed_[i]);
    inputs_.push_back(edge ? edge_of(t) : t);
    input_versions_.push_back(t.defined() && !edge ? t.node()->version() : 0);
  }
  needs_grad_ = std::move(needs);
  output_metas_.clear();
  output_versions_.clear();
  for (size_t k = 0; k < outputs.size(); ++k) {
    output_versions_.emplace_back(outputs[k].node(), outputs[k].node()->version());
    TensorImpl* impl = outputs[k].impl();
    ZERO_ASSERT(impl->grad_fn == nullptr, name(), " returned an output that already has a grad_fn");
    output_metas_.push_back(impl->meta);
    // Integer outputs (indices, counts) carry no gradient.
    if (!is_floating_point(impl->meta.dtype)) continue;
    impl->grad_fn = shared_from_this();
    impl->output_index = static_cast<int>(k);
  }
  return outputs;
}

// Note [Version counter]
// Backward_ reads what the forward saw: its inputs (inputs()) and, in many ops, its own
// output saved detached (OpExp keeps exp(x)). If one of them is written in place between
// the forward and the backward (Fill_, CopyFrom_, an optimiser step, or a write through a
// Detach() or another view of the same buffer), the gradient comes out silently wrong. So
// every buffer counts its in-place writes (TensorNode::version), Apply notes the version of
// each input's and output's buffer, and RunBackward refuses to run if any moved, naming the
// op. The count is per buffer, not per view: a write through any view of a buffer changes
// every tensor on it. (PyTorch keeps the same counter, shared by a tensor and its views.)
void TensorOp::CheckVersions() const {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!inputs_[i].defined() || inputs_[i].node() == nullptr) continue;  // none, or an edge
    const uint64_t now = inputs_[i].node()->version();
    ZERO_CHECK(now == input_versions_[i], name(), "'s input ", i, " (shape ",
               shape_to_string(inputs_[i].sizes()), ") was modified in place after ", name(),
               " used it (version ", input_versions_[i], " then, ", now, " now), so its gradients "
               "would be wrong; update a copy (Contiguous() or Clone) instead, or call Backward() "
               "before the update");
  }
  for (size_t k = 0; k < output_versions_.size(); ++k) {
    const std::shared_ptr<TensorNode> node = output_versions_[k].first.lock();
    if (!node) continue;  // the output is gone, so nothing can have changed it since
    ZERO_CHECK(node->version() == output_versions_[k].second, "the output ", k, " of ", name(),
               " was modified in place after it was computed (version ",
               output_versions_[k].second, " then, ", node->version(), " now), so the gradients "
               "through it would be wrong; update a copy of it instead");
  }
}

const Tensor& TensorOp::grad_so_far(size_t i) const {
  static const Tensor kNone;
  return i < so_far_.size() ? so_far_[i] : kNone;
}

const Tensor& TensorOp::grad_column_sums(size_t i) const {
  static const Tensor kNone;
  return i < column_sums_.size() ? column_sums_[i] : kNone;
}

std::vector<Tensor> TensorOp::RunBackward(const std::vector<Tensor>& grad_outputs,
                                          std::vector<Tensor> so_far,
                                          std::vector<Tensor> column_sums) {
  ZERO_CHECK(!released_, "the graph through ", name(), " was freed by an earlier Backward(); "
             "pass keep_graph=true to the first Backward() to run backward twice");
  CheckVersions();
  for (size_t i = 0; i < inputs_.size(); ++i) {  // Note [Recomputed inputs]
    if (!recomputed_[i]) continue;
    const Tensor value = inputs_[i].grad_fn()->Recompute(inputs_[i].impl()->output_index);
    auto impl = std::make_shared<TensorImpl>(*inputs_[i].impl());  // the edge's place
    impl->node = value.impl()->node;
    impl->meta = value.meta();
    inputs_[i] = Tensor(std::move(impl));
  }
  std::vector<Tensor> grads;
  {
    profiler::Scope scope(name(), "backward");
    so_far_ = std::move(so_far);
    column_sums_ = std::move(column_sums);
    grads = Backward_(grad_outputs);
    so_far_.clear();
    column_sums_.clear();
  }
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (recomputed_[i]) inputs_[i] = edge_of(inputs_[i]);  // the value goes with this backward
  }
  ZERO_ASSERT(grads.size() == inputs_.size(), name(), " returned ", grads.size(),
              " gradients for ", inputs_.size(), " inputs");
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!needs_grad_[i] || !grads[i].defined()) continue;
    ZERO_ASSERT(grads[i].sizes() == inputs_[i].sizes(), name(), " gave input ", i,
                " a gradient of shape ", shape_to_string(grads[i].sizes()), ", expected ",
                shape_to_string(inputs_[i].sizes()));
    // A gradient has its input's dtype: a 16-bit activation gets a 16-bit gradient, and
    // only a cast moves a gradient from one dtype to another, by its backward or by the
    // engine passing a gradient of grad_dtype() past it.
    ZERO_ASSERT(grads[i].dtype() == inputs_[i].dtype() ||
                    grads[i].dtype() == grad_dtype(inputs_[i]),
                name(), " gave input ", i, " a gradient of dtype ", to_string(grads[i].dtype()),
                ", expected ", to_string(inputs_[i].dtype()));
  }
  return grads;
}

// Note [Destroying deep graphs]
// An op owns its inputs, each input owns the op that produced it, and so on down to
// the leaves. Destroying that chain naively recurses once per op, and a graph of a
// few hundred thousand ops (a long unrolled loop that is never differentiated)
// overflows the stack. Instead, an op being destroyed takes its producers into a
// local list and drops its inputs; a producer whose last owner is that list has its
// own inputs taken the same way before it dies, so each dies with no inputs left.
// (Tensors an op saves as members are dropped normally: ops save outputs detached,
// and reach their inputs through inputs().)
TensorOp::~TensorOp() {
  std::vector<std::shared_ptr<TensorOp>> pending;
  auto take_producers = [&pending](std::vector<Tensor>& inputs) {
    for (const Tensor& t : inputs) {
      if (t.defined() && t.grad_fn() != nullptr) pending.push_back(t.grad_fn());
    }
    inputs.clear();
  };
  take_producers(inputs_);
  while (!pending.empty()) {
    std::shared_ptr<TensorOp> op = std::move(pending.back());
    pending.pop_back();
    if (op.use_count() == 1) take_producers(op->inputs_);
  }
}

Tensor TensorOp::Recompute(size_t k) {
  ZERO_CHECK(!released_, "the graph through ", name(), " was freed by an earlier Backward(), "
             "and an op after it needs its output again; pass keep_graph=true to the first "
             "Backward() to run backward twice");
  CheckVersions();
  NoGradGuard no_grad;
  profiler::Scope scope(name(), "recompute");
  return OpValue_(inputs_).at(k);
}

void TensorOp::Release() {
  inputs_.clear();
  so_far_.clear();
  column_sums_.clear();
  ReleaseSaved_();
  released_ = true;
}

DataType grad_dtype(const Tensor& input) {
  const TensorOp* producer = input.defined() ? input.grad_fn().get() : nullptr;
  if (producer != nullptr && producer->is_cast() && producer->needs_grad(0) &&
      !producer->inputs().empty() && producer->inputs()[0].dtype() == DataType::F32) {
    return DataType::F32;
  }
  return input.dtype();
}

Tensor sum_to_shape(const Tensor& grad, const Shape& shape) {
  if (grad.sizes() == shape) return grad;
  Tensor g = grad;
  const int lead = g.dim() - static_cast<int>(shape.size());
  ZERO_ASSERT(lead >= 0, "cannot reduce shape ", shape_to_string(grad.sizes()), " to ",
              shape_to_string(shape));
  for (int d = 0; d < lead; ++d) g = sum(g, 0, /*keepdim=*/false);
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (shape[d] == 1 && g.size(d) != 1) g = sum(g, d, /*keepdim=*/true);
  }
  return g;
}

}  // namespace zero::autograd

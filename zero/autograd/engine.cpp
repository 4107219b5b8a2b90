// The backward engine: Tensor::Backward().
//
// 1. Collect the ops reachable from the root through grad_fn/inputs, in topological
//    order (an op after every op that consumes its outputs, reversed).
// 2. Walk them from the root: gather each op's output gradients from its slots,
//    call its Backward_, and send each input gradient to that input's slot: the
//    slot (op, output index) of the op that produced the input, or the leaf's .grad.
// 3. A slot adopts the first gradient it receives and adds later ones, so a tensor
//    used twice gets the sum. Leaves accumulate across Backward() calls.
// 4. Unless keep_graph, each op releases its inputs and saved tensors once used.
// 5. With a LeafGradHook installed (leaf_grad_hook.h), each leaf is announced right
//    after the last op that sends it a gradient: known in advance from the order.
// 6. A gradient in the dtype a cast was made from goes past the cast to its input
//    (Note [Gradients past a cast]).
//
// Note [Gradients past a cast]
// A model computing in BF16 casts each FP32 parameter (Note [Cached casts] in
// cast_cache.cpp), and the cast's backward converts the parameter's BF16 gradient back
// into FP32: one kernel per parameter, 149 for GPT-2, and a gradient that the GEMM made
// as an FP32 sum rounded to BF16 on the way. The ops that make parameter
// gradients (Linear, the MLP, LayerNorm, embedding, the head's cross-entropy) can write
// them in FP32 straight from their FP32 sums, and do when `grad_dtype` says the input is
// a cast of an FP32 tensor. Such a gradient, of the cast's input dtype rather than its
// own, goes to the cast's input's slot (or .grad) here, as the cast's backward would
// have sent it. The cast still runs its backward if some other op gave it a gradient of
// its own dtype; if none did, it is skipped, and only announces its leaf to the hook.
// PyTorch's autocast, whose casts are ordinary ops, converts every weight's gradient.
//
// Note [Sums made by the op]
// In a GPT block the residual stream x feeds both a LayerNorm and the addition after the
// block's attention or MLP: x + f(LayerNorm(x)). The addition's backward runs first and
// gives x's slot its gradient g; the LayerNorm's backward runs last, and its gradient
// for x would then be added to g in a pass of its own, three [N, C] tensors read or
// written, 24 times a GPT-2 step. An op whose `AddsGradSoFar(i)` is true instead gets
// the gradient input i has so far (taken out of the slot, which then adopts what the op
// returns), and its kernel adds it while it writes its own: one tensor read. Slots of
// inputs made by ops other than casts are handed over, and a leaf's .grad (reached
// directly or past a cast) when this pass made it and nothing else holds it: GPT-2's
// embedding table gets its first gradient from the tied output head, and the embedding's
// backward adds its rows into that, instead of zeroing a 154 MB table, adding to it, and
// adding the two tables in a pass of their own. llm.c's layernorm_backward does the same
// by adding into the residual's gradient buffer.
// Note [Column sums made by the consumer]
// A Linear's bias gradient is the column sum of its output's gradient, a pass over an
// [N, C] tensor of its own (two launches: partial sums, then their sum). In a GPT block
// that gradient is written whole by one kernel: the LayerNorm's backward, which adds the
// sum so far (above) and is the last op to give the Linear's output a gradient. It already
// keeps per-block column sums of its rows for its own weight and bias; one more set, of
// the values it writes, gives the Linear's bias gradient in the same pass and the same
// final launch. So before an op runs its backward, for each input i it `SumsGradColumns`
// of and `AddsGradSoFar` to, the engine asks the input's producer for a buffer
// (`ColumnSumsOfGrad`), but only when this op is the last one in the order to read that
// output, reads it once, and no cast reads it (a gradient could reach it past the cast
// later): only then is the gradient the op returns the output's whole gradient. The
// producer keeps the buffer and uses it as its bias gradient. llm.c computes each bias
// gradient in a kernel of its own.
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/autograd/leaf_grad_hook.h"
#include "zero/autograd/profiler.h"
#include "zero/autograd/tensor_op.h"

namespace zero {
namespace {

using autograd::TensorOp;

// Ops reachable from `root`, each after all ops that consume its outputs.
std::vector<TensorOp*> topological_order(TensorOp* root) {
  std::vector<TensorOp*> order;
  std::unordered_set<TensorOp*> seen{root};
  // Iterative post-order DFS (a deep GPT graph would overflow a recursive one).
  std::vector<std::pair<TensorOp*, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [op, next] = stack.back();
    if (next < op->inputs().size()) {
      const Tensor& input = op->inputs()[next++];
      if (!input.defined()) continue;
      TensorOp* producer = input.grad_fn().get();
      if (producer != nullptr && seen.insert(producer).second) stack.push_back({producer, 0});
    } else {
      order.push_back(op);
      stack.pop_back();
    }
  }
  return {order.rbegin(), order.rend()};  // post-order reversed: consumers first
}

// Each output (producer, index) that ops in `order` read, with the position of the last
// op that reads it; SIZE_MAX where an op reads it twice or a cast reads it (Note [Column
// sums made by the consumer]).
using Readers = std::map<std::pair<const TensorOp*, size_t>, size_t>;
Readers last_readers(const std::vector<TensorOp*>& order) {
  Readers last;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const TensorOp* op = order[pos];
    for (const Tensor& input : op->inputs()) {
      if (!input.defined() || input.grad_fn() == nullptr) continue;
      const auto key = std::make_pair(input.grad_fn().get(), input.impl()->output_index);
      const auto [it, first] = last.emplace(key, pos);
      const bool twice = !first && (it->second == pos || it->second == SIZE_MAX);
      it->second = twice || op->is_cast() ? SIZE_MAX : pos;
    }
  }
  return last;
}

// Adds `grad` into `slot`: the first gradient is adopted, later ones are summed.
void accumulate(Tensor& slot, const Tensor& grad) {
  profiler::Scope scope("backward: sum gradients");
  slot = slot.defined() ? slot + grad : grad;
}

// A leaf's .grad must be a plain contiguous tensor of its own: a gradient that is a
// broadcast view (stride 0) or aliases another tensor's buffer is copied. Ops pass
// gradients through unchanged (OpAdd gives `g` to both inputs), so a buffer is also
// copied when another tensor views it, or when it was the caller's gradient or was
// already adopted by another leaf in this pass (`taken`); otherwise an in-place
// update of one .grad (gradient clipping) would change another.
void accumulate_leaf(TensorImpl* leaf, const Tensor& grad,
                     std::unordered_set<const TensorNode*>& taken) {
  profiler::Scope scope("backward: sum gradients");
  if (leaf->grad.defined()) {
    leaf->grad = leaf->grad + grad;
    return;
  }
  const bool own = grad.is_contiguous() && grad.node().use_count() == 1 &&
                   taken.insert(grad.node().get()).second;
  leaf->grad = own ? grad : grad.Clone();
}

// For an op that adds into the gradient its input has so far: the .grad of the leaf
// that `input` is, or whose cast it is with the gradient going past the cast, when this
// pass made that .grad and nothing else holds it (it is then taken off the leaf, which
// adopts the op's sum again); otherwise none.
Tensor take_leaf_grad(const Tensor& input, std::unordered_set<const TensorNode*>& taken) {
  const TensorOp* cast = input.grad_fn().get();
  if (cast != nullptr && autograd::grad_dtype(input) == input.dtype()) return Tensor();
  const Tensor& leaf = cast != nullptr ? cast->inputs()[0] : input;
  if (!leaf.defined() || leaf.grad_fn() != nullptr) return Tensor();
  TensorImpl* impl = leaf.impl();
  const Tensor g = impl->grad;
  if (!g.defined() || g.dtype() != autograd::grad_dtype(input) || !g.is_contiguous() ||
      g.node().use_count() != 1 || taken.count(g.node().get()) == 0) {
    return Tensor();
  }
  taken.erase(g.node().get());
  impl->grad = Tensor();
  return g;
}

// The gradient of ones this thread's Backward() made for its root, while it runs.
thread_local const TensorNode* unit_root_node = nullptr;

struct UnitRoot {
  explicit UnitRoot(const TensorNode* node) : previous(unit_root_node) { unit_root_node = node; }
  ~UnitRoot() { unit_root_node = previous; }
  UnitRoot(const UnitRoot&) = delete;
  UnitRoot& operator=(const UnitRoot&) = delete;
  const TensorNode* previous;
};

}  // namespace

bool autograd::is_unit_root_gradient(const Tensor& grad) {
  return grad.defined() && unit_root_node != nullptr && grad.node().get() == unit_root_node;
}

void Tensor::Backward(const Tensor& grad, bool keep_graph) const {
  ZERO_CHECK(requires_grad(), "Backward() needs a tensor that requires grad; this one has no "
             "autograd history (did you call SetRequiresGrad() on the inputs?)");
  Tensor root_grad = grad;
  if (!root_grad.defined()) {
    ZERO_CHECK(numel() == 1, "Backward() without a gradient needs a one-element tensor (a "
               "loss), got shape ", shape_to_string(sizes()));
    root_grad = Tensor::Ones(sizes(), options());
  }
  const UnitRoot unit_root(grad.defined() ? nullptr : root_grad.node().get());
  ZERO_CHECK(root_grad.sizes() == sizes() && root_grad.device() == device() &&
                 root_grad.dtype() == dtype(),
             "Backward(grad): expected grad of shape ", shape_to_string(sizes()), " ",
             to_string(dtype()), " on ", device(), ", got ", shape_to_string(root_grad.sizes()),
             " ", to_string(root_grad.dtype()), " on ", root_grad.device());
  NoGradGuard no_grad;  // the backward itself is not recorded
  std::unordered_set<const TensorNode*> taken{root_grad.node().get()};
  if (is_leaf()) {
    accumulate_leaf(impl(), root_grad, taken);
    if (const autograd::LeafGradHook* hook = autograd::current_leaf_grad_hook()) (*hook)(*this);
    return;
  }

  std::vector<TensorOp*> order = topological_order(grad_fn().get());
  // With a hook: for each leaf, the position in `order` of the last op feeding it.
  const autograd::LeafGradHook* hook = autograd::current_leaf_grad_hook();
  std::unordered_map<const TensorImpl*, size_t> last_feed;
  for (size_t pos = 0; hook != nullptr && pos < order.size(); ++pos) {
    for (size_t i = 0; i < order[pos]->inputs().size(); ++i) {
      const Tensor& input = order[pos]->inputs()[i];
      if (order[pos]->needs_grad(i) && input.defined() && !input.grad_fn()) {
        last_feed[input.impl()] = pos;
      }
    }
  }
  const Readers readers = last_readers(order);
  std::unordered_map<TensorOp*, std::vector<Tensor>> slots;
  std::unordered_set<const TensorOp*> passed_casts;  // casts some gradient went past
  slots[grad_fn().get()].resize(grad_fn()->output_metas().size());
  slots[grad_fn().get()][impl()->output_index] = root_grad;
  // Keep every op alive while we walk: releasing one op's inputs may drop the last
  // reference to an op later in the order.
  std::vector<std::shared_ptr<TensorOp>> alive;
  alive.reserve(order.size());
  for (TensorOp* op : order) alive.push_back(op->shared_from_this());

  for (size_t pos = 0; pos < order.size(); ++pos) {
    TensorOp* op = order[pos];
    const auto own = slots.find(op);
    // A cast whose every gradient went past it has nothing to convert.
    const bool passed = passed_casts.count(op) != 0 && own == slots.end();
    std::vector<Tensor> grad_inputs;
    if (!passed) {
      std::vector<Tensor>& grad_outputs = slots[op];
      grad_outputs.resize(op->output_metas().size());
      for (size_t k = 0; k < grad_outputs.size(); ++k) {
        if (!grad_outputs[k].defined()) {
          const TensorMeta& m = op->output_metas()[k];
          profiler::Scope scope("backward: zero gradients");
          grad_outputs[k] = Tensor::Zeros(m.sizes, TensorOption{m.dtype, m.device, false});
        }
      }
      std::vector<Tensor> so_far(op->inputs().size());  // Note [Sums made by the op]
      for (size_t i = 0; i < so_far.size(); ++i) {
        const Tensor& input = op->inputs()[i];
        if (!op->needs_grad(i) || !input.defined() || !op->AddsGradSoFar(i)) continue;
        TensorOp* producer = input.grad_fn().get();
        if (producer == nullptr || producer->is_cast()) {
          if (op->AddsLeafGradSoFar(i)) so_far[i] = take_leaf_grad(input, taken);
          continue;
        }
        const auto found = slots.find(producer);
        const size_t k = input.impl()->output_index;
        if (found == slots.end() || k >= found->second.size()) continue;
        so_far[i] = found->second[k];
        found->second[k] = Tensor();  // the slot adopts what the op returns
      }
      std::vector<Tensor> sums;  // Note [Column sums made by the consumer]
      for (size_t i = 0; i < op->inputs().size(); ++i) {
        const Tensor& input = op->inputs()[i];
        if (!op->needs_grad(i) || !input.defined() || !op->AddsGradSoFar(i) ||
            !op->SumsGradColumns(i) || input.grad_fn() == nullptr) {
          continue;
        }
        TensorOp* producer = input.grad_fn().get();
        const size_t k = input.impl()->output_index;
        const auto last = readers.find({producer, k});
        if (producer->is_cast() || last == readers.end() || last->second != pos) continue;
        Tensor buffer = producer->ColumnSumsOfGrad(k);
        if (!buffer.defined()) continue;
        sums.resize(op->inputs().size());
        sums[i] = std::move(buffer);
      }
      grad_inputs = op->RunBackward(grad_outputs, so_far, sums);
      for (size_t i = 0; i < so_far.size(); ++i) {  // none returned: the sum so far goes back
        if (so_far[i].defined() && !grad_inputs[i].defined()) grad_inputs[i] = so_far[i];
      }
      slots.erase(op);
    }
    for (size_t i = 0; i < grad_inputs.size(); ++i) {
      if (!op->needs_grad(i) || !grad_inputs[i].defined()) continue;
      const Tensor* target = &op->inputs()[i];
      if (grad_inputs[i].dtype() != target->dtype()) {  // past the cast that made input i
        TensorOp* cast = target->grad_fn().get();
        passed_casts.insert(cast);
        target = &cast->inputs()[0];
      }
      const Tensor& input = *target;
      if (TensorOp* producer = input.grad_fn().get()) {
        std::vector<Tensor>& s = slots[producer];
        s.resize(producer->output_metas().size());
        accumulate(s[input.impl()->output_index], grad_inputs[i]);
      } else {
        accumulate_leaf(input.impl(), grad_inputs[i], taken);
      }
    }
    for (size_t i = 0; hook != nullptr && i < op->inputs().size(); ++i) {
      const auto last = last_feed.find(op->inputs()[i].impl());
      if (last != last_feed.end() && last->second == pos) {
        last_feed.erase(last);  // an op reading the leaf twice announces it once
        (*hook)(op->inputs()[i]);
      }
    }
    if (!keep_graph) op->Release();
  }
}

}  // namespace zero

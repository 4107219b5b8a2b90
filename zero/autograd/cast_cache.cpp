// The cache of parameter casts (cast_cache.h).
#include "zero/autograd/cast_cache.h"

#include <memory>
#include <mutex>
#include <unordered_map>

#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/autograd/ops/cast_ops.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {

// Note [Cached casts]
// A module computing in BF16 casts each FP32 parameter where its Forward uses it (Note
// [Mixed precision] in nn/module.h). Made afresh each forward, that is one small kernel
// per parameter: 149 for GPT-2 and 77 for the character model, most of them biases and
// LayerNorm weights of a few hundred elements, so the launches cost more than the
// bytes. The values only change when the optimiser writes the parameters, and AdamW can
// write the rounded copy in the same pass that updates the FP32 master (its
// `param_copy`). So the cast of a parameter keeps its values, keyed by the parameter's
// buffer, and each cast node takes them from here while they are current: made from
// the buffer's present version, and not written since themselves. A step then converts
// nothing; the first forward, and the first after any other write to a parameter (a
// checkpoint loaded, a CopyFrom_), converts as before. The graph node is the same
// OpToDtype either way, so the backward, and every bit of the result, is unchanged.
// PyTorch's autocast keeps a cache of weight casts too, but only for one autocast
// region, emptied at its end; here it lives across steps, and the version counters say
// when an entry is stale.

namespace {

struct Entry {
  std::weak_ptr<TensorNode> param;   // the buffer the values were made from
  const void* param_data = nullptr;  // where in it the parameter starts (a view may not)
  uint64_t param_version = 0;        // ... at this version
  Tensor values;                     // contiguous, detached, in the cast's dtype
  uint64_t values_version = 0;       // the values' own buffer then
  bool refreshing = false;           // handed to an update that has not finished
};

struct Cache {
  std::mutex mutex;
  std::unordered_map<const TensorNode*, Entry> entries;
  size_t inserts = 0;
};

Cache& cache() {
  static Cache c;
  return c;
}

bool current(const Entry& e, const Tensor& param, DataType dtype) {
  return !e.refreshing && e.param.lock() == param.node() && e.param_data == param.data() &&
         e.param_version == param.node()->version() && e.values.sizes() == param.sizes() &&
         e.values.dtype() == dtype && e.values.device() == param.device() &&
         e.values.node()->version() == e.values_version;
}

// Drops the entries of parameters that no longer exist, now and then, so the values of a
// model that was freed (or moved to another device) are freed too.
void sweep(Cache& c) {
  if (++c.inserts % 256 != 0) return;
  for (auto it = c.entries.begin(); it != c.entries.end();) {
    it = it->second.param.expired() ? c.entries.erase(it) : std::next(it);
  }
}

}  // namespace

Tensor cached_cast(const Tensor& param, DataType dtype) {
  if (!param.defined() || param.dtype() == dtype) return param;
  if (!param.is_leaf() || !param.is_contiguous()) return to_dtype(param, dtype);
  Cache& c = cache();
  Tensor values;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    const auto it = c.entries.find(param.node().get());
    if (it != c.entries.end() && current(it->second, param, dtype)) {
      values = it->second.values;
    }
  }
  if (!values.defined()) {
    const TensorOption options = TensorOption().WithDtype(dtype).OnDevice(param.device());
    values = Tensor::Empty(param.sizes(), options);
    {
      NoGradGuard no_grad;
      ops::convert(param, values);
    }
    std::lock_guard<std::mutex> lock(c.mutex);
    c.entries[param.node().get()] = Entry{param.node(), param.data(), param.node()->version(),
                                          values, values.node()->version(), false};
    sweep(c);
  }
  return autograd::RunOp<autograd::OpToDtype>({param}, dtype, values);
}

namespace autograd {

Tensor copy_to_refresh(const Tensor& param) {
  if (!param.defined()) return Tensor();
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  const auto it = c.entries.find(param.node().get());
  if (it == c.entries.end() || !current(it->second, param, it->second.values.dtype())) {
    return Tensor();
  }
  it->second.refreshing = true;
  return it->second.values;
}

void copy_refreshed(const Tensor& param) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  const auto it = c.entries.find(param.node().get());
  if (it == c.entries.end() || !it->second.refreshing) return;
  Entry& e = it->second;
  e.values.node()->BumpVersion();  // written in place: a graph that saved them must know
  e.param_version = param.node()->version();
  e.values_version = e.values.node()->version();
  e.refreshing = false;
}

}  // namespace autograd
}  // namespace zero

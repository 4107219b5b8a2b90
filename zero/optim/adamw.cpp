// AdamW: moments per parameter, the step on the CPU (one kernel call per tensor) and on
// CUDA (one multi-tensor kernel for all, which also rewrites the parameters' cached
// 16-bit casts), optionally with a clip factor read on the device, and saving/loading
// the moments.
#include "zero/optim/adamw.h"

#include <map>
#include <unordered_set>

#include "zero/autograd/cast_cache.h"
#include "zero/autograd/grad_mode.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::optim {

namespace {

void check_options(const AdamWOptions& o) {
  ZERO_CHECK(o.lr >= 0.0f && o.eps >= 0.0f && o.weight_decay >= 0.0f,
             "AdamW: expected lr, eps and weight_decay >= 0, got lr = ", o.lr, ", eps = ", o.eps,
             ", weight_decay = ", o.weight_decay);
  ZERO_CHECK(o.beta1 >= 0.0f && o.beta1 < 1.0f && o.beta2 >= 0.0f && o.beta2 < 1.0f,
             "AdamW: expected betas in [0, 1), got beta1 = ", o.beta1, ", beta2 = ", o.beta2);
}

// The gradient as the kernels need it: contiguous. The engine already stores leaf
// gradients contiguous; one set with SetGrad may not be, and is replaced by a copy.
Tensor contiguous_grad(const Tensor& param) {
  Tensor grad = param.Grad();
  if (!grad.is_contiguous()) {
    grad = grad.Contiguous();
    Tensor(param).SetGrad(grad);
  }
  return grad;
}

ops::AdamWParams params_of(const AdamWOptions& o, int64_t step) {
  ops::AdamWParams hp;
  hp.lr = o.lr;
  hp.beta1 = o.beta1;
  hp.beta2 = o.beta2;
  hp.eps = o.eps;
  hp.step = step;
  hp.weight_decay = o.weight_decay;
  return hp;
}

}  // namespace

AdamW::AdamW(std::vector<std::pair<std::string, Tensor>> named_params, AdamWOptions options)
    : options_(options) {
  check_options(options_);
  std::unordered_set<const TensorImpl*> seen;
  for (auto& [name, param] : named_params) {
    ZERO_CHECK(param.defined() && param.requires_grad() && param.is_leaf(), "AdamW: parameter \"",
               name, "\" must be a leaf tensor that requires grad");
    ZERO_CHECK(seen.insert(param.impl()).second, "AdamW: parameter \"", name,
               "\" is listed twice (a tied weight must appear once)");
    const TensorOption opt = param.options();
    slots_.push_back({name, param, Tensor::Zeros(param.sizes(), opt),
                      Tensor::Zeros(param.sizes(), opt), param.dim() >= 2});
  }
}

void AdamW::Step() { StepWith(Tensor()); }

void AdamW::Step(const Tensor& grad_factor) {
  CheckFactor(grad_factor);
  StepWith(grad_factor);
}

void AdamW::CheckFactor(const Tensor& grad_factor) const {
  // Checked before anything is counted or written (ops::adamw checks again).
  ZERO_CHECK(grad_factor.defined() && grad_factor.dtype() == DataType::F32 &&
                 grad_factor.numel() == 1,
             "AdamW::Step: expected a one-element f32 grad_factor");
  ZERO_CHECK(slots_.empty() || grad_factor.device() == slots_.front().param.device(),
             "AdamW::Step: grad_factor on ", grad_factor.device(), ", the parameters on ",
             slots_.front().param.device());
}

void AdamW::UncountStep() {
  ZERO_CHECK(step_ > 0, "AdamW::UncountStep: no step to take back");
  --step_;
}

void AdamW::StepWith(const Tensor& grad_factor) {
  ++step_;
  Update(grad_factor, Tensor());
}

void AdamW::PrepareStep() {
  ZERO_CHECK(!slots_.empty() && slots_.front().param.device().is_cuda(),
             "AdamW::PrepareStep: the step in two halves is for CUDA parameters");
  NoGradGuard no_grad;
  if (!scalars_.defined()) scalars_ = Tensor::Zeros({3}, slots_.front().param.options());
  ++step_;
  ops::adamw_scalars(params_of(options_, step_), scalars_);
}

void AdamW::ApplyStep(const Tensor& grad_factor) {
  ZERO_CHECK(scalars_.defined(), "AdamW::ApplyStep: call PrepareStep first");
  CheckFactor(grad_factor);
  Update(grad_factor, scalars_);
}

void AdamW::Update(const Tensor& grad_factor, const Tensor& scalars) {
  NoGradGuard no_grad;
  ops::AdamWParams hp = params_of(options_, step_);
  hp.grad_factor = grad_factor;  // checked by ops::adamw: one F32 element, our device
  hp.scalars = scalars;
  std::vector<ops::AdamWTensor> tensors;
  for (Slot& s : slots_) {
    if (!s.param.Grad().defined()) continue;
    if (s.exp_avg.device() != s.param.device()) {  // the model moved after we were built
      s.exp_avg = s.exp_avg.To(s.param.device());
      s.exp_avg_sq = s.exp_avg_sq.To(s.param.device());
    }
    const Tensor grad = contiguous_grad(s.param);
    ZERO_CHECK(tensors.empty() || tensors.front().param.device() == s.param.device(),
               "AdamW: parameters on two devices (", tensors.front().param.device(), " and ",
               s.param.device(), "); expected one device");
    ZERO_CHECK(grad.sizes() == s.param.sizes() && grad.device() == s.param.device(),
               "AdamW: gradient of \"", s.name, "\" does not match its parameter");
    // The parameter's kept 16-bit cast, if it has one, is rewritten in the same pass
    // (Note [Cached casts] in autograd/cast_cache.cpp): the next forward converts nothing.
    const Tensor copy = autograd::copy_to_refresh(s.param);
    s.param.node()->BumpVersion();  // an in-place write (Note [Version counter])
    tensors.push_back({s.param, grad, s.exp_avg, s.exp_avg_sq, s.decay, copy});
  }
  ops::adamw(tensors, hp);  // on CUDA, one multi-tensor launch per few dozen parameters
  // Also after an update the device skipped (a non-finite grad_factor): the kept casts
  // were not written, but neither were the parameters, so they are still current.
  for (const ops::AdamWTensor& t : tensors) {
    if (t.param_copy.defined()) autograd::copy_refreshed(t.param);
  }
}

void AdamW::ZeroGrad() {
  for (Slot& s : slots_) s.param.ZeroGrad();
}

void AdamW::SetLr(float lr) {
  ZERO_CHECK(lr >= 0.0f, "AdamW::SetLr: expected lr >= 0, got ", lr);
  options_.lr = lr;
}

bool AdamW::decays(const std::string& name) const {
  for (const Slot& s : slots_) {
    if (s.name == name) return s.decay;
  }
  ZERO_CHECK(false, "AdamW: no parameter named \"", name, "\"");
  return false;
}

std::vector<std::pair<std::string, Tensor>> AdamW::NamedState() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const Slot& s : slots_) {
    out.emplace_back(s.name + ".exp_avg", s.exp_avg);
    out.emplace_back(s.name + ".exp_avg_sq", s.exp_avg_sq);
  }
  return out;
}

void AdamW::LoadState(const std::vector<std::pair<std::string, Tensor>>& state, int64_t step) {
  ZERO_CHECK(step >= 0, "AdamW::LoadState: expected a step count >= 0, got ", step);
  std::map<std::string, Tensor> by_name(state.begin(), state.end());
  ZERO_CHECK(by_name.size() == state.size(), "AdamW::LoadState: a state name appears twice");
  // Check everything before copying anything, so a bad file leaves the state untouched.
  std::vector<std::pair<Tensor*, Tensor>> copies;
  auto find = [&](const std::string& name, Tensor& into) {
    const auto it = by_name.find(name);
    ZERO_CHECK(it != by_name.end(), "AdamW::LoadState: missing \"", name, "\"");
    ZERO_CHECK(it->second.sizes() == into.sizes() && it->second.dtype() == DataType::F32,
               "AdamW::LoadState: \"", name, "\" should be f32 ", shape_to_string(into.sizes()),
               ", got ", to_string(it->second.dtype()), " ", shape_to_string(it->second.sizes()));
    copies.emplace_back(&into, it->second);
    by_name.erase(it);
  };
  for (Slot& s : slots_) {
    find(s.name + ".exp_avg", s.exp_avg);
    find(s.name + ".exp_avg_sq", s.exp_avg_sq);
  }
  ZERO_CHECK(by_name.empty(), "AdamW::LoadState: \"", by_name.begin()->first,
             "\" is not the state of any parameter of this optimiser");
  NoGradGuard no_grad;
  for (auto& [into, from] : copies) into->CopyFrom_(from);
  step_ = step;
}

}  // namespace zero::optim

// Module: the name tree of parameters and submodules, recursive queries over it,
// train/eval mode, and moving parameters between devices without invalidating handles.
#include "zero/nn/module.h"

#include "zero/autograd/tensor_op.h"

namespace zero::nn {

// Note [Moving parameters in place]
// A model's parameters are referred to from many places: the layer that uses one
// (Linear::weight_), the tied output head (GPT reads transformer.wte.weight), and an
// optimiser built from NamedParameters(). A `Tensor` is a handle to a shared
// `TensorImpl`, so if To() made new tensors and stored them in the module, every other
// handle would keep pointing at the old device's data, silently training a stale copy.
// Instead To() copies the data to the new device and then swaps the new buffer and
// metadata into the parameter's existing TensorImpl (`impl->node`, `impl->meta`,
// `impl->grad`). Every handle to the parameter sees the move at once; there is one
// parameter, wherever it lives. Parameters are leaves (no grad_fn), so no graph refers
// to the old buffer. A *view* of a parameter taken before the move (a Slice, a
// Transpose) has its own TensorImpl and keeps reading the old buffer: take views after
// moving, as the layers do (they view their parameters inside Forward).

std::vector<std::pair<std::string, Tensor>> Module::NamedParameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  CollectParameters_("", out);
  return out;
}

void Module::CollectParameters_(const std::string& prefix,
                                std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, tensor] : parameters_) out.emplace_back(prefix + name, tensor);
  for (const auto& [name, module] : modules_) module->CollectParameters_(prefix + name + ".", out);
}

std::vector<Tensor> Module::Parameters() const {
  std::vector<Tensor> out;
  for (auto& named : NamedParameters()) out.push_back(std::move(named.second));
  return out;
}

int64_t Module::NumParameters() const {
  int64_t n = 0;
  for (const Tensor& p : Parameters()) n += p.numel();
  return n;
}

void Module::Train(bool on) {
  training_ = on;
  for (auto& named : modules_) named.second->Train(on);
}

void Module::SetComputeDtype(DataType dtype) {
  ZERO_CHECK(is_floating_point(dtype), "SetComputeDtype: expected f32, bf16 or f16, got ",
             to_string(dtype));
  compute_dtype_ = dtype;
  for (auto& named : modules_) named.second->SetComputeDtype(dtype);
}

void Module::To(Device device) {
  for (Tensor& p : Parameters()) {
    if (p.device() == device) continue;
    const Tensor moved = p.To(device);  // a new leaf on `device`, gradient moved along
    TensorImpl* impl = p.impl();
    impl->meta = moved.meta();
    impl->node = moved.node();
    impl->grad = moved.Grad();
  }
}

void Module::ZeroGrad() {
  for (Tensor& p : Parameters()) p.ZeroGrad();
}

Device Module::device() const {
  const std::vector<Tensor> params = Parameters();
  return params.empty() ? Device::Cpu() : params.front().device();
}

void Module::CheckName_(const std::string& name) const {
  ZERO_CHECK(!name.empty() && name.find('.') == std::string::npos,
             "a parameter or submodule name must be non-empty and hold no '.', got \"", name, "\"");
  for (const auto& named : parameters_) {
    ZERO_CHECK(named.first != name, "the name \"", name, "\" is already a parameter");
  }
  for (const auto& named : modules_) {
    ZERO_CHECK(named.first != name, "the name \"", name, "\" is already a submodule");
  }
}

Tensor& Module::RegisterParameter(const std::string& name, Tensor value) {
  CheckName_(name);
  ZERO_CHECK(value.defined(), "RegisterParameter(\"", name, "\"): expected a tensor, got an "
             "undefined one");
  ZERO_CHECK(value.is_leaf(), "RegisterParameter(\"", name, "\"): expected a leaf tensor, got "
             "the output of ", value.grad_fn()->name(), " (Detach() it first)");
  value.SetRequiresGrad(true);
  parameters_.emplace_back(name, std::move(value));
  return parameters_.back().second;
}

void Module::AddModule_(const std::string& name, std::shared_ptr<Module> module) {
  CheckName_(name);
  ZERO_CHECK(module != nullptr, "RegisterModule(\"", name, "\"): expected a module, got null");
  modules_.emplace_back(name, std::move(module));
}

EvalGuard::EvalGuard(Module& module) : module_(module), was_training_(module.is_training()) {
  module_.Eval();
}

EvalGuard::~EvalGuard() { module_.Train(was_training_); }

}  // namespace zero::nn

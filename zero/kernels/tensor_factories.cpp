// Tensor's factories and host access: the Tensor methods that need kernels but no
// autograd (Zeros, Rand, From, Item, ToString, ...). See Note [Where Tensor's methods
// are defined].
#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <sstream>

#include "zero/kernels/dtype_dispatch.h"
#include "zero/kernels/tensor_ops.h"

namespace zero {

Tensor Tensor::Zeros(const Shape& sizes, const TensorOption& opt) { return Full(sizes, 0.0f, opt); }

Tensor Tensor::Ones(const Shape& sizes, const TensorOption& opt) { return Full(sizes, 1.0f, opt); }

Tensor Tensor::Full(const Shape& sizes, float value, const TensorOption& opt) {
  Tensor t = Empty(sizes, opt.WithRequiresGrad(false));
  ops::fill(t, value);
  return opt.requires_grad ? t.SetRequiresGrad(true) : t;
}

Tensor Tensor::Rand(const Shape& sizes, const TensorOption& opt, Generator* gen) {
  ZERO_CHECK(opt.dtype == DataType::F32, "Rand makes f32 tensors, got dtype ", to_string(opt.dtype));
  Generator& g = gen ? *gen : default_generator();
  Tensor t = Empty(sizes, opt.WithRequiresGrad(false));
  const uint64_t offset = g.Reserve(t.numel());
  ops::rand_uniform(t, g.seed(), offset);
  return opt.requires_grad ? t.SetRequiresGrad(true) : t;
}

Tensor Tensor::Randn(const Shape& sizes, const TensorOption& opt, Generator* gen) {
  ZERO_CHECK(opt.dtype == DataType::F32, "Randn makes f32 tensors, got dtype ", to_string(opt.dtype));
  Generator& g = gen ? *gen : default_generator();
  Tensor t = Empty(sizes, opt.WithRequiresGrad(false));
  // Normal i uses stream words 2i and 2i+1, so start on an even word.
  const uint64_t first = g.Reserve(2 * t.numel() + (g.offset() & 1));
  ops::rand_normal(t, g.seed(), (first + 1) / 2);
  return opt.requires_grad ? t.SetRequiresGrad(true) : t;
}

Tensor Tensor::Arange(int64_t start, int64_t end, int64_t step, const TensorOption& opt) {
  ZERO_CHECK(step != 0, "Arange: step must not be 0");
  // The count in unsigned arithmetic: end - start and the rounding up can exceed int64_t
  // (Arange(INT64_MIN, INT64_MAX, 1)); a count above INT64_MAX is refused.
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  const uint64_t span = step > 0 ? (end > start ? u(end) - u(start) : 0)
                                 : (start > end ? u(start) - u(end) : 0);
  const uint64_t stride = step > 0 ? u(step) : 0 - u(step);
  const uint64_t n = span / stride + (span % stride != 0);
  ZERO_CHECK(n <= u(INT64_MAX), "Arange(", start, ", ", end, ", ", step, "): ", n,
             " elements do not fit in a 64-bit signed integer");
  Tensor t = Empty({static_cast<int64_t>(n)}, opt.WithRequiresGrad(false));
  ops::arange(t, static_cast<double>(start), static_cast<double>(step));
  return opt.requires_grad ? t.SetRequiresGrad(true) : t;
}

namespace {

template <typename T>
Tensor from_values(const std::vector<T>& values, const Shape& sizes, TensorOption opt) {
  opt.dtype = dtype_of<T>();
  ZERO_CHECK(static_cast<int64_t>(values.size()) == shape_numel(sizes), "From: ", values.size(),
             " values cannot fill shape ", shape_to_string(sizes), " (", shape_numel(sizes),
             " elements)");
  Tensor host = Tensor::Empty(sizes, TensorOption().WithDtype(opt.dtype));
  std::copy(values.begin(), values.end(), static_cast<T*>(host.data()));
  Tensor t = host;
  if (!opt.device.is_cpu()) {
    t = Tensor::Empty(sizes, opt.WithRequiresGrad(false));
    ops::copy(host, t);
  }
  return opt.requires_grad ? t.SetRequiresGrad(true) : t;
}

}  // namespace

Tensor Tensor::From(const std::vector<float>& values, const Shape& sizes, const TensorOption& opt) {
  return from_values(values, sizes, opt);
}

Tensor Tensor::FromI32(const std::vector<int32_t>& values, const Shape& sizes,
                       const TensorOption& opt) {
  return from_values(values, sizes, opt);
}

Tensor Tensor::Scalar(float value, const TensorOption& opt) { return Full({}, value, opt); }

// ---------------------------------------------------------------- host access

template <typename T>
std::vector<T> Tensor::ToVector() const {
  ZERO_CHECK(dtype() == dtype_of<T>(), "ToVector: expected element type ",
             to_string(dtype_of<T>()), " to match the tensor's dtype ", to_string(dtype()));
  std::vector<T> values(numel());
  if (values.empty()) return values;
  Tensor host = Tensor::Empty(sizes(), TensorOption().WithDtype(dtype()));
  ops::copy(*this, host);  // gathers any layout, and brings GPU data to the host
  std::copy_n(static_cast<const T*>(host.data()), values.size(), values.begin());
  return values;
}
template std::vector<float> Tensor::ToVector<float>() const;
template std::vector<int32_t> Tensor::ToVector<int32_t>() const;
template std::vector<bf16> Tensor::ToVector<bf16>() const;
template std::vector<f16> Tensor::ToVector<f16>() const;

float Tensor::Item() const {
  ZERO_CHECK(numel() == 1, "Item() needs a one-element tensor, got shape ",
             shape_to_string(sizes()));
  float value = 0.0f;
  ops::dispatch_dtype<ops::AllTypes>(dtype(), "Item", [&](auto tag) {
    using T = typename decltype(tag)::type;
    value = static_cast<float>(ToVector<T>()[0]);
  });
  return value;
}

namespace {

// Writes nested brackets for dimension `d` of a row-major value list.
template <typename T>
void print_nested(std::ostream& os, const std::vector<T>& v, const Shape& sizes, size_t d,
                  int64_t& pos) {
  if (d == sizes.size()) {
    os << v[pos++];
    return;
  }
  os << "[";
  for (int64_t i = 0; i < sizes[d]; ++i) {
    if (i) os << ", ";
    print_nested(os, v, sizes, d + 1, pos);
  }
  os << "]";
}

template <typename T>
void print_values(std::ostream& os, const Tensor& t, const std::vector<T>& v, int64_t max_values) {
  if (static_cast<int64_t>(v.size()) <= max_values) {
    int64_t pos = 0;
    print_nested(os, v, t.sizes(), 0, pos);
    return;
  }
  const int64_t half = max_values / 2;
  os << "[";
  for (int64_t i = 0; i < half; ++i) os << v[i] << ", ";
  os << "...";
  for (int64_t i = static_cast<int64_t>(v.size()) - half; i < static_cast<int64_t>(v.size()); ++i) {
    os << ", " << v[i];
  }
  os << "] (flattened)";
}

}  // namespace

std::string Tensor::ToString(int64_t max_values) const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream os;
  os << std::setprecision(6);
  os << "Tensor(shape=" << shape_to_string(sizes()) << ", dtype=" << to_string(dtype())
     << ", device=" << device() << (requires_grad() ? ", requires_grad" : "") << ", values=";
  if (dtype() == DataType::I32) {
    print_values(os, *this, ToVector<int32_t>(), max_values);
  } else {
    std::vector<float> values;  // 16-bit values print as the floats they hold exactly
    ops::dispatch_dtype<ops::FloatTypes>(dtype(), "ToString", [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (const T& v : ToVector<T>()) values.push_back(static_cast<float>(v));
    });
    print_values(os, *this, values, max_values);
  }
  os << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.ToString(); }

}  // namespace zero

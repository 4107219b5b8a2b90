// View arithmetic on TensorMeta: pure functions of sizes and strides.
// Every view Zero makes (tensor.h) and every kernel's DimsArg start from here.
#include "zero/core/tensor_meta.h"

#include <algorithm>
#include <sstream>

#include "zero/core/error.h"

namespace zero {

std::string shape_to_string(const Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

// Sizes come from users, files and flags: a product that wraps would make a small buffer
// look large enough (or the reverse), so every multiplication here is checked.
int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) {
    ZERO_CHECK(s >= 0, "expected sizes >= 0, got shape ", shape_to_string(shape));
    ZERO_CHECK(!__builtin_mul_overflow(n, s, &n), "shape ", shape_to_string(shape),
               " has more elements than fit in a 64-bit signed integer");
  }
  return n;
}

Shape contiguous_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t stride = 1;
  for (int i = static_cast<int>(sizes.size()) - 1; i >= 0; --i) {
    ZERO_CHECK(sizes[i] >= 0, "expected sizes >= 0, got shape ", shape_to_string(sizes));
    strides[i] = stride;
    // A size-0 dimension leaves numel() at 0 but not the strides of the dimensions
    // outside it: [0, 2^40, 2^40] has strides [2^80, 2^40, 1], which do not fit.
    ZERO_CHECK(!__builtin_mul_overflow(stride, std::max<int64_t>(sizes[i], 1), &stride),
               "the strides of shape ", shape_to_string(sizes),
               " do not fit in a 64-bit signed integer");
  }
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
    ZERO_CHECK(sa == sb || sa == 1 || sb == 1, "shapes ", shape_to_string(a), " and ",
               shape_to_string(b), " cannot be broadcast together (dimension ", i, ": ", sa,
               " vs ", sb, ")");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

int normalize_dim(int64_t dim, int64_t ndim) {
  const int64_t lo = -std::max<int64_t>(ndim, 1), hi = std::max<int64_t>(ndim, 1) - 1;
  ZERO_CHECK(dim >= lo && dim <= hi, "dimension out of range: expected one in [", lo, ", ", hi,
             "] for a ", ndim, "-d tensor, got ", dim);
  return static_cast<int>(dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim);
}

bool TensorMeta::is_contiguous() const {
  int64_t expected = 1;
  for (int i = dim() - 1; i >= 0; --i) {
    if (sizes[i] == 1) continue;  // the stride of a size-1 dimension never matters
    if (strides[i] != expected) return false;
    expected *= std::max<int64_t>(sizes[i], 1);  // as contiguous_strides: [3, 0] -> [1, 1]
  }
  return true;
}

TensorMeta contiguous_meta(const Shape& sizes, DataType dtype, Device device) {
  for (int64_t s : sizes) ZERO_CHECK(s >= 0, "expected sizes >= 0, got ", shape_to_string(sizes));
  return TensorMeta{sizes, contiguous_strides(sizes), 0, dtype, device};
}

namespace {

// Resolves a single -1 in `sizes` so that the product equals `numel`.
Shape infer_size(Shape sizes, int64_t numel, const Shape& from) {
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < static_cast<int>(sizes.size()); ++i) {
    if (sizes[i] == -1) {
      ZERO_CHECK(infer < 0, "only one size may be -1, got ", shape_to_string(sizes));
      infer = i;
    } else {
      ZERO_CHECK(sizes[i] >= 0, "expected sizes >= 0 (or one -1), got ", shape_to_string(sizes));
      ZERO_CHECK(!__builtin_mul_overflow(known, sizes[i], &known), "shape ",
                 shape_to_string(sizes), " has more elements than fit in a 64-bit signed integer");
    }
  }
  if (infer >= 0) {
    ZERO_CHECK(known != 0 && numel % known == 0, "cannot view a tensor of shape ",
               shape_to_string(from), " (", numel, " elements) as ", shape_to_string(sizes));
    sizes[infer] = numel / known;
  }
  ZERO_CHECK(shape_numel(sizes) == numel, "cannot view a tensor of shape ", shape_to_string(from),
             " (", numel, " elements) as ", shape_to_string(sizes), " (", shape_numel(sizes),
             " elements)");
  return sizes;
}

}  // namespace

// Note [Views of strided tensors]
// A view needs no copy when each run of new dimensions maps onto a run of old
// dimensions that are laid out contiguously with respect to each other. We walk the
// old dimensions from the innermost, grouping those that "chain" (stride[i] ==
// stride[i+1] * size[i+1]); each group must be covered exactly by a group of new
// dimensions, which then get strides derived from the group's innermost stride.
TensorMeta meta_view(const TensorMeta& m, Shape sizes) {
  sizes = infer_size(std::move(sizes), m.numel(), m.sizes);
  TensorMeta out = m;
  out.sizes = sizes;
  if (m.is_contiguous()) {
    out.strides = contiguous_strides(sizes);
    return out;
  }
  Shape strides(sizes.size());
  int view_d = static_cast<int>(sizes.size()) - 1;
  int64_t chunk_base_stride = m.strides.empty() ? 1 : m.strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int d = m.dim() - 1; d >= 0; --d) {
    tensor_numel *= m.sizes[d];
    const bool chunk_ends = d == 0 || (m.sizes[d - 1] != 1 &&
                                       m.strides[d - 1] != tensor_numel * chunk_base_stride);
    if (chunk_ends) {
      while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= sizes[view_d];
        --view_d;
      }
      ZERO_CHECK(view_numel == tensor_numel, "cannot view a tensor of shape ",
                 shape_to_string(m.sizes), " with strides ", shape_to_string(m.strides), " as ",
                 shape_to_string(sizes), " without a copy; use Reshape() or Contiguous() first");
      if (d > 0) {
        chunk_base_stride = m.strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  ZERO_CHECK(view_d == -1, "cannot view shape ", shape_to_string(m.sizes), " as ",
             shape_to_string(sizes), " without a copy");
  out.strides = strides;
  return out;
}

TensorMeta meta_transpose(const TensorMeta& m, int64_t d0, int64_t d1) {
  const int a = normalize_dim(d0, m.dim()), b = normalize_dim(d1, m.dim());
  TensorMeta out = m;
  if (m.dim() == 0) return out;
  std::swap(out.sizes[a], out.sizes[b]);
  std::swap(out.strides[a], out.strides[b]);
  return out;
}

TensorMeta meta_permute(const TensorMeta& m, const std::vector<int64_t>& dims) {
  ZERO_CHECK(static_cast<int>(dims.size()) == m.dim(), "permute expects ", m.dim(),
             " dimensions, got ", shape_to_string(dims));
  TensorMeta out = m;
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int d = normalize_dim(dims[i], m.dim());
    ZERO_CHECK(!seen[d], "permute dimensions must be distinct, got ", shape_to_string(dims));
    seen[d] = true;
    out.sizes[i] = m.sizes[d];
    out.strides[i] = m.strides[d];
  }
  return out;
}

TensorMeta meta_slice(const TensorMeta& m, int64_t dim, int64_t start, int64_t end,
                      int64_t step) {
  ZERO_CHECK(m.dim() > 0, "cannot slice a 0-d tensor");
  const int d = normalize_dim(dim, m.dim());
  ZERO_CHECK(step > 0, "slice step must be positive, got ", step);
  const int64_t n = m.sizes[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  TensorMeta out = m;
  out.offset = m.offset + start * m.strides[d];
  out.sizes[d] = (end - start + step - 1) / step;
  out.strides[d] = m.strides[d] * step;
  return out;
}

TensorMeta meta_expand(const TensorMeta& m, const Shape& sizes) {
  ZERO_CHECK(sizes.size() >= m.sizes.size(), "cannot expand shape ", shape_to_string(m.sizes),
             " to fewer dimensions ", shape_to_string(sizes));
  const size_t lead = sizes.size() - m.sizes.size();
  TensorMeta out = m;
  out.sizes.assign(sizes.size(), 0);
  out.strides.assign(sizes.size(), 0);
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i < lead) {
      ZERO_CHECK(sizes[i] >= 0, "cannot use -1 for a new leading dimension in expand to ",
                 shape_to_string(sizes));
      out.sizes[i] = sizes[i];
      continue;
    }
    const int64_t have = m.sizes[i - lead];
    const int64_t want = sizes[i] == -1 ? have : sizes[i];
    ZERO_CHECK(want >= 0, "cannot expand shape ", shape_to_string(m.sizes), " to ",
               shape_to_string(sizes), ": sizes must be >= 0 (or -1 to keep one)");
    ZERO_CHECK(have == want || have == 1, "cannot expand shape ", shape_to_string(m.sizes),
               " to ", shape_to_string(sizes), ": dimension ", i, " has size ", have,
               ", which is neither ", want, " nor 1");
    out.sizes[i] = want;
    out.strides[i] = have == want ? m.strides[i - lead] : 0;
  }
  shape_numel(out.sizes);  // throws if the expanded element count does not fit
  return out;
}

TensorMeta meta_unsqueeze(const TensorMeta& m, int64_t dim) {
  const int d = normalize_dim(dim, m.dim() + 1);
  TensorMeta out = m;
  const int64_t stride = d < m.dim() ? m.sizes[d] * m.strides[d] : 1;
  out.sizes.insert(out.sizes.begin() + d, 1);
  out.strides.insert(out.strides.begin() + d, stride);
  return out;
}

TensorMeta meta_squeeze(const TensorMeta& m, int64_t dim) {
  // normalize_dim accepts dimension 0 of a 0-d tensor (as a scalar's only index), but
  // there is no size to remove.
  ZERO_CHECK(m.dim() > 0, "cannot squeeze a 0-d tensor");
  const int d = normalize_dim(dim, m.dim());
  ZERO_CHECK(m.sizes[d] == 1, "cannot squeeze dimension ", d, " of shape ",
             shape_to_string(m.sizes), ": its size is not 1");
  TensorMeta out = m;
  out.sizes.erase(out.sizes.begin() + d);
  out.strides.erase(out.strides.begin() + d);
  return out;
}

}  // namespace zero

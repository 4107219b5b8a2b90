// GradBuckets (see grad_buckets.h): the reverse-order assignment and the per-step
// readiness count that releases buckets in index order.
#include "zero/distributed/grad_buckets.h"

#include "zero/core/error.h"

namespace zero::dist {

GradBuckets::GradBuckets(const std::vector<std::pair<std::string, int64_t>>& params,
                         size_t cap_bytes, size_t element_bytes) {
  ZERO_CHECK(!params.empty(), "GradBuckets: expected at least one parameter, got none");
  ZERO_CHECK(cap_bytes > 0 && element_bytes > 0, "GradBuckets: expected a bucket cap and an "
             "element size above 0 bytes, got ", cap_bytes, " and ", element_bytes);
  const size_t n = params.size();
  names_.reserve(n);
  for (const auto& [name, numel] : params) {
    ZERO_CHECK(numel > 0, "GradBuckets: expected parameter '", name,
               "' to have elements, got numel ", numel);
    ZERO_CHECK(index_.emplace(name, names_.size()).second,
               "GradBuckets: expected distinct parameter names, got '", name, "' twice");
    names_.push_back(name);
  }
  bucket_of_.assign(n, 0);
  offset_.assign(n, 0);
  size_t bytes = 0;  // in the bucket being filled
  for (size_t k = n; k-- > 0;) {  // last registered first: the order backward finishes them
    const size_t param_bytes = static_cast<size_t>(params[k].second) * element_bytes;
    if (buckets_.empty() || (bytes > 0 && bytes + param_bytes > cap_bytes)) {
      buckets_.emplace_back();
      bucket_numel_.push_back(0);
      bytes = 0;
    }
    bucket_of_[k] = buckets_.size() - 1;
    offset_[k] = bucket_numel_.back();
    buckets_.back().push_back(k);
    bucket_numel_.back() += params[k].second;
    bytes += param_bytes;
  }
  Reset();
}

const std::vector<size_t>& GradBuckets::bucket(size_t b) const {
  ZERO_CHECK(b < buckets_.size(), "GradBuckets: expected a bucket index below ", buckets_.size(),
             ", got ", b);
  return buckets_[b];
}

int64_t GradBuckets::bucket_numel(size_t b) const {
  bucket(b);  // range check
  return bucket_numel_[b];
}

size_t GradBuckets::bucket_of(size_t param) const {
  ZERO_CHECK(param < names_.size(), "GradBuckets: expected a parameter index below ",
             names_.size(), ", got ", param);
  return bucket_of_[param];
}

int64_t GradBuckets::offset_of(size_t param) const {
  bucket_of(param);  // range check
  return offset_[param];
}

size_t GradBuckets::index_of(const std::string& name) const {
  const auto it = index_.find(name);
  ZERO_CHECK(it != index_.end(), "GradBuckets: unknown parameter '", name,
             "' (expected one of the ", names_.size(), " registered, e.g. '", names_.front(),
             "')");
  return it->second;
}

std::vector<size_t> GradBuckets::MarkReady(size_t param) {
  const size_t b = bucket_of(param);
  ZERO_CHECK(!marked_[param], "GradBuckets: parameter '", names_[param],
             "' was marked ready twice in one step (call Reset() between steps)");
  marked_[param] = true;
  --pending_[b];
  return Release();
}

std::vector<size_t> GradBuckets::MarkReady(const std::string& name) {
  return MarkReady(index_of(name));
}

std::vector<size_t> GradBuckets::MarkRemaining() {
  for (size_t k = 0; k < names_.size(); ++k) {
    if (!marked_[k]) {
      marked_[k] = true;
      --pending_[bucket_of_[k]];
    }
  }
  return Release();
}

std::vector<size_t> GradBuckets::Release() {
  std::vector<size_t> launch;
  while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0) {
    launch.push_back(next_launch_++);
  }
  return launch;
}

void GradBuckets::Reset() {
  marked_.assign(names_.size(), false);
  pending_.resize(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].size();
  next_launch_ = 0;
}

}  // namespace zero::dist

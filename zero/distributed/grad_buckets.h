/// @file
/// `GradBuckets`: which parameters' gradients are all-reduced together, and when a
/// group is complete. Pure bookkeeping, no GPU: data_parallel.h does the transfers.
///
/// One all-reduce per parameter (GPT-2 124M has 148) would pay NCCL's fixed cost, some
/// tens of microseconds, 148 times; one all-reduce of everything could only start after
/// the whole backward. Buckets sit between: gradients are grouped into buckets of about
/// `cap_bytes` (25 MiB by default, as in PyTorch DDP), and a bucket is sent as soon as
/// all of its gradients are final, while backward computes the rest. Backward produces
/// gradients roughly in reverse registration order (the output layer first), so buckets
/// are filled walking the parameters from last to first: bucket 0 is ready first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace zero::dist {

/// Buckets over a fixed list of parameters, and the per-step record of which are ready.
///
/// Every process must launch its all-reduces in the same order, or NCCL deadlocks (rank
/// 0 waits in bucket 1 while rank 1 waits in bucket 0). So `MarkReady` releases buckets
/// strictly in index order: a complete bucket waits until all buckets before it are out.
class GradBuckets {
 public:
  /// PyTorch DDP's default bucket size, 25 MiB.
  static constexpr size_t kDefaultCapBytes = size_t{25} << 20;

  /// Buckets for `params` (name, number of elements) given in registration order,
  /// filled from the last parameter to the first. A bucket takes parameters until the
  /// next one would carry it past `cap_bytes`; a parameter larger than the cap gets a
  /// bucket of its own. @throws zero::Error on an empty list, a repeated name, a
  /// parameter with no elements, or `cap_bytes` / `element_bytes` of 0.
  explicit GradBuckets(const std::vector<std::pair<std::string, int64_t>>& params,
                       size_t cap_bytes = kDefaultCapBytes, size_t element_bytes = 4);

  /// Number of buckets.
  size_t num_buckets() const { return buckets_.size(); }
  /// Number of parameters.
  size_t num_params() const { return names_.size(); }
  /// The parameters (registration indices) of bucket `b`, in the order they were added.
  const std::vector<size_t>& bucket(size_t b) const;
  /// Total elements of bucket `b`: the size of its flat buffer.
  int64_t bucket_numel(size_t b) const;
  /// The bucket holding parameter `param`.
  size_t bucket_of(size_t param) const;
  /// Where parameter `param` starts in its bucket's flat buffer, in elements.
  int64_t offset_of(size_t param) const;
  /// The registration index of the parameter called `name`.
  /// @throws zero::Error if there is none, naming it.
  size_t index_of(const std::string& name) const;

  /// Records that parameter `param`'s gradient is final for this step. Returns the
  /// buckets that may now be launched, in index order (often none; several when this
  /// one completes a bucket that earlier complete buckets were waiting behind).
  /// @throws zero::Error if `param` is out of range or was already marked this step.
  std::vector<size_t> MarkReady(size_t param);
  /// `MarkReady(index_of(name))`.
  std::vector<size_t> MarkReady(const std::string& name);
  /// Marks every parameter not yet marked this step (those backward never reached, such
  /// as an unused layer) and returns the buckets still to launch, in index order. After
  /// it every bucket has been released exactly once this step.
  std::vector<size_t> MarkRemaining();
  /// True when every bucket has been released this step.
  bool all_launched() const { return next_launch_ == buckets_.size(); }
  /// Starts a new step: nothing marked, nothing launched.
  void Reset();

 private:
  std::vector<size_t> Release();  // complete buckets from next_launch_ on

  std::vector<std::string> names_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::vector<size_t>> buckets_;
  std::vector<int64_t> bucket_numel_, offset_;
  std::vector<size_t> bucket_of_, pending_;  // pending_: params of each bucket not yet marked
  std::vector<bool> marked_;
  size_t next_launch_ = 0;
};

}  // namespace zero::dist

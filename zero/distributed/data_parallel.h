/// @file
/// `DataParallel`: gradients averaged over all ranks, bucket by bucket, while the
/// backward pass is still running.
///
/// Every rank holds the same model and computes gradients on its own part of the batch.
/// Averaging them over ranks gives every rank the gradient of the whole batch, so the
/// optimiser makes the same update everywhere and the models stay identical. The cost
/// is the all-reduce; the art is to hide it behind backward. See Note [Overlapping the
/// all-reduce with backward] in data_parallel.cpp for how the streams are arranged.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "zero/core/tensor.h"
#include "zero/core/stream.h"
#include "zero/distributed/communicator.h"
#include "zero/distributed/grad_buckets.h"

namespace zero::dist {

/// Runs backward with its gradients averaged across the ranks of a `Communicator`.
///
/// All ranks must build it from the same parameters in the same order. A parameter
/// that backward does not reach keeps an undefined gradient (as without DataParallel);
/// this assumes every rank reaches the same parameters, true for any fixed model.
class DataParallel {
 public:
  /// Buckets (`cap_bytes` each, grad_buckets.h) over `params` (name, F32 CUDA tensor on
  /// the communicator's GPU, in registration order) and one flat GPU buffer per bucket.
  /// @throws zero::Error if a parameter is not such a tensor.
  DataParallel(std::shared_ptr<Communicator> comm,
               const std::vector<std::pair<std::string, Tensor>>& params,
               size_t cap_bytes = GradBuckets::kDefaultCapBytes);
  /// Waits for the side stream (it may still use the flat buffers), then frees them.
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;             ///< Not copyable.
  DataParallel& operator=(const DataParallel&) = delete;  ///< Not copyable.

  /// Overwrites every parameter with rank 0's values, so all ranks start equal (call it
  /// once before training, after loading any weights).
  void BroadcastParameters();
  /// `loss.Backward()`, launching each bucket's all-reduce as soon as its gradients are
  /// final. On return every parameter's `.Grad()` holds the average over ranks (the work
  /// is queued on the default stream: later kernels see the averaged values).
  void Backward(const Tensor& loss);
  /// The mean of the one-element tensor `value` over all ranks, read on the host (a
  /// synchronisation point, like `Item()`).
  float AverageOverRanks(const Tensor& value);

  /// The bucket layout, for inspection and printing.
  const GradBuckets& buckets() const { return buckets_; }
  /// The communicator.
  Communicator& communicator() { return *comm_; }

 private:
  void OnSide(const std::function<void(const cuda::Stream&)>& collective);
  void OnLeafReady(const Tensor& leaf);
  void Launch(size_t bucket);
  void Finish();
  Tensor Slot(size_t param) const;  // the parameter's place in its bucket's flat buffer

  std::shared_ptr<Communicator> comm_;
  std::vector<Tensor> params_;
  std::unordered_map<const TensorImpl*, size_t> index_;
  GradBuckets buckets_;
  cuda::Stream side_;               // where the all-reduces run
  std::vector<Tensor> flat_;        // per bucket: (bucket_numel,) on the GPU
  std::vector<cuda::Event> ready_;  // per bucket: its gradients are copied in
  std::vector<cuda::Event> done_;   // per bucket: its all-reduce has finished
  cuda::Event before_, after_;      // around the other collectives (OnSide)
};

}  // namespace zero::dist

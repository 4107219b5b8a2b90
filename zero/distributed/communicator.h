/// @file
/// `Communicator`: one process's membership of an NCCL group, and the collectives
/// data-parallel training needs (all-reduce, broadcast) on CUDA tensors.
///
/// NCCL ("nickel") moves data between GPUs over the fastest path it finds (NVLink,
/// PCIe, InfiniBand) with kernels that run on a CUDA stream like any other. A group
/// of `world` processes is formed once: each calls the constructor with its `rank`,
/// the group size and the same `UniqueId` (unique_id.h). The constructor blocks
/// until every rank has joined, so it doubles as a start-up barrier. No NCCL type
/// appears here: the handle lives behind a pointer to an implementation in
/// zero/distributed/nccl/communicator.cpp. A build without NCCL (or without CUDA) has the
/// same class, and every way in throws "Zero was built without NCCL".
#pragma once

#include <memory>
#include <string>

#include "zero/core/tensor.h"
#include "zero/core/stream.h"
#include "zero/distributed/unique_id.h"

namespace zero::dist {

/// An NCCL communicator for one rank of a group, bound to one GPU. Move-only.
///
/// Collectives are asynchronous: they are queued on the given stream and return at
/// once. Every rank must call the same collectives in the same order with the same
/// sizes; a rank that skips one leaves the others waiting forever.
class Communicator {
 public:
  /// True when this build of Zero can make communicators (it was built with NCCL).
  static bool available();
  /// The NCCL version this build was compiled against ("2.28.9"), or "none".
  static std::string version();
  /// A fresh unique id for a new group. Call it on rank 0 only: it also starts the
  /// listener that the other ranks contact. @throws zero::Error without NCCL.
  static UniqueId CreateUniqueId();

  /// Joins the group `id` as `rank` of `world`, on GPU `device`; blocks until all ranks
  /// have joined. @throws zero::Error if rank is not in [0, world) or the GPU does not
  /// exist, or NCCL fails (its message is included).
  Communicator(int rank, int world, const UniqueId& id, int device);
  /// Leaves the group (`ncclCommDestroy`); work already queued completes first.
  ~Communicator();
  /// Takes over `other`'s membership; `other` is left empty.
  Communicator(Communicator&& other) noexcept;
  /// Leaves this group, then takes over `other`'s membership.
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;             ///< Not copyable.
  Communicator& operator=(const Communicator&) = delete;  ///< Not copyable.

  /// Replaces `tensor` on every rank by the element-wise sum over all ranks, in place,
  /// queued on `stream`. @throws zero::Error unless `tensor` is a contiguous F32 tensor
  /// on this communicator's GPU.
  void AllReduceSum(const Tensor& tensor, const cuda::Stream& stream);
  /// Like `AllReduceSum`, divided by `world()`: the mean over ranks (NCCL's `ncclAvg`).
  void AllReduceAverage(const Tensor& tensor, const cuda::Stream& stream);
  /// Copies rank `root`'s `tensor` into `tensor` on every other rank, in place.
  /// @throws zero::Error on a bad `root` or tensor (as `AllReduceSum`).
  void Broadcast(const Tensor& tensor, int root, const cuda::Stream& stream);

  /// This process's rank in [0, world).
  int rank() const { return rank_; }
  /// Number of ranks in the group.
  int world() const { return world_; }
  /// The GPU this rank uses.
  int device() const { return device_; }

 private:
  struct Impl;  // the ncclComm_t
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, world_ = 0, device_ = 0;
};

}  // namespace zero::dist

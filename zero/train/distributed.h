/// @file
/// Data-parallel training on the GPUs of one host, one process per GPU: joining the
/// group, and the loop of the ranks other than 0.
///
/// Each process is a rank started by a launcher (chapters/10_multi_gpu/launcher.h, behind
/// chapter 10's program and train_gpt's `--nproc N`, which also passes `--rank`, `--world`
/// and `--nccl-id-file`). Each rank joins the NCCL group (`join_group`), shards its batches
/// and all-reduces its gradients (`Trainer::EnableDataParallel`). Rank 0 alone prints,
/// logs, evaluates, samples and saves; the other ranks only train (`run_worker`).
/// Chapter 10's README explains why N ranks with batch B follow the loss curve of one
/// GPU with batch N*B.
#pragma once

#include <memory>
#include <string>

#include "zero/distributed/communicator.h"
#include "zero/train/trainer.h"

namespace zero::train {

/// A rank's place in its group, from the flags `--rank`, `--world` and `--nccl-id-file`
/// that the launcher gives each process it starts.
struct DistributedOptions {
  int rank = -1;        ///< This child's rank, set by the launcher; -1 outside a group.
  int world = 1;        ///< Number of ranks in the group.
  std::string id_file;  ///< Where rank 0 writes the NCCL unique id for the others.

  /// True in a process the launcher started (a rank of a group).
  bool is_rank() const { return rank >= 0; }
};

/// Joins the group described by `options` on GPU `options.rank`: rank 0 makes the
/// unique id and writes it to `options.id_file` (removing a stale one first), the
/// others wait for it up to `timeout_seconds`. Blocks until all ranks have joined.
/// @throws zero::Error if `options` is not a rank, or on a timeout or NCCL failure.
std::shared_ptr<dist::Communicator> join_group(const DistributedOptions& options,
                                               double timeout_seconds = 300);

/// `join_group(options)`, then `trainer.EnableDataParallel` with the communicator.
/// Returns this process's rank.
int join_group(Trainer& trainer, const DistributedOptions& options);

/// The loop of a rank other than 0: `trainer.Step()` until `max_steps`, nothing else.
/// Rank 0 evaluates and saves in between; this rank waits for it in the next step's
/// all-reduce. Ignores Ctrl-C (the launcher stops it once rank 0 has saved). Returns 0.
int run_worker(Trainer& trainer);

}  // namespace zero::train

// Chapter 10: what main.cpp (the CPU half and the launcher) and gpu.cpp (the measurements
// on GPUs) share. gpu.cpp calls only Zero's library (Communicator, EventTimer, Trainer),
// so it builds everywhere; main.cpp calls it only when a GPU is visible.
#pragma once

#include <memory>
#include <string>

#include "zero/distributed/communicator.h"

namespace ch10 {

struct Options {
  bool quick = false;      // small sizes and a tiny model: the CTest run
  int gpus = 0;            // GPUs to use (0: all visible)
  std::string mode;        // in a rank: "bandwidth" or "scaling"
  double baseline_tps = 0; // in a rank: the 1-GPU tokens/s to compare with
};

// All-reduce over a sweep of sizes on `comm` (every rank calls it; rank 0 prints): each
// size validated, then timed (median of several runs). With one rank it is compared with
// a device-to-device copy, with several with `link_gbs` (per direction; 0: unknown).
// Returns the number of sizes whose result was wrong.
int bandwidth_sweep(zero::dist::Communicator& comm, const Options& options, double link_gbs);

// Tokens per second of GPT-2 124M training steps (a tiny GPT with --quick) on GPU `rank`
// of `comm`'s group, or on GPU 0 alone when `comm` is null. Rank 0 (or the single GPU)
// prints; a first loss far from ln(vocab) counts as a failure (returned through *failed).
double training_rate(std::shared_ptr<zero::dist::Communicator> comm, const Options& options,
                     bool* failed);

}  // namespace ch10

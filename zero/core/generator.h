/// @file
/// `Generator`: a seed plus a position in its Philox stream.
///
/// Every random op reserves a range of the stream (`Reserve(n)`) and computes its
/// elements from (seed, offset + i), so results depend only on the seed and the order
/// of random ops, never on threads, devices or scheduling. Saving (seed, offset)
/// in a checkpoint is enough to resume the same random sequence.
#pragma once

#include <cstdint>

namespace zero {

/// A position in a Philox stream. Not thread-safe; use one per thread.
class Generator {
 public:
  /// A stream starting at offset 0 of `seed`.
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  /// The key of the stream.
  uint64_t seed() const { return seed_; }
  /// Number of stream words used so far.
  uint64_t offset() const { return offset_; }
  /// Reserves `words` stream words and returns the offset of the first.
  uint64_t Reserve(uint64_t words) {
    const uint64_t first = offset_;
    offset_ += words;
    return first;
  }
  /// Restarts the stream at (`seed`, `offset`).
  void SetState(uint64_t seed, uint64_t offset) {
    seed_ = seed;
    offset_ = offset;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

/// The process-wide generator used when an op is given none.
Generator& default_generator();
/// Reseeds the default generator at offset 0.
void manual_seed(uint64_t seed);

}  // namespace zero

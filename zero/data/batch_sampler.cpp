// BatchSampler (see batch_sampler.h): window offsets from Philox, and on CUDA the
// pinned-memory prefetch described in the Note below.
//
// Note [Prefetching batches]
// A batch is small (64 x 256 x 2 int32 = 128 KiB) but how it reaches the GPU matters.
// A plain cudaMemcpy from ordinary (pageable) memory blocks the host until the copy is
// done, and on the default stream that means until every kernel queued before it has
// run: the host could no longer queue step k+1 while the GPU computes step k. So:
//   1. Windows are gathered into page-locked ("pinned") host memory, which the GPU's
//      copy engine reads directly; a cudaMemcpyAsync from it returns at once.
//   2. When `Next()` hands out batch k, it has already issued batch k's copy (during
//      the previous call) and now gathers batch k+1 and issues its copy too. The copy
//      waits in the stream while the host goes on queueing the step's kernels.
//   3. Copies go on the legacy default stream, where all of Zero's kernels run. That
//      orders them after earlier kernels and before later ones with no events at all,
//      so reusing caching-allocator blocks stays safe (a block freed by a kernel is
//      rewritten only after that kernel). The copy does not overlap a kernel, but it
//      takes microseconds; what it must not do is stall the host, and it doesn't.
//   4. Two staging slots (pinned x and y buffers each) alternate. Before the host
//      overwrites one, it waits on the event recorded after that slot's last copies,
//      issued two calls ago; by then they have normally long finished: the wait is free.
//   5. `SetPosition` drops a prefetched batch that no longer matches; the next `Next()`
//      stages its batch on the spot. x and y are fresh tensors on every call, so a batch
//      the caller still holds is never overwritten.
// On the CPU none of this applies: `Next()` gathers straight into new CPU tensors.
// The pinned buffers, events and copy_async are zero/core/stream.h's.
#include "zero/data/batch_sampler.h"

#include <cstring>

#include "zero/core/error.h"
#include "zero/core/philox.h"
#include "zero/core/stream.h"

namespace zero::data {

// One staging slot: where a batch is gathered on the host before its copy to the GPU.
struct BatchSampler::StagingSlot {
  cuda::PinnedBuffer x, y;  // (B, T) int32 each
  cuda::Event copied;       // recorded after the copies out of x and y
};

BatchSampler::BatchSampler(std::vector<int32_t> tokens, int64_t batch, int64_t block, uint64_t seed,
                           Device device)
    : tokens_(std::move(tokens)), batch_(batch), block_(block), seed_(seed), device_(device) {
  const auto n = static_cast<int64_t>(tokens_.size());
  ZERO_CHECK(batch_ >= 1, "expected a batch size of at least 1, got ", batch_);
  ZERO_CHECK(block_ >= 1, "expected a block size of at least 1, got ", block_);
  ZERO_CHECK(block_ < n - 1, "expected block size (", block_,
             ") below the number of tokens minus one (", n, " - 1): each window needs block + 1 ",
             "tokens and there must be more than one window; use a smaller --block-size or more data");
  ZERO_CHECK(n <= static_cast<int64_t>(UINT32_MAX), "expected at most 2^32-1 tokens, got ", n);
  // A batch is batch x block int32 tokens; the product (and its bytes) must not wrap, or a
  // small buffer would be filled with a huge batch.
  int64_t batch_bytes = 0;
  ZERO_CHECK(!__builtin_mul_overflow(batch_, block_, &batch_bytes) &&
                 !__builtin_mul_overflow(batch_bytes, 4, &batch_bytes),
             "expected a batch (", batch_, " x ", block_,
             " tokens) whose size in bytes fits in a 64-bit signed integer; use a smaller "
             "--batch-size");
  if (device_.is_cuda()) {
    const size_t bytes = static_cast<size_t>(batch_ * block_) * sizeof(int32_t);
    for (auto& slot : staging_) {
      slot.reset(new StagingSlot{cuda::PinnedBuffer(bytes), cuda::PinnedBuffer(bytes),
                                 cuda::Event::Create(device_.index())});
    }
  }
}

BatchSampler::~BatchSampler() {
  // A copy may still be reading a pinned buffer; it must finish before the buffer is
  // freed. Errors cannot be thrown from here; a failed wait resurfaces at the next call.
  for (auto& slot : staging_) {
    if (!slot) continue;
    try {
      slot->copied.Synchronize();
    } catch (const Error&) {
    }
  }
}

BatchSampler::BatchSampler(BatchSampler&& other) noexcept = default;
BatchSampler& BatchSampler::operator=(BatchSampler&& other) noexcept = default;

int64_t BatchSampler::WindowOffset(uint64_t index) const {
  // Scale a 32-bit word to [0, range) by a multiply and shift (Lemire): no division, and
  // the bias (at most range / 2^32, below 1e-3 for a 4M-token corpus) is irrelevant here.
  const uint64_t range = tokens_.size() - static_cast<uint64_t>(block_);
  return static_cast<int64_t>((static_cast<uint64_t>(philox_word(seed_, index)) * range) >> 32);
}

void BatchSampler::FillWindows(uint64_t position, int32_t* x, int32_t* y) const {
  const size_t row = static_cast<size_t>(block_) * sizeof(int32_t);
  const uint64_t first = position + static_cast<uint64_t>(shard_rank_ * batch_);  // SetShard
  for (int64_t b = 0; b < batch_; ++b) {
    const int32_t* window = tokens_.data() + WindowOffset(first + b);
    std::memcpy(x + b * block_, window, row);
    std::memcpy(y + b * block_, window + 1, row);
  }
}

BatchSampler::Staged BatchSampler::Stage(uint64_t position) {
  StagingSlot& slot = *staging_[next_slot_];
  next_slot_ ^= 1;
  slot.copied.Synchronize();  // its previous copies must have read the buffers we rewrite
  FillWindows(position, slot.x.data_ptr<int32_t>(), slot.y.data_ptr<int32_t>());

  const TensorOption opt = TensorOption().WithDtype(DataType::I32).OnDevice(device_);
  Staged staged{position, Tensor::Empty({batch_, block_}, opt),  // (B, T)
                Tensor::Empty({batch_, block_}, opt)};           // (B, T)
  const cuda::Stream stream = cuda::Stream::Default(device_.index());
  cuda::copy_async(slot.x, staged.x, stream);
  cuda::copy_async(slot.y, staged.y, stream);
  slot.copied.Record(stream);
  return staged;
}

std::pair<Tensor, Tensor> BatchSampler::Next() {
  if (device_.is_cpu()) {
    const TensorOption opt = TensorOption().WithDtype(DataType::I32);
    Tensor x = Tensor::Empty({batch_, block_}, opt);  // (B, T)
    Tensor y = Tensor::Empty({batch_, block_}, opt);  // (B, T)
    FillWindows(position_, x.data_ptr<int32_t>(), y.data_ptr<int32_t>());
    position_ += batch_ * shard_world_;
    return {x, y};
  }
  if (!pending_.x.defined() || pending_.position != position_) pending_ = Stage(position_);
  Staged current = std::move(pending_);
  position_ += batch_ * shard_world_;
  pending_ = Stage(position_);  // prefetch: on its way while the caller computes
  return {current.x, current.y};
}

void BatchSampler::SetShard(int64_t rank, int64_t world) {
  ZERO_CHECK(world >= 1 && rank >= 0 && rank < world, "BatchSampler::SetShard: expected 0 <= rank "
             "< world, got rank ", rank, " of world ", world);
  int64_t tokens = 0;  // the global batch, all ranks' rows together, must not wrap either
  ZERO_CHECK(!__builtin_mul_overflow(batch_ * block_, world, &tokens) &&
                 !__builtin_mul_overflow(tokens, 4, &tokens),
             "BatchSampler::SetShard: ", world, " ranks of batch ", batch_, " x ", block_,
             " tokens do not fit in a 64-bit signed integer");
  shard_rank_ = rank, shard_world_ = world;
  pending_ = Staged{};  // a prefetched batch holds the old shard's rows
}

void BatchSampler::SetPosition(uint64_t position) {
  position_ = position;
  if (pending_.x.defined() && pending_.position != position_) pending_ = Staged{};
}

}  // namespace zero::data

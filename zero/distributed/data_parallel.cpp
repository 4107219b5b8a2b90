// DataParallel (see data_parallel.h).
//
// Note [Overlapping the all-reduce with backward]
// Zero's kernels all run on the legacy default stream ("compute"). The all-reduces run
// on a second, non-blocking stream ("side"), so NCCL moves bucket 0 while compute goes on
// with the backward of earlier layers. Per bucket b:
//   1. The engine's leaf hook (autograd/leaf_grad_hook.h) reports each parameter whose
//      gradient is final; GradBuckets says when that completes bucket b (in index order,
//      the same on every rank, as NCCL requires).
//   2. On compute: copy the bucket's gradients into its flat buffer (one contiguous
//      tensor, so one NCCL call carries them all), then record event ready[b].
//   3. On side: wait for ready[b] (a GPU-side wait: the host goes on at once), average
//      the flat buffer over ranks in place, record event done[b].
//   4. After backward (Finish): compute waits for every done[b] and copies each flat
//      buffer back into the gradients. Waiting only here is what lets steps 2-3 of early
//      buckets overlap with the backward kernels of later ones.
// Buffers and streams: the flat buffers are allocated once, for the default stream, and
// live as long as this object, so the caching allocator never hands a block that the
// side stream still reads to anyone else (Note [Tensors used on another stream]). The
// next step's copies into them are queued on compute after step 4's wait, so they never
// overtake the previous all-reduce either.
#include "zero/distributed/data_parallel.h"

#include "zero/autograd/grad_mode.h"
#include "zero/autograd/leaf_grad_hook.h"
#include "zero/core/error.h"

namespace zero::dist {
namespace {

std::vector<std::pair<std::string, int64_t>> sizes_of(
    const std::vector<std::pair<std::string, Tensor>>& params) {
  std::vector<std::pair<std::string, int64_t>> sizes;
  for (const auto& [name, t] : params) sizes.emplace_back(name, t.defined() ? t.numel() : 0);
  return sizes;
}

}  // namespace

DataParallel::DataParallel(std::shared_ptr<Communicator> comm,
                           const std::vector<std::pair<std::string, Tensor>>& params,
                           size_t cap_bytes)
    : comm_(std::move(comm)),
      buckets_(sizes_of(params), cap_bytes),
      side_(cuda::Stream::Create(comm_->device())),
      before_(cuda::Event::Create(comm_->device())),
      after_(cuda::Event::Create(comm_->device())) {
  const Device device = Device::Cuda(comm_->device());
  for (const auto& [name, t] : params) {
    ZERO_CHECK(t.device() == device && t.dtype() == DataType::F32,
               "DataParallel: expected parameter '", name, "' to be an f32 tensor on ", device,
               ", got ", to_string(t.dtype()), " on ", t.device());
    index_[t.impl()] = params_.size();
    params_.push_back(t);
  }
  const TensorOption opt = TensorOption().OnDevice(device);
  for (size_t b = 0; b < buckets_.num_buckets(); ++b) {
    flat_.push_back(Tensor::Empty({buckets_.bucket_numel(b)}, opt));  // (bucket_numel,)
    ready_.push_back(cuda::Event::Create(device.index()));
    done_.push_back(cuda::Event::Create(device.index()));
  }
}

DataParallel::~DataParallel() {
  try {
    side_.Synchronize();  // an all-reduce may still be writing a flat buffer
  } catch (const Error&) {  // a destructor must not throw; the error resurfaces later
  }
}

// Every NCCL call of this class runs on the side stream, where the buckets go: one stream
// for the communicator, ordered with the compute stream by a pair of events.
void DataParallel::OnSide(const std::function<void(const cuda::Stream&)>& collective) {
  const cuda::Stream compute = cuda::Stream::Default(comm_->device());
  before_.Record(compute);
  side_.Wait(before_);
  collective(side_);
  after_.Record(side_);
  compute.Wait(after_);
}

void DataParallel::BroadcastParameters() {
  OnSide([&](const cuda::Stream& side) {
    for (const Tensor& p : params_) comm_->Broadcast(p, 0, side);
  });
}

void DataParallel::Backward(const Tensor& loss) {
  buckets_.Reset();
  {
    autograd::LeafGradHookGuard hook([this](const Tensor& leaf) { OnLeafReady(leaf); });
    loss.Backward();
  }
  Finish();
}

float DataParallel::AverageOverRanks(const Tensor& value) {
  ZERO_CHECK(value.numel() == 1, "DataParallel::AverageOverRanks: expected a one-element "
             "tensor, got shape ", shape_to_string(value.sizes()));
  NoGradGuard no_grad;
  Tensor v = value.Detach().Clone();  // a buffer of our own: the all-reduce writes it
  OnSide([&](const cuda::Stream& side) { comm_->AllReduceAverage(v, side); });
  return v.Item();
}

Tensor DataParallel::Slot(size_t param) const {
  const Tensor& p = params_[param];
  const int64_t start = buckets_.offset_of(param);
  return flat_[buckets_.bucket_of(param)].Slice(0, start, start + p.numel()).View(p.sizes());
}

void DataParallel::OnLeafReady(const Tensor& leaf) {
  const auto it = index_.find(leaf.impl());
  if (it == index_.end()) return;  // a leaf that is not one of our parameters
  for (size_t b : buckets_.MarkReady(it->second)) Launch(b);
}

void DataParallel::Launch(size_t b) {
  NoGradGuard no_grad;
  const cuda::Stream compute = cuda::Stream::Default(comm_->device());
  for (size_t k : buckets_.bucket(b)) {
    const Tensor grad = params_[k].Grad();
    if (grad.defined()) {
      Slot(k).CopyFrom_(grad);
    } else {
      Slot(k).Fill_(0);  // not reached by backward (on any rank): contributes nothing
    }
  }
  ready_[b].Record(compute);
  side_.Wait(ready_[b]);
  comm_->AllReduceAverage(flat_[b], side_);
  done_[b].Record(side_);
}

void DataParallel::Finish() {
  for (size_t b : buckets_.MarkRemaining()) Launch(b);
  ZERO_ASSERT(buckets_.all_launched(), "DataParallel: a bucket was never launched");
  NoGradGuard no_grad;
  const cuda::Stream compute = cuda::Stream::Default(comm_->device());
  for (size_t b = 0; b < buckets_.num_buckets(); ++b) {
    compute.Wait(done_[b]);
    for (size_t k : buckets_.bucket(b)) {
      Tensor grad = params_[k].Grad();
      if (grad.defined()) grad.CopyFrom_(Slot(k));
    }
  }
}

}  // namespace zero::dist

// Communicator over NCCL (see communicator.h). Built only with ZERO_HAS_NCCL; the
// CPU-only twin is zero/distributed/no_nccl/communicator.cpp. Every NCCL call is checked and its
// error text (plus NCCL's last detailed message) becomes a zero::CudaError.
#include <nccl.h>

#include <cuda_runtime.h>

#include <cstring>

#include "zero/core/cuda/cuda_check.cuh"
#include "zero/core/cuda/device_guard.cuh"
#include "zero/distributed/communicator.h"

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 13, 0)
#error "Zero needs NCCL 2.13 or newer (ncclAvg, ncclGetLastError); point NCCL_HOME at a newer one"
#endif
static_assert(zero::dist::kUniqueIdBytes == NCCL_UNIQUE_ID_BYTES,
              "unique_id.h's kUniqueIdBytes must match this NCCL's NCCL_UNIQUE_ID_BYTES");

#define ZERO_NCCL_CHECK(call)                                                             \
  do {                                                                                    \
    const ncclResult_t zero_nccl_status_ = (call);                                        \
    if (zero_nccl_status_ != ncclSuccess) {                                               \
      ::zero::detail::throw_cuda_error(#call,                                             \
                                       ::zero::detail::str_cat(                           \
                                           ncclGetErrorString(zero_nccl_status_), " (",   \
                                           ncclGetLastError(nullptr), ")")                \
                                           .c_str(),                                      \
                                       __FILE__, __LINE__);                               \
    }                                                                                     \
  } while (0)

namespace zero::dist {

struct Communicator::Impl {
  ncclComm_t comm = nullptr;
};

namespace {

void check_tensor(const Tensor& t, int device, const char* what) {
  ZERO_CHECK(t.defined() && t.device().is_cuda() && t.device().index() == device &&
                 t.dtype() == DataType::F32 && t.is_contiguous(),
             "Communicator::", what, ": expected a contiguous f32 tensor on cuda:", device,
             ", got ", t.defined() ? t.ToString(0) : std::string("an undefined tensor"));
}

cudaStream_t as_stream(const cuda::Stream& s) { return static_cast<cudaStream_t>(s.handle()); }

}  // namespace

bool Communicator::available() { return true; }

std::string Communicator::version() {
  int v = 0;
  ZERO_NCCL_CHECK(ncclGetVersion(&v));  // e.g. 22809 = 2.28.9
  return detail::str_cat(v / 10000, ".", v / 100 % 100, ".", v % 100);
}

UniqueId Communicator::CreateUniqueId() {
  ncclUniqueId raw;
  ZERO_NCCL_CHECK(ncclGetUniqueId(&raw));
  UniqueId id;
  std::memcpy(id.data(), raw.internal, kUniqueIdBytes);
  return id;
}

Communicator::Communicator(int rank, int world, const UniqueId& id, int device)
    : impl_(std::make_unique<Impl>()), rank_(rank), world_(world), device_(device) {
  ZERO_CHECK(world >= 1 && rank >= 0 && rank < world, "Communicator: expected 0 <= rank < world, "
             "got rank ", rank, " of world ", world);
  const int count = cuda_device_count();
  ZERO_CHECK(device >= 0 && device < count, "Communicator: expected a GPU index in [0, ", count,
             "), got ", device, " (rank ", rank, ")");
  ncclUniqueId raw;
  std::memcpy(raw.internal, id.data(), kUniqueIdBytes);
  cuda::DeviceGuard guard(device);
  ZERO_NCCL_CHECK(ncclCommInitRank(&impl_->comm, world, raw, rank));
}

Communicator::~Communicator() {
  if (impl_ && impl_->comm != nullptr) ncclCommDestroy(impl_->comm);  // must not throw
}

Communicator::Communicator(Communicator&& other) noexcept = default;

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    if (impl_ && impl_->comm != nullptr) ncclCommDestroy(impl_->comm);
    impl_ = std::move(other.impl_);
    rank_ = other.rank_, world_ = other.world_, device_ = other.device_;
  }
  return *this;
}

void Communicator::AllReduceSum(const Tensor& tensor, const cuda::Stream& stream) {
  check_tensor(tensor, device_, "AllReduceSum");
  cuda::DeviceGuard guard(device_);
  ZERO_NCCL_CHECK(ncclAllReduce(tensor.data(), tensor.data(), tensor.numel(), ncclFloat32, ncclSum,
                                impl_->comm, as_stream(stream)));
}

void Communicator::AllReduceAverage(const Tensor& tensor, const cuda::Stream& stream) {
  check_tensor(tensor, device_, "AllReduceAverage");
  cuda::DeviceGuard guard(device_);
  ZERO_NCCL_CHECK(ncclAllReduce(tensor.data(), tensor.data(), tensor.numel(), ncclFloat32, ncclAvg,
                                impl_->comm, as_stream(stream)));
}

void Communicator::Broadcast(const Tensor& tensor, int root, const cuda::Stream& stream) {
  check_tensor(tensor, device_, "Broadcast");
  ZERO_CHECK(root >= 0 && root < world_, "Communicator::Broadcast: expected a root rank in [0, ",
             world_, "), got ", root);
  cuda::DeviceGuard guard(device_);
  ZERO_NCCL_CHECK(ncclBroadcast(tensor.data(), tensor.data(), tensor.numel(), ncclFloat32, root,
                                impl_->comm, as_stream(stream)));
}

}  // namespace zero::dist

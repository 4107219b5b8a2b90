// The communicator of a build without NCCL (or without CUDA): the same API as
// zero/distributed/communicator.h, with every way in throwing one clear error. No object can
// be made, so the collectives are never reached.
#include "zero/core/error.h"
#include "zero/distributed/communicator.h"

namespace zero::dist {

struct Communicator::Impl {};

namespace {

[[noreturn]] void no_nccl(const char* what) {
  ZERO_CHECK(false, what, ": Zero was built without NCCL, so multi-GPU training is disabled; "
             "install NCCL (or set NCCL_HOME) and rebuild with CUDA and -DZERO_NCCL=ON");
  __builtin_unreachable();
}

}  // namespace

bool Communicator::available() { return false; }
std::string Communicator::version() { return "none"; }
UniqueId Communicator::CreateUniqueId() { no_nccl("Communicator::CreateUniqueId"); }
Communicator::Communicator(int, int, const UniqueId&, int) { no_nccl("Communicator"); }
Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
void Communicator::AllReduceSum(const Tensor&, const cuda::Stream&) {
  no_nccl("Communicator::AllReduceSum");
}
void Communicator::AllReduceAverage(const Tensor&, const cuda::Stream&) {
  no_nccl("Communicator::AllReduceAverage");
}
void Communicator::Broadcast(const Tensor&, int, const cuda::Stream&) {
  no_nccl("Communicator::Broadcast");
}

}  // namespace zero::dist

// Streams, events and pinned memory in a CPU-only build (-DZERO_CUDA=OFF or no CUDA
// toolkit): the same API as zero/core/stream.h, with every way in throwing one clear
// error. No object can be made, so the members that need one are never reached.
#include "zero/core/stream.h"

#include "zero/core/error.h"

namespace zero::cuda {
namespace {

[[noreturn]] void no_cuda(const char* what) {
  ZERO_CHECK(false, what, ": Zero was built without CUDA; rebuild with -DZERO_CUDA=ON");
  __builtin_unreachable();
}

}  // namespace

Stream Stream::Create(int) { no_cuda("Stream::Create"); }
Stream Stream::Default(int) { no_cuda("Stream::Default"); }
Stream::~Stream() = default;
Stream::Stream(Stream&& other) noexcept
    : handle_(other.handle_), device_(other.device_), owned_(other.owned_) {}
Stream& Stream::operator=(Stream&&) noexcept { return *this; }
void Stream::Synchronize() const { no_cuda("Stream::Synchronize"); }
void Stream::Wait(const Event&) const { no_cuda("Stream::Wait"); }
bool Stream::Query() const { no_cuda("Stream::Query"); }

Event Event::Create(int) { no_cuda("Event::Create"); }
Event::~Event() = default;
Event::Event(Event&& other) noexcept : handle_(other.handle_), device_(other.device_) {}
Event& Event::operator=(Event&&) noexcept { return *this; }
void Event::Record(const Stream&) { no_cuda("Event::Record"); }
void Event::Synchronize() const { no_cuda("Event::Synchronize"); }
bool Event::Query() const { no_cuda("Event::Query"); }
float Event::ElapsedMs(const Event&, const Event&) { no_cuda("Event::ElapsedMs"); }

EventTimer::EventTimer(int device) : start_(Event::Create(device)), end_(Event::Create(device)) {}
void EventTimer::Start(const Stream&) { no_cuda("EventTimer::Start"); }
void EventTimer::Start() { no_cuda("EventTimer::Start"); }
float EventTimer::Stop() { no_cuda("EventTimer::Stop"); }

PinnedBuffer::PinnedBuffer(size_t) { no_cuda("PinnedBuffer"); }
PinnedBuffer::~PinnedBuffer() = default;
PinnedBuffer::PinnedBuffer(PinnedBuffer&&) noexcept {}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&&) noexcept { return *this; }

void copy_async(const PinnedBuffer&, const Tensor&, const Stream&) { no_cuda("copy_async"); }
void busy_wait(double, const Stream&) { no_cuda("busy_wait"); }

}  // namespace zero::cuda

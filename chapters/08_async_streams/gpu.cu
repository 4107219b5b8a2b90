// Chapter 08 · the GPU half, sections 2-5. A kernel launch only enqueues work; this file
// shows it with numbers: the host returns long before the GPU is done, some calls
// silently wait (sync points), a host clock around a launch measures nothing useful, and
// a side stream is not ordered with the default stream unless an event says so. Section 6,
// two streams overlapping copies with compute, is in overlap.cu. Read zero/core/stream.h
// alongside.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "async_timing.h"
#include "gpu.h"
#include "zero/autograd/functional.h"
#include "zero/core/cuda/cuda_check.cuh"
#include "zero/core/stream.h"

namespace ch08 {
namespace {

using zero::Device;
using zero::Tensor;
using zero::cuda::Event;
using zero::cuda::EventTimer;
using zero::cuda::Stream;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

const zero::TensorOption kCuda = zero::TensorOption().OnDevice(Device::Cuda(0));

// ---------------------------------------------------------------- sections

void launches_return_early(double wait_ms) {
  std::printf("\n== 2. A launch returns before the GPU finishes\n");
  const Stream main = Stream::Default();
  zero::cuda::busy_wait(0, main);  // the first launch loads the kernel: keep it out
  ZERO_CUDA_CHECK(cudaDeviceSynchronize());
  const Clock::time_point t0 = Clock::now();
  zero::cuda::busy_wait(wait_ms * 1e3, main);
  const double launch_ms = ms_since(t0);
  ZERO_CUDA_CHECK(cudaDeviceSynchronize());
  std::printf("  busy_wait(%.0f ms) returned to the host after %8.3f ms\n", wait_ms, launch_ms);
  std::printf("  cudaDeviceSynchronize() returned after        %8.3f ms\n", ms_since(t0));
}

void sync_points(double wait_ms) {
  std::printf("\n== 3. Sync points: which calls wait for queued GPU work\n");
  std::printf("Before each call, %.0f ms of GPU work is queued on the default stream.\n", wait_ms);
  const Tensor x = Tensor::Ones({1024}, kCuda);
  // Leave one free 4 KiB block in the allocator's cache, so that no `x + 1` below calls
  // cudaMalloc for its output: the first row then times the kernel's first launch alone.
  (void)Tensor::Empty({1024}, kCuda);
  float host = 0.0f;
  void* raw = nullptr;
  struct Call {
    const char* name;
    std::function<void()> run;
  };
  // The first launch of a kernel loads its code onto the GPU (CUDA loads kernels lazily,
  // at first use), and loading may wait for the work already queued: the first `x + 1`
  // in a process is a sync point, every later one is not. Warm up before timing.
  const std::vector<Call> calls = {
      {"x + 1, first launch of its kernel", [&] { (void)(x + 1.0f); }},
      {"x + 1 (a Zero op: a launch)", [&] { (void)(x + 1.0f); }},
      {"cudaMalloc(1 MiB)", [&] { ZERO_CUDA_CHECK(cudaMalloc(&raw, 1 << 20)); }},
      {"cudaFree(that block)", [&] { ZERO_CUDA_CHECK(cudaFree(raw)); }},
      {"cudaMemcpy device->host",
       [&] { ZERO_CUDA_CHECK(cudaMemcpy(&host, x.data(), 4, cudaMemcpyDeviceToHost)); }},
      {"zero::sum(x).Item()", [&] { host = zero::sum(x).Item(); }},
      {"x.ToVector<float>()", [&] { host = x.ToVector<float>()[0]; }},
      {"cudaDeviceSynchronize()", [&] { ZERO_CUDA_CHECK(cudaDeviceSynchronize()); }},
  };
  std::printf("  %-36s %10s  %s\n", "call", "host ms", "waited?");
  for (const Call& call : calls) {
    ZERO_CUDA_CHECK(cudaDeviceSynchronize());
    zero::cuda::busy_wait(wait_ms * 1e3, Stream::Default());
    const Clock::time_point t0 = Clock::now();
    call.run();
    const double ms = ms_since(t0);
    std::printf("  %-36s %10.3f  %s\n", call.name, ms, ms > 0.5 * wait_ms ? "yes" : "no");
  }
  ZERO_CUDA_CHECK(cudaDeviceSynchronize());
}

int timing_three_ways(bool quick) {
  std::printf("\n== 4. Timing y = a + b three ways\n");
  const int64_t n = quick ? (1 << 20) : (int64_t{1} << 26);
  const int reps = quick ? 5 : 20;
  zero::Generator gen(3);
  const Tensor a = Tensor::Randn({n}, kCuda, &gen), b = Tensor::Randn({n}, kCuda, &gen);
  const std::vector<float> ha = a.ToVector<float>(), hb = b.ToVector<float>();
  const std::vector<float> hy = (a + b).ToVector<float>();
  for (int64_t i = 0; i < n; ++i) {
    if (hy[i] != ha[i] + hb[i]) {
      std::printf("  MISMATCH at %lld: %g != %g\n", static_cast<long long>(i), hy[i],
                  ha[i] + hb[i]);
      return 1;
    }
  }
  std::printf("  validated against the CPU: all %lld sums equal\n", static_cast<long long>(n));
  // The memory roof, measured now: a device-to-device copy of the same number of bytes.
  const Tensor dst = Tensor::Empty({n}, kCuda);
  struct HostClock {  // host clock around the enqueue only: wrong
    Clock::time_point t0;
    void Start() { t0 = Clock::now(); }
    float Stop() { return static_cast<float>(ms_since(t0)); }
  } host_clock;
  struct SyncClock {  // synchronise, clock, work, synchronise, clock: right but serialising
    Clock::time_point t0;
    void Start() {
      ZERO_CUDA_CHECK(cudaDeviceSynchronize());
      t0 = Clock::now();
    }
    float Stop() {
      ZERO_CUDA_CHECK(cudaDeviceSynchronize());
      return static_cast<float>(ms_since(t0));
    }
  } sync_clock;
  EventTimer events;
  const auto add = [&] { (void)(a + b); };
  const float copy_ms = zero::ex08::median_time_ms(
      events,
      [&] { ZERO_CUDA_CHECK(cudaMemcpy(dst.data(), a.data(), n * 4, cudaMemcpyDeviceToDevice)); },
      2, reps);
  const double copy_tbps = 2.0 * n * 4 / (copy_ms * 1e-3) / 1e12;
  const float t_host = zero::ex08::median_time_ms(host_clock, add, 2, reps);
  ZERO_CUDA_CHECK(cudaDeviceSynchronize());
  const float t_sync = zero::ex08::median_time_ms(sync_clock, add, 2, reps);
  const float t_events = zero::ex08::median_time_ms(events, add, 2, reps);
  std::printf("  copy bandwidth (device-to-device, events): %.2f TB/s\n", copy_tbps);
  std::printf("  %-34s %10s %14s %10s\n", "method", "median ms", "implied TB/s", "% of copy");
  const float times[] = {t_host, t_sync, t_events};
  const char* names[] = {"host clock around the launch", "synchronise, then host clock",
                         "CUDA events"};
  for (int i = 0; i < 3; ++i) {
    const double tbps = 3.0 * n * 4 / (times[i] * 1e-3) / 1e12;  // read a, b; write y
    std::printf("  %-34s %10.4f %14.2f %9.0f%%%s\n", names[i], times[i], tbps,
                100.0 * tbps / copy_tbps, tbps > 1.5 * copy_tbps ? "  <- impossible" : "");
  }
  return 0;
}

void stream_ordering(bool quick) {
  std::printf("\n== 5. Stream ordering: the default stream vs a non-blocking side stream\n");
  const double wait_ms = quick ? 5 : 20;
  const Stream main = Stream::Default();
  const Stream side = Stream::Create();
  zero::cuda::PinnedBuffer pinned(1 << 20);
  std::fill_n(pinned.data_ptr<float>(), (1 << 20) / 4, 0.0f);
  const Tensor t = Tensor::Empty({(1 << 20) / 4}, kCuda);
  Event start = Event::Create(), after_wait = Event::Create(), copied = Event::Create();
  for (const bool join : {false, true}) {
    ZERO_CUDA_CHECK(cudaDeviceSynchronize());
    start.Record(main);
    zero::cuda::busy_wait(wait_ms * 1e3, main);
    after_wait.Record(main);
    if (join) side.Wait(after_wait);  // the side stream's next work waits for the busy-wait
    zero::cuda::copy_async(pinned, t, side);
    copied.Record(side);
    copied.Synchronize();
    after_wait.Synchronize();
    std::printf(
        "  %-44s copy done %7.3f ms after start (busy-wait: %.0f ms)\n",
        join ? "side.Wait(event after the busy-wait):" : "no event: the streams are independent:",
        Event::ElapsedMs(start, copied), wait_ms);
  }
  // Note [Tensors used on another stream] (zero/core/stream.h): `t` was written on `side`;
  // make sure that work is over before `t` goes back to the allocator at scope exit.
  side.Synchronize();
}

}  // namespace

int run_gpu_part(const Options& options) {
  const double wait_ms = options.quick ? 5 : 50;
  launches_return_early(wait_ms);
  sync_points(wait_ms);
  int failures = timing_three_ways(options.quick);
  stream_ordering(options.quick);
  failures += overlap(options);
  std::printf("\n== 7. Asynchronous errors\n");
  std::printf(
      "A kernel's fault is reported by whichever CUDA call comes next, far from the\n"
      "launch. Run with --fault to see it; then with CUDA_LAUNCH_BLOCKING=1 --fault to\n"
      "make every launch synchronous, so the error surfaces at the faulting launch.\n");
  return failures;
}

}  // namespace ch08

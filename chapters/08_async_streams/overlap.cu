// Chapter 08 · section 6: two streams overlapping host->device copies with compute.
// The data is cut into chunks; each chunk is copied from pinned memory and then computed
// on, in the same stream, so the copy of one chunk can run on a copy engine while the SMs
// compute on the chunk before it on the other stream. Besides the total time of each
// schedule, every chunk's copy and compute are timestamped with events, all measured from
// the schedule's one start event: that is the timeline the chapter's figure draws
// (tools/make_figures.py reads the CSV that --timeline writes).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "async_timing.h"
#include "gpu.h"
#include "zero/core/cuda/cuda_check.cuh"
#include "zero/core/error.h"
#include "zero/core/stream.h"
#include "zero/io/atomic_file.h"

namespace ch08 {
namespace {

using zero::Tensor;
using zero::cuda::Event;
using zero::cuda::EventTimer;
using zero::cuda::Stream;

// `iters` dependent FMAs per element: compute whose duration scales with `iters`.
__global__ void fma_chain_kernel(const float* x, float* y, int64_t n, int iters) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int k = 0; k < iters; ++k) v = fmaf(v, 0.999f, 0.001f);
  y[i] = v;
}

float fma_chain_cpu(float v, int iters) {
  for (int k = 0; k < iters; ++k) v = std::fmaf(v, 0.999f, 0.001f);
  return v;
}

void fma_chain(const Tensor& x, const Tensor& y, int iters, const Stream& stream) {
  const int64_t n = x.numel();
  fma_chain_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0,
                     static_cast<cudaStream_t>(stream.handle())>>>(x.data_ptr<float>(),
                                                                   y.data_ptr<float>(), n, iters);
  ZERO_CUDA_LAUNCH_CHECK();
}

// One chunk of one schedule as the GPU timestamped it, in ms after the schedule's start.
// The compute starts when the copy ends: they are consecutive in one stream, and one
// event between them marks both.
struct ChunkTimes {
  int streams, chunk, stream;
  float copy_start, copy_end, compute_end;
};

void print_timeline(const std::vector<ChunkTimes>& rows) {
  std::printf("  timeline (GPU timestamps, ms after the schedule's start event):\n");
  std::printf("  %7s %6s %7s   %-18s%s\n", "streams", "chunk", "stream", "copy", "compute");
  for (const ChunkTimes& r : rows) {
    std::printf("  %7d %6d %7d   %6.3f - %6.3f   %6.3f - %6.3f\n", r.streams, r.chunk, r.stream,
                r.copy_start, r.copy_end, r.copy_end, r.compute_end);
  }
}

// One row per copy and per compute: what tools/make_figures.py draws. Written whole and
// then renamed into place (io::write_file_atomically), like every file Zero saves.
void write_timeline_csv(const std::vector<ChunkTimes>& rows, const std::string& path) {
  std::string csv = "streams,chunk,stream,op,start_ms,end_ms\n";
  char line[128];
  for (const ChunkTimes& r : rows) {
    std::snprintf(line, sizeof(line), "%d,%d,%d,copy,%.4f,%.4f\n", r.streams, r.chunk, r.stream,
                  r.copy_start, r.copy_end);
    csv += line;
    std::snprintf(line, sizeof(line), "%d,%d,%d,compute,%.4f,%.4f\n", r.streams, r.chunk,
                  r.stream, r.copy_end, r.compute_end);
    csv += line;
  }
  zero::io::write_file_atomically(path, csv);  // its errors name the file
  std::printf("  timeline written to %s\n", path.c_str());
}

}  // namespace

int overlap(const Options& options) {
  std::printf("\n== 6. Two streams overlapping host->device copies with compute\n");
  const int chunks = 8;
  const int64_t n = options.quick ? (int64_t{1} << 22) : (int64_t{1} << 28), chunk = n / chunks;
  const zero::TensorOption on_gpu = zero::TensorOption().OnDevice(zero::Device::Cuda(0));
  std::vector<zero::cuda::PinnedBuffer> pinned;  // one pinned staging buffer per chunk
  for (int c = 0; c < chunks; ++c) {
    pinned.emplace_back(chunk * sizeof(float));
    for (int64_t i = 0; i < chunk; ++i)
      pinned[c].data_ptr<float>()[i] = 0.001f * ((c * chunk + i) % 1000);
  }
  const Tensor x = Tensor::Empty({n}, on_gpu), y = Tensor::Empty({n}, on_gpu);
  Stream s[2] = {Stream::Create(), Stream::Create()};
  // x and y may be blocks the default stream used a moment ago: start after its work.
  Event ready = Event::Create(), start = Event::Create(), end = Event::Create(),
        joined = Event::Create();
  ready.Record(Stream::Default());
  s[0].Wait(ready);
  s[1].Wait(ready);

  // Tune the compute so one chunk's compute takes as long as its copy: overlap's best case.
  EventTimer timer;
  const Tensor x0 = x.Slice(0, 0, chunk), y0 = y.Slice(0, 0, chunk);
  zero::cuda::copy_async(pinned[0], x0, s[0]);  // warm-up
  timer.Start(s[0]);
  zero::cuda::copy_async(pinned[0], x0, s[0]);
  const float copy_ms = timer.Stop();
  fma_chain(x0, y0, 64, s[0]);  // warm-up
  timer.Start(s[0]);
  fma_chain(x0, y0, 256, s[0]);
  const int iters = std::max(16, static_cast<int>(256 * copy_ms / timer.Stop()));
  timer.Start(s[0]);
  fma_chain(x0, y0, iters, s[0]);
  const float compute_ms = timer.Stop();
  std::printf(
      "  %d chunks of %.0f MiB; one chunk: copy %.3f ms, compute %.3f ms (%d FMAs/element)\n",
      chunks, chunk * 4.0 / (1 << 20), copy_ms, compute_ms, iters);

  // Three events per chunk: before its copy, between copy and compute, after the compute.
  std::vector<Event> marks;
  for (int i = 0; i < 3 * chunks; ++i) marks.push_back(Event::Create());
  std::vector<ChunkTimes> timeline;
  float measured[2];
  for (const int streams : {1, 2}) {
    start.Record(s[0]);
    s[1].Wait(start);
    for (int c = 0; c < chunks; ++c) {
      const Stream& st = s[c % streams];
      const Tensor xc = x.Slice(0, c * chunk, (c + 1) * chunk),
                   yc = y.Slice(0, c * chunk, (c + 1) * chunk);
      marks[3 * c].Record(st);
      zero::cuda::copy_async(pinned[c], xc, st);
      marks[3 * c + 1].Record(st);
      fma_chain(xc, yc, iters, st);
      marks[3 * c + 2].Record(st);
    }
    joined.Record(s[1]);
    s[0].Wait(joined);  // the end event counts both streams' work
    end.Record(s[0]);
    end.Synchronize();  // every mark is complete too: each is before `end` or `joined`
    measured[streams - 1] = Event::ElapsedMs(start, end);
    for (int c = 0; c < chunks; ++c) {
      timeline.push_back({streams, c, c % streams, Event::ElapsedMs(start, marks[3 * c]),
                          Event::ElapsedMs(start, marks[3 * c + 1]),
                          Event::ElapsedMs(start, marks[3 * c + 2])});
    }
  }
  // Note [Tensors used on another stream]: y was written on s[0] and s[1], which the
  // default stream does not wait for. Join them before reading y or releasing x and y.
  s[0].Synchronize();
  s[1].Synchronize();
  const std::vector<float> hy = y.ToVector<float>();
  for (int64_t i = 0; i < n; i += 9973) {
    const float expected = fma_chain_cpu(0.001f * (i % 1000), iters);
    if (std::fabs(hy[i] - expected) > 1e-6f * std::max(1.0f, std::fabs(expected))) {
      std::printf("  MISMATCH at %lld: %g, expected %g\n", static_cast<long long>(i), hy[i],
                  expected);
      return 1;
    }
  }
  std::printf("  validated sampled outputs against the CPU\n");
  const double c_total = copy_ms * chunks, t_total = compute_ms * chunks;
  std::printf("  %-10s %12s %22s\n", "streams", "measured ms", "model ms (ex08.1)");
  for (const int streams : {1, 2}) {
    std::printf("  %-10d %12.3f %22.3f\n", streams, measured[streams - 1],
                zero::ex08::pipelined_time_ms(c_total, t_total, chunks, streams));
  }
  std::printf("  speed-up of two streams over one: %.2fx (model: %.2fx)\n",
              measured[0] / measured[1],
              zero::ex08::pipelined_time_ms(c_total, t_total, chunks, 1) /
                  zero::ex08::pipelined_time_ms(c_total, t_total, chunks, 2));
  print_timeline(timeline);
  if (!options.timeline_csv.empty()) write_timeline_csv(timeline, options.timeline_csv);
  return 0;
}

}  // namespace ch08

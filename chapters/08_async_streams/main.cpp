// Chapter 08 · Asynchronous execution and streams: the CPU half.
//
// Prints what your exercise's overlap model (async_timing.h) predicts for copying data
// to the GPU in chunks while computing on earlier chunks, then, with a GPU, runs gpu.cu:
// launches that return early, sync points, three ways of timing, stream ordering, and
// copy/compute overlap measured against the model, with the timeline of every chunk.
// `--timeline FILE` also writes that timeline as CSV (the chapter's figure is drawn from
// it); `--fault` runs only the asynchronous-error demonstration.
// Run: ch08_async_streams [--quick] [--timeline FILE] | --fault.
#include <cstdio>
#include <cstring>

#include "async_timing.h"  // your exercise: solutions/ or exercises/08_async_streams
#include "gpu.h"
#include "zero/core/device.h"
#include "zero/core/error.h"

namespace {

void overlap_model() {
  std::printf("\n== 1. Overlapping copies with compute: the model (your exercise ex08.1)\n");
  std::printf(
      "Copy 10 ms of data to the GPU and compute 10 ms on it. On one stream the two\n"
      "never overlap. Split into k chunks on two streams, chunk i+1 is copied while\n"
      "chunk i is computed on; only the first copy and the last compute stay exposed.\n");
  std::printf("  %8s %16s %16s   %s\n", "chunks", "1 stream (ms)", "2 streams (ms)",
              "2 streams, copy 10 ms, compute 4 ms");
  for (const int k : {1, 2, 4, 8, 16, 32}) {
    std::printf("  %8d %16.2f %16.2f %16.2f\n", k, zero::ex08::pipelined_time_ms(10, 10, k, 1),
                zero::ex08::pipelined_time_ms(10, 10, k, 2),
                zero::ex08::pipelined_time_ms(10, 4, k, 2));
  }
  std::printf("The limit is the slower of the two engines: 2x at best, when copy = compute.\n");
}

}  // namespace

int main(int argc, char** argv) {
  ch08::Options options;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      options.quick = true;
    } else if (!std::strcmp(argv[i], "--fault")) {
      options.fault = true;
    } else if (!std::strcmp(argv[i], "--timeline") && i + 1 < argc) {
      options.timeline_csv = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--timeline FILE] | --fault\n", argv[0]);
      return 2;
    }
  }
  std::printf("08 · Asynchronous execution and streams%s\n", options.quick   ? " (quick)"
                                                             : options.fault ? " (fault demo)"
                                                                             : "");
  int failures = 0;
  try {
    if (!options.fault) overlap_model();
#ifdef ZERO_CHAPTER_HAS_CUDA
    if (!zero::cuda_available()) {
      std::printf("\n[skipped] GPU part: no CUDA device visible (this machine has none)\n");
    } else if (options.fault) {
      return ch08::run_fault_demo();
    } else {
      failures += ch08::run_gpu_part(options);
    }
#else
    std::printf("\n[skipped] GPU part: Zero was built without CUDA\n");
#endif
  } catch (const zero::Error& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  if (failures != 0) {
    std::printf("\nFAILED: %d result(s) did not match their reference\n", failures);
    return 1;
  }
  return 0;
}

// Chapter 03 · Devices: where a tensor's memory lives, how it moves, and what the
// move costs. This file is the CPU half: the Device and TensorOption vocabulary,
// Tensor::To and its rules (same device is free, mixed devices are refused,
// gradients move with their leaf), and the copy model of exercise 03 fitted to host
// memcpy. gpu.cu measures real host<->GPU copies. Read next: chapters/04_allocator.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "copy_model.h"  // exercise 03: solutions/03_device or your exercises/03_device
#include "tools/gpu_median.h"
#include "zero/autograd/functional.h"
#include "zero/core/tensor.h"

#ifdef ZERO_CHAPTER_HAS_CUDA
#include "copy_bench.h"
#endif

namespace {

using zero::Device;
using zero::Tensor;
using zero::TensorOption;

// The message of the zero::Error that `f` throws (or a note that it did not throw).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const zero::Error& e) {
    return e.what();
  }
  return "(no error)";
}

void section(const char* title) { std::printf("\n== %s\n", title); }

void show_devices() {
  section("1. Devices and tensor options");
  std::printf("Device::Cpu()          -> %s\n", Device::Cpu().ToString().c_str());
  std::printf("Device::Cuda(1)        -> %s\n", Device::Cuda(1).ToString().c_str());
  std::printf("Device::Parse(\"cuda:2\") -> %s\n", Device::Parse("cuda:2").ToString().c_str());
  std::printf("Device::Parse(\"gpu\")   -> error: %s\n",
              error_of([] { Device::Parse("gpu"); }).c_str());
  const TensorOption opt =
      TensorOption().WithDtype(zero::DataType::I32).OnDevice(Device::Cuda(0));
  std::printf("TensorOption().WithDtype(I32).OnDevice(cuda:0): dtype %s, device %s, "
              "requires_grad %d\n", zero::to_string(opt.dtype), opt.device.ToString().c_str(),
              opt.requires_grad);
  std::printf("built with CUDA: %s, CUDA devices visible: %d\n",
              zero::cuda_built() ? "yes" : "no", zero::cuda_device_count());
}

// Returns false on a wrong value.
bool show_moves(Device gpu, bool have_gpu) {
  section("2. A tensor's memory belongs to one device");
  Tensor x = Tensor::Arange(0, 6).Reshape({2, 3});
  Tensor same = x.To(Device::Cpu());
  std::printf("x.To(cpu) on a CPU tensor returns x itself: %s (no copy)\n",
              same.impl() == x.impl() ? "yes" : "NO");
  if (!have_gpu) {
    std::printf("asking for a tensor on cuda:0 -> error: %s\n",
                error_of([&] { x.Cuda(); }).c_str());
    return same.impl() == x.impl();
  }
  Tensor g = x.To(gpu);
  std::printf("x.To(%s): %s\n", gpu.ToString().c_str(), g.ToString().c_str());
  const bool round_trip = g.Cpu().ToVector<float>() == x.ToVector<float>();
  std::printf("round trip cpu -> %s -> cpu keeps every value: %s\n", gpu.ToString().c_str(),
              round_trip ? "yes" : "NO");
  std::printf("x + x.To(%s) -> error: %s\n", gpu.ToString().c_str(),
              error_of([&] { Tensor y = x + g; }).c_str());
  return round_trip && same.impl() == x.impl();
}

// Returns false when the gradient did not move as the rule says.
bool show_gradients(Device target) {
  section("3. Gradients move with their tensor");
  Tensor w = Tensor::From({1, 2, 3}, {3}).SetRequiresGrad();
  zero::sum(w * w).Backward();  // dL/dw = 2w
  std::printf("leaf w = [1, 2, 3], L = sum(w * w), after Backward w.Grad() = %s\n",
              w.Grad().ToString().c_str());
  Tensor moved = w.To(target);
  std::printf("w.To(%s): same tensor %s, leaf %s, requires_grad %s, grad on %s\n",
              target.ToString().c_str(), moved.impl() == w.impl() ? "yes" : "no",
              moved.is_leaf() ? "yes" : "no", moved.requires_grad() ? "yes" : "no",
              moved.Grad().device().ToString().c_str());
  const bool ok = moved.requires_grad() && moved.Grad().device() == target &&
                  moved.Grad().Cpu().ToVector<float>() == std::vector<float>{2, 4, 6};
  std::printf("the moved gradient is [2, 4, 6]: %s\n", ok ? "yes" : "NO");
  // w * 2 lives on the CPU whatever `target` is, so it is moved to cuda:0: a move to
  // its own device would return it untouched and show nothing. The history check
  // comes before any allocation, so a machine without a GPU gets the same error.
  Tensor computed = w * 2.0f;
  const std::string refused = error_of([&] { computed.To(Device::Cuda(0)); });
  std::printf("a computed tensor cannot move while recording: (w * 2).To(cuda:0) -> error: %s\n",
              refused.c_str());
  const bool stays = computed.To(Device::Cpu()).impl() == computed.impl();
  std::printf("(w * 2).To(cpu), where it already is, returns itself, history and all: %s\n",
              stays ? "yes" : "NO");
  return ok && refused.find("autograd history") != std::string::npos && stays;
}

// The CPU analogue of the GPU measurement, and the model's limit: a host memcpy is
// not one link. Copies that fit in the CPU caches run at cache speed, large ones at
// DRAM speed, so no single bandwidth describes them and the fit is poor (the worst
// error printed says how poor). A copy over PCIe is one link, and fits far better.
bool show_host_copy_model(bool quick) {
  section("4. The copy model on host memcpy (exercise 03)");
  const size_t max_bytes = quick ? (size_t{4} << 20) : (size_t{256} << 20);
  std::vector<char> src(max_bytes, 1), dst(max_bytes, 0);
  std::vector<ch03::CopySample> samples;
  for (size_t n = 1024; n <= max_bytes; n *= 4) {
    const int reps = n <= (size_t{1} << 20) ? 200 : (quick ? 3 : 10);
    // One untimed run warms the pages up; then the median of `reps` on the steady clock.
    const double ms = zero::tools::median_cpu_ms(
        [&] { std::memcpy(dst.data(), src.data(), n); }, 1, reps);
    samples.push_back({static_cast<double>(n), ms * 1e-3});
  }
  if (std::memcmp(src.data(), dst.data(), max_bytes) != 0) {
    std::printf("MISMATCH: memcpy did not copy\n");
    return false;
  }
  const ch03::CopyModel m = ch03::fit_copy_model(samples);
  std::printf("%12s %12s %10s %12s\n", "bytes", "time (us)", "GB/s", "model (us)");
  for (const ch03::CopySample& s : samples) {
    std::printf("%12.0f %12.3f %10.2f %12.3f\n", s.bytes, s.seconds * 1e6,
                s.bytes / s.seconds / 1e9, m.Seconds(s.bytes) * 1e6);
  }
  std::printf("fit: latency %.3f us, bandwidth %.2f GB/s, half bandwidth at %.0f bytes; "
              "worst error %.0f%%\n", m.latency_s * 1e6, m.bytes_per_s / 1e9,
              m.HalfBandwidthBytes(), 100.0 * ch03::worst_relative_error(m, samples));
  return true;
}

}  // namespace

int run(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  std::printf("Chapter 03: devices, moving tensors, and the cost of a copy%s\n",
              quick ? " (quick)" : "");
  const bool have_gpu = zero::cuda_available();
  bool ok = true;
  show_devices();
  ok &= show_moves(Device::Cuda(0), have_gpu);
  ok &= show_gradients(have_gpu ? Device::Cuda(0) : Device::Cpu());
  ok &= show_host_copy_model(quick);
  int status = ok ? 0 : 1;
#ifdef ZERO_CHAPTER_HAS_CUDA
  if (have_gpu) {
    const int gpu_status = ch03::run_copy_benchmark(quick);
    if (gpu_status != 0) status = gpu_status;
  } else {
    std::printf("\n[skipped] GPU part: no CUDA device visible (this machine has none)\n");
  }
#else
  std::printf("\n[skipped] GPU part: Zero was built without CUDA\n");
#endif
  if (!ok) std::printf("\nFAILED: a value above is wrong\n");
  return status;
}

// An unfinished exercise (or any Zero error) ends the program with its message.
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const zero::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

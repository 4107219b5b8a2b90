// Chapter 04 · The caching allocator. CPU half: one GPT training step as a list of
// allocations (gpt_trace.h), replayed through your FreeList (exercise 04) and Zero's
// CachingPool, which must agree; then Zero's real allocator (DefaultTensorContext)
// watched through a training-like and a generation-like phase, with TrimFreePool in
// between, on the CPU and, when there is one, the GPU. gpu.cu times the cache
// against raw cudaMalloc/cudaFree. Read next: zero/core/tensor_context.h.
#include <cstdio>
#include <string>
#include <vector>

#include "best_fit.h"  // exercise 04: solutions/04_allocator or your exercises/04_allocator
#include "gpt_trace.h"
#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/core/tensor.h"
#include "zero/core/tensor_context.h"

namespace {

using zero::Device;
using zero::MemoryStats;
using zero::Tensor;

void section(const char* title) { std::printf("\n== %s\n", title); }

double mib(size_t bytes) { return bytes / (1024.0 * 1024.0); }

void print_stats(const char* when, const MemoryStats& s) {
  std::printf("%-26s live %9.2f MiB  peak %9.2f  reserved %9.2f  cached %9.2f  "
              "hits %6llu  misses %4llu  raw allocs %4llu  raw frees %4llu\n",
              when, mib(s.live_bytes), mib(s.peak_bytes), mib(s.reserved_bytes),
              mib(s.cached_bytes), static_cast<unsigned long long>(s.hits),
              static_cast<unsigned long long>(s.misses),
              static_cast<unsigned long long>(s.raw_allocs),
              static_cast<unsigned long long>(s.raw_frees));
}

// Addresses without memory: enough to replay a 2 GB trace on any machine.
class AddressOnly : public zero::RawAllocator {
 public:
  void* Allocate(size_t bytes) override {
    next_ += (bytes + 4095) / 4096 * 4096;
    return reinterpret_cast<void*>(next_);
  }
  void Free(void*, size_t) override {}
  std::string Name() const override { return "addresses only"; }

 private:
  uintptr_t next_ = 1 << 20;
};

// Replays `steps` training steps through the FreeList and the CachingPool side by
// side; returns false if they disagree or the cache keeps missing after step 1.
bool replay_trace(const ch04::GptShape& shape, int steps) {
  section("1. One GPT training step, as the allocator sees it");
  const std::vector<ch04::Event> trace = ch04::gpt_step_trace(shape);
  size_t peak = 0, live = 0, allocs = 0;
  std::vector<size_t> sizes(trace.size(), 0);
  for (const ch04::Event& e : trace) {
    if (e.alloc) sizes[e.id] = e.bytes, live += e.bytes, ++allocs;
    else live -= sizes[e.id];
    peak = std::max(peak, live);
  }
  std::printf("B=%lld T=%lld C=%lld layers=%lld vocab=%lld: %zu allocations a step, "
              "%.1f MiB live at the peak\n",
              (long long)shape.batch, (long long)shape.seq, (long long)shape.width,
              (long long)shape.layers, (long long)shape.vocab, allocs, mib(peak));

  section("2. Your FreeList (exercise 04) against Zero's CachingPool, 512-byte rounding");
  AddressOnly raw_mine, raw_zero;
  ch04::FreeList mine(raw_mine, 512);
  zero::CachingPool pool(raw_zero, 512);
  bool ok = true;
  std::printf("%5s | %-32s | %-32s\n", "step", "FreeList: hits misses raw", "CachingPool: hits misses raw");
  for (int step = 1; step <= steps; ++step) {
    const MemoryStats a0 = mine.stats(), b0 = pool.Stats();
    ch04::replay(trace, [&](size_t n) { return mine.Take(n); }, [&](void* p) { mine.Give(p); },
                 [](const std::vector<void*>&, const std::vector<size_t>&) {});
    ch04::replay(trace, [&](size_t n) { return pool.Allocate(n); }, [&](void* p) { pool.Free(p); },
                 [](const std::vector<void*>&, const std::vector<size_t>&) {});
    const MemoryStats a = mine.stats(), b = pool.Stats();
    std::printf("%5d | %10llu %10llu %10llu | %10llu %10llu %10llu\n", step,
                (unsigned long long)(a.hits - a0.hits), (unsigned long long)(a.misses - a0.misses),
                (unsigned long long)(a.raw_allocs - a0.raw_allocs),
                (unsigned long long)(b.hits - b0.hits), (unsigned long long)(b.misses - b0.misses),
                (unsigned long long)(b.raw_allocs - b0.raw_allocs));
    if (a.hits != b.hits || a.misses != b.misses || a.reserved_bytes != b.reserved_bytes) {
      std::printf("MISMATCH: your FreeList and Zero's CachingPool decided differently\n");
      ok = false;
    }
    if (step > 1 && b.raw_allocs != b0.raw_allocs) {
      std::printf("MISMATCH: the cache still calls the raw allocator in step %d\n", step);
      ok = false;
    }
  }
  std::printf("reserved after %d steps: %.1f MiB for a %.1f MiB peak (%.0f%% overhead)\n", steps,
              mib(pool.Stats().reserved_bytes), mib(peak),
              100.0 * (static_cast<double>(pool.Stats().reserved_bytes) / peak - 1.0));
  return ok;
}

// One step of a small model: LayerNorm(gelu(x * w + b)) with a mean-square loss,
// backward, and an SGD update (which allocates too, like any optimiser).
void train_step(const Tensor& x, const std::vector<Tensor>& params) {
  Tensor h = zero::gelu(x * params[0] + params[1]);               // (B, T, C)
  Tensor y = zero::layer_norm(h, params[2], params[3]);             // (B, T, C)
  (zero::sum(y * y) * (1.0f / static_cast<float>(y.numel()))).Backward();  // mean square
  zero::NoGradGuard no_grad;
  for (const Tensor& p : params) {
    const_cast<Tensor&>(p).CopyFrom_(p - p.Grad() * 0.01f);
    const_cast<Tensor&>(p).ZeroGrad();
  }
}

// Training steps, TrimFreePool, then generation-like steps (one sequence, growing
// by one position, forward only) on `device`, printing the context's statistics.
bool watch_context(Device device, bool quick) {
  std::printf("\n-- on %s\n", device.ToString().c_str());
  zero::TensorContext& ctx = zero::DefaultTensorContext::Get(device);
  const int64_t batch = quick ? 8 : 32, seq = quick ? 32 : 256, width = quick ? 64 : 384;
  const zero::TensorOption opt = zero::TensorOption().OnDevice(device);
  std::vector<Tensor> params = {Tensor::Randn({width}, opt), Tensor::Zeros({width}, opt),
                                Tensor::Ones({width}, opt), Tensor::Zeros({width}, opt)};
  for (Tensor& p : params) p.SetRequiresGrad();
  const Tensor x = Tensor::Randn({batch, seq, width}, opt);  // (B, T, C)
  ctx.ResetPeak();
  print_stats("before training", ctx.Stats());
  bool ok = true;
  for (int step = 1; step <= 4; ++step) {
    const MemoryStats before = ctx.Stats();
    train_step(x, params);
    const MemoryStats after = ctx.Stats();
    print_stats(("training step " + std::to_string(step)).c_str(), after);
    if (step > 2 && after.raw_allocs != before.raw_allocs) {
      std::printf("MISMATCH: training step %d still called the raw allocator\n", step);
      ok = false;
    }
  }
  const size_t reserved_training = ctx.Stats().reserved_bytes;
  ctx.TrimFreePool();
  print_stats("after TrimFreePool", ctx.Stats());
  ctx.ResetPeak();
  {
    zero::NoGradGuard no_grad;
    for (int64_t t = 1; t <= (quick ? 8 : 64); ++t) {  // one sequence, growing
      Tensor xt = x.Slice(0, 0, 1).Slice(1, 0, t);    // (1, t, C)
      Tensor y = zero::layer_norm(zero::gelu(xt * params[0] + params[1]), params[2], params[3]);
      ok &= y.sizes() == zero::Shape({1, t, width});
    }
  }
  print_stats("after generation", ctx.Stats());
  std::printf("reserved: %.2f MiB after training, %.2f MiB after generation; peak in "
              "generation %.3f MiB\n", mib(reserved_training), mib(ctx.Stats().reserved_bytes),
              mib(ctx.Stats().peak_bytes));
  return ok;
}

}  // namespace

int run(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  std::printf("Chapter 04: the caching allocator%s\n", quick ? " (quick)" : "");
  ch04::GptShape shape;
  if (quick) shape = {4, 64, 64, 2, 2, 65};
  bool ok = replay_trace(shape, 3);

  section("3. Zero's allocator: DefaultTensorContext::Get(device).Stats()");
  const bool have_gpu = zero::cuda_available();
  ok &= watch_context(Device::Cpu(), quick);
  if (have_gpu) ok &= watch_context(Device::Cuda(0), quick);
  int status = ok ? 0 : 1;
#ifdef ZERO_CHAPTER_HAS_CUDA
  if (have_gpu) {
    const int gpu_status = ch04::run_allocator_benchmark(shape, quick ? 2 : 5);
    if (gpu_status != 0) status = gpu_status;
  } else {
    std::printf("\n[skipped] GPU part: no CUDA device visible (this machine has none)\n");
  }
#else
  std::printf("\n[skipped] GPU part: Zero was built without CUDA\n");
#endif
  if (!ok) std::printf("\nFAILED: see MISMATCH above\n");
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

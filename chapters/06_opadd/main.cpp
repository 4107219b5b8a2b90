// Chapter 06 · OpAdd: one `a + b` followed through every layer of Zero, forward and
// backward, printing the real objects at each step, then timed end to end.
//
// Forward:  operator+ -> RunOp<OpAdd> -> TensorOp::Apply -> OpAdd::OpValue_ (allocates
// through DefaultTensorContext) -> ops::add (checks) -> binary_cpu / binary_cuda.
// Backward: Tensor::Backward (engine.cpp) -> OpAdd::Backward_ -> sum_to_shape -> a.Grad().
// Your exercise (op_mul_add.h) adds an op of your own and its backward. The trace runs
// on the CPU and, when there is one, on the GPU; gpu.cu only holds the GPU timers.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <omp.h>

#include "op_mul_add.h"  // your exercise: solutions/06_opadd or exercises/06_opadd
#include "tools/gpu_median.h"
#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/autograd/graph.h"
#include "zero/autograd/ops/elementwise_ops.h"
#include "zero/core/tensor_context.h"
#include "zero/kernels/cpu/parallel.h"  // kCheapLoopGrain: when ops::add goes parallel
#include "zero/kernels/cpu_threads.h"
#include "zero/kernels/dims_arg.h"
#include "zero/kernels/tensor_ops.h"
#ifdef ZERO_CHAPTER_HAS_CUDA
#include "gpu.h"
#endif

namespace {

using namespace zero;
using autograd::graph_to_string;

void section(const std::string& title) { std::printf("\n== %s ==\n", title.c_str()); }

std::string describe(const Tensor& t) {
  return shape_to_string(t.sizes()) + " " + to_string(t.dtype()) + " " + t.device().ToString();
}

// Indents every line of `text` by two spaces.
std::string indent(const std::string& text) {
  std::string out = "  ";
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '\n' && i + 1 < text.size()) out += "  ";
  }
  return out;
}

int expect(bool ok, const char* what) {
  std::printf("  check: %-54s %s\n", what, ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}

bool all_equal(const Tensor& t, float v) {
  const std::vector<float> x = t.ToVector<float>();
  return std::all_of(x.begin(), x.end(), [v](float e) { return e == v; });
}

// ---------------------------------------------------------------- forward

int trace_forward(Device device) {
  section("1. Forward: c = a + b on " + device.ToString());
  const TensorOption opt = TensorOption().OnDevice(device);
  Tensor a = Tensor::Arange(0, 12, 1, opt).View({4, 3}).Detach().SetRequiresGrad();  // (4, 3)
  Tensor b = Tensor::From({100, 200, 300}, {3}, opt.WithRequiresGrad());            // (3)
  std::printf("a: %s, leaf, requires_grad\nb: %s, leaf, requires_grad\n", describe(a).c_str(),
              describe(b).c_str());

  std::printf("[operator+]   zero/autograd/ops/elementwise_ops.cpp: a + b is add(a, b),\n"
              "              which is RunOp<OpAdd>({a, b}). We take the same steps by hand:\n");
  auto op = std::make_shared<autograd::OpAdd>();
  std::printf("[RunOp]       make_shared<OpAdd>(): an op named \"%s\", no inputs yet (%zu)\n",
              op->name(), op->inputs().size());
  TensorContext& ctx = DefaultTensorContext::Get(device);
  const size_t live_before = ctx.Stats().live_bytes;
  const Tensor c = op->Apply({a, b})[0];  // (4, 3)
  const size_t live_after = ctx.Stats().live_bytes;
  std::printf("[Apply]       ran OpValue_ with recording off, then recorded the op because\n"
              "              an input requires grad: needs_grad = (%d, %d)\n",
              op->needs_grad(0), op->needs_grad(1));
  std::printf("[OpValue_]    allocated c %s through DefaultTensorContext::Get(%s):\n"
              "              live bytes %zu -> %zu (+%zu: 12 floats, rounded up)\n",
              describe(c).c_str(), device.ToString().c_str(), live_before, live_after,
              live_after - live_before);
  const DimsArg db = DimsArg::Broadcast(b.meta(), c.sizes());
  std::printf("[ops::add]    zero/kernels/elementwise.cpp: same device, f32, shapes broadcast\n"
              "              to [4, 3] -> binary_%s(kAdd, a, b, c)\n",
              device.is_cpu() ? "cpu" : "cuda");
  std::printf("[kernel]      b is read through DimsArg sizes [%lld, %lld] strides [%lld, %lld]:\n"
              "              the strided path (stride 0 = broadcast; see chapter 05)\n",
              static_cast<long long>(db.sizes[0]), static_cast<long long>(db.sizes[1]),
              static_cast<long long>(db.strides[0]), static_cast<long long>(db.strides[1]));
  std::printf("c = %s\n", c.ToString().c_str());

  int bad = 0;
  bad += expect(c.ToVector<float>() == (a + b).ToVector<float>(), "c equals a + b");
  bad += expect(c.ToVector<float>()[11] == 311.0f, "c[3, 2] = 11 + 300");
  bad += expect(live_after - live_before >= 12 * sizeof(float),
                "the allocator's live bytes grew by c's block");
  bad += expect(c.grad_fn().get() == op.get() && !c.is_leaf(), "c.grad_fn() is our OpAdd");

  std::printf("recorded? c.requires_grad() = %d, grad_fn = %s\n", c.requires_grad(),
              c.grad_fn()->name());
  const Tensor c_no_grad = [&] { NoGradGuard no_grad; return a + b; }();  // only in this scope
  std::printf("under NoGradGuard: requires_grad() = %d, grad_fn = %s\n",
              c_no_grad.requires_grad(), c_no_grad.grad_fn() ? "set" : "null (nothing recorded)");
  bad += expect(c_no_grad.grad_fn() == nullptr, "NoGradGuard records no graph");
  const Tensor plain = a.Detach() + b.Detach();
  bad += expect(plain.grad_fn() == nullptr, "no input requires grad: no graph either");
  std::printf("graph_to_string(c):\n%s", indent(graph_to_string(c)).c_str());
  return bad;
}

// ---------------------------------------------------------------- backward

int trace_backward(Device device) {
  section("2. Backward on " + device.ToString());
  const TensorOption opt = TensorOption().OnDevice(device);
  Tensor a = Tensor::Arange(0, 12, 1, opt).View({4, 3}).Detach().SetRequiresGrad();  // (4, 3)
  Tensor b = Tensor::From({100, 200, 300}, {3}, opt.WithRequiresGrad());            // (3)
  Tensor c = a + b;                                                                  // (4, 3)
  const Tensor g = Tensor::Ones({4, 3}, opt);
  std::printf("c.Backward(g), g = ones %s. The engine (zero/autograd/engine.cpp) orders\n"
              "the ops consumers-first, puts g in c's gradient slot, and calls\n"
              "OpAdd::Backward_, which returns sum_to_shape(g, a.sizes()) = g for a and\n"
              "sum_to_shape(g, b.sizes()) for b: b was read once per row, so its gradient\n"
              "sums over the broadcast dimension:\n", describe(g).c_str());
  const Tensor gb = autograd::sum_to_shape(g, b.sizes());  // (3)
  std::printf("  sum_to_shape(g, [3]) = %s\n", gb.ToString().c_str());
  c.Backward(g, /*keep_graph=*/true);
  std::printf("a.Grad() = %s\nb.Grad() = %s\n", a.Grad().ToString().c_str(),
              b.Grad().ToString().c_str());
  int bad = 0;
  bad += expect(a.Grad().sizes() == a.sizes() && all_equal(a.Grad(), 1.0f),
                "a.Grad() = ones [4, 3]");
  bad += expect(b.Grad().sizes() == b.sizes() && all_equal(b.Grad(), 4.0f), "b.Grad() = 4 4 4");
  c.Backward(g);  // the first call kept the graph; leaves accumulate
  bad += expect(all_equal(b.Grad(), 8.0f), "second Backward accumulates: b.Grad() = 8 8 8");
  std::printf("after the second Backward (graph freed):\n%s", indent(graph_to_string(c)).c_str());

  section("3. Your op: OpMulAdd (exercise 06) on " + device.ToString());
  Tensor x = Tensor::Randn({4, 3}, opt).SetRequiresGrad();  // (4, 3)
  Tensor w = Tensor::Randn({3}, opt).SetRequiresGrad();     // (3)
  Tensor z = Tensor::Randn({4, 1}, opt).SetRequiresGrad();  // (4, 1)
  const Tensor fused = ch06::mul_add(x, w, z);              // (4, 3)
  const Tensor composed = x * w + z;                        // (4, 3)
  std::printf("mul_add(x, w, z):\n%sx * w + z:\n%s", indent(graph_to_string(fused)).c_str(),
              indent(graph_to_string(composed)).c_str());
  const Tensor r = Tensor::Randn({4, 3}, opt);
  fused.Backward(r);
  const std::vector<Tensor> mine = {x.Grad(), w.Grad(), z.Grad()};
  for (Tensor* t : {&x, &w, &z}) t->ZeroGrad();
  composed.Backward(r);
  const std::vector<Tensor> ref = {x.Grad(), w.Grad(), z.Grad()};
  bool same = fused.ToVector<float>() == composed.ToVector<float>();
  for (int i = 0; i < 3; ++i) {
    const std::vector<float> m = mine[i].ToVector<float>(), e = ref[i].ToVector<float>();
    for (size_t k = 0; k < e.size(); ++k) same = same && std::fabs(m[k] - e[k]) <= 1e-5f;
  }
  bad += expect(same, "OpMulAdd values and gradients match x * w + z");
  return bad;
}

// ---------------------------------------------------------------- timing

using Timer = std::function<double(const std::function<void()>&, int iters, int reps)>;
using CopyGbs = std::function<double(size_t bytes, int reps)>;  // the bandwidth baseline

// Microseconds per call of `f`: the median (median_cpu_ms) of `reps` runs of at least
// `iters` calls and 20 ms each (less is scheduler noise on a small shared machine), after
// 20 ms of warm-up.
double host_us_per_call(const std::function<void()>& f, int iters, int reps) {
  using Clock = std::chrono::steady_clock;
  const auto us_since = [](Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  int64_t calls = 0;
  const Clock::time_point warm = Clock::now();
  while (calls < 3 || us_since(warm) < 20e3) f(), ++calls;
  calls = std::max<int64_t>(iters, static_cast<int64_t>(20e3 * calls / us_since(warm)) + 1);
  const double ms = tools::median_cpu_ms([&] {
    for (int64_t i = 0; i < calls; ++i) f();
  }, 0, reps);
  return ms * 1e3 / static_cast<double>(calls);
}

// memcpy of `bytes` split over as many threads as ops::add uses for that many floats
// (all of them above kCheapLoopGrain), so "% copy" compares like with like.
double host_copy_gbs(size_t bytes, int reps) {
  std::vector<char> src(bytes, 1), dst(bytes);
  const int parts =
      static_cast<int64_t>(bytes / 4) > ops::kCheapLoopGrain ? omp_get_max_threads() : 1;
  const auto copy = [&](int p) {  // slice p of `parts`
    const size_t begin = bytes * p / parts, end = bytes * (p + 1) / parts;
    std::memcpy(dst.data() + begin, src.data() + begin, end - begin);
  };
  const double us = host_us_per_call([&] {
    if (parts == 1) return copy(0);  // no parallel region at all, as in ops::add
#pragma omp parallel for num_threads(parts)
    for (int p = 0; p < parts; ++p) copy(p);
  }, 2, reps);
  return 2.0 * bytes / us / 1e3;
}

int time_path(Device device, const Timer& timer, const CopyGbs& copy_gbs, bool quick) {
  section("4. Timing the whole path on " + device.ToString());
  std::printf("a, b, c of n floats, same shape (no broadcast). Rows: ops::add into a ready\n"
              "output (dispatch + kernel); a + b under NoGradGuard (+ allocation, op object);\n"
              "a + b recorded (+ graph); forward + backward (+ engine, two gradient copies).\n"
              "add GB/s counts ops::add's 12 bytes per element; copy GB/s is a %s\n"
              "of the same n floats (8 bytes per element)%s, measured now.\n",
              device.is_cpu() ? "std::memcpy" : "device-to-device cudaMemcpy",
              device.is_cpu() ? " on ops::add's threads" : "");
  std::vector<int64_t> sizes = {1 << 10, 1 << 14, 1 << 18, 1 << 22};
  if (!device.is_cpu()) sizes.push_back(1 << 26);
  if (quick) sizes = {1 << 10, 1 << 16};
  const int reps = quick ? 3 : device.is_cpu() ? 7 : 5;
  std::printf("%9s %11s %11s %11s %11s %9s %9s %7s\n", "n", "ops::add us", "no-grad us",
              "recorded us", "fwd+bwd us", "add GB/s", "copy GB/s", "% copy");
  const TensorOption opt = TensorOption().OnDevice(device);
  int bad = 0;
  for (const int64_t n : sizes) {
    const int iters = static_cast<int>(std::clamp<int64_t>((int64_t{1} << 22) / n, 2, 200));
    Tensor a = Tensor::Randn({n}, opt).SetRequiresGrad();
    Tensor b = Tensor::Randn({n}, opt).SetRequiresGrad();
    const Tensor g = Tensor::Ones({n}, opt), out = Tensor::Empty({n}, opt);
    // Validate before timing: values against the CPU, gradients against 1.
    const std::vector<float> ha = a.ToVector<float>(), hb = b.ToVector<float>();
    Tensor c = a + b;
    c.Backward(g);
    const std::vector<float> hc = c.ToVector<float>();
    bool ok = all_equal(a.Grad(), 1.0f) && all_equal(b.Grad(), 1.0f);
    for (int64_t i = 0; i < n; ++i) ok = ok && hc[i] == ha[i] + hb[i];
    if (!ok) {
      std::printf("%9lld  MISMATCH against the CPU reference\n", static_cast<long long>(n));
      bad += 1;
      continue;
    }
    const double raw = timer([&] { ops::add(a, b, out); }, iters, reps);
    const double no_grad = timer([&] { NoGradGuard guard; Tensor t = a + b; }, iters, reps);
    const double recorded = timer([&] { Tensor t = a + b; }, iters, reps);
    const double full = timer([&] {
      Tensor t = a + b;
      t.Backward(g);
      for (Tensor* p : {&a, &b}) p->ZeroGrad();
    }, iters, reps);
    const double gbs = 12.0 * n / raw / 1e3, copy = copy_gbs(n * sizeof(float), reps);
    std::printf("%9lld %11.2f %11.2f %11.2f %11.2f %9.1f %9.1f %6.1f%%\n",
                static_cast<long long>(n), raw, no_grad, recorded, full, gbs, copy,
                100.0 * gbs / copy);
  }
  return bad;
}

int run(Device device, const Timer& timer, const CopyGbs& copy_gbs, bool quick) {
  return trace_forward(device) + trace_backward(device) +
         time_path(device, timer, copy_gbs, quick);
}

}  // namespace

int main(int argc, char** argv) {
  use_passive_openmp_wait(argv);  // as train_gpt does: waiting threads sleep (cpu_threads.h)
  bool quick = false;
  for (int i = 1; i < argc; ++i) quick = quick || std::strcmp(argv[i], "--quick") == 0;
  std::printf("Chapter 06 · OpAdd: one a + b through every layer%s\n", quick ? " (--quick)" : "");
  int bad = 0;
  try {
    bad += run(Device::Cpu(), host_us_per_call, host_copy_gbs, quick);
#ifdef ZERO_CHAPTER_HAS_CUDA
    if (cuda_available()) {
      bad += run(Device::Cuda(0), ch06::cuda_us_per_call, ch06::cuda_copy_gbs, quick);
    } else {
      std::printf("\n[skipped] GPU part: no CUDA device visible (this machine has none)\n");
    }
#else
    std::printf("\n[skipped] GPU part: this build has no CUDA (ZERO_CUDA=OFF or no toolkit)\n");
#endif
  } catch (const NotImplementedError& e) {
    std::printf("\n%s\nComplete the exercise in op_mul_add.h, rebuild and run again.\n", e.what());
    return 1;
  }
  if (bad != 0) {
    std::printf("\n%d check(s) FAILED\n", bad);
    return 1;
  }
  std::printf("\nall checks passed\n");
  return 0;
}

// Chapter 05 · Dispatch: how `ops::add(a, b, out)` checks its arguments, picks the
// CPU or CUDA kernel, and hands the kernel each operand's layout as a `DimsArg`.
//
// This file is the CPU half: the dispatch layer (zero/kernels/tensor_ops.h), DimsArg
// offsets worked by hand and by your exercise (offset.h), the contiguous fast path
// against the strided path with timings, and the error for mixed devices. The GPU
// half (gpu.cu) repeats the timings on an [8192, 8192] add.
// Run: build/default/chapters/05_dispatch/ch05_dispatch [--quick]
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "offset.h"  // your exercise: solutions/05_dispatch or exercises/05_dispatch
#include "tools/gpu_median.h"
#include "zero/autograd/functional.h"
#include "zero/core/tensor.h"
#include "zero/kernels/dims_arg.h"
#include "zero/kernels/tensor_ops.h"
#ifdef ZERO_CHAPTER_HAS_CUDA
#include "gpu.h"
#endif

namespace {

using namespace zero;
using ch05::broadcast_dims;
using ch05::operand_offset;

void section(const char* title) { std::printf("\n== %s ==\n", title); }

std::string dims_to_string(const DimsArg& d) {
  Shape sizes(d.sizes, d.sizes + d.ndim), strides(d.strides, d.strides + d.ndim);
  return "sizes " + shape_to_string(sizes) + " strides " + shape_to_string(strides);
}

// 0, 1, 2, ... : every element's value is its position in the buffer.
Tensor positions(const Shape& sizes) { return Tensor::Arange(0, shape_numel(sizes)).View(sizes); }

// ---------------------------------------------------------------- 1. dispatch

int show_dispatch() {
  section("1. One function per kernel: ops::add(a, b, out)");
  const Tensor a = positions({4, 3});                        // (4, 3)
  const Tensor b = Tensor::From({100, 200, 300}, {3});       // (3), broadcast over rows
  const Tensor out = Tensor::Empty({4, 3});                  // (4, 3), allocated by the caller
  ops::add(a, b, out);  // checks devices, dtypes, shapes; then binary_cpu (CUDA: binary_cuda)
  std::printf("a %s + b %s -> out %s on %s\n", shape_to_string(a.sizes()).c_str(),
              shape_to_string(b.sizes()).c_str(), shape_to_string(out.sizes()).c_str(),
              out.device().ToString().c_str());
  const std::vector<float> got = out.ToVector<float>();
  std::printf("out row 3: %.0f %.0f %.0f (expected 109 210 311)\n", got[9], got[10], got[11]);
  int bad = (got[9] == 109 && got[10] == 210 && got[11] == 311) ? 0 : 1;

  std::printf("a caller's mistake is caught before any kernel runs:\n");
  try {
    ops::add(a, b, Tensor::Empty({3, 4}));
    std::printf("  no error for a [3, 4] output: MISMATCH\n");
    bad += 1;
  } catch (const Error& e) {
    std::printf("  zero::Error: %s\n", e.what());
  }
  return bad;
}

// ---------------------------------------------------------------- 2. DimsArg

// Prints how `operand` is read as `arg`, and checks that your operand_offset finds, at
// every position, the value Tensor::ToVector reads from `view` (the operand as the
// kernel sees it: itself, or its broadcast Expand).
int check_view(const char* name, const Tensor& operand, const Tensor& view, const DimsArg& arg) {
  const float* buffer = static_cast<const float*>(view.node()->data());
  const std::vector<float> values = view.ToVector<float>();
  std::string first;
  int bad = 0;
  for (int64_t i = 0; i < view.numel(); ++i) {
    const int64_t at = view.offset() + operand_offset(i, arg);
    if (i < 8) first += std::to_string(at) + " ";
    bad += buffer[at] != values[i];
  }
  std::printf("%-18s %-7s strides %-7s offset %-2lld -> DimsArg %s\n"
              "  buffer positions read: %s...  [%s]\n",
              name, shape_to_string(operand.sizes()).c_str(),
              shape_to_string(operand.strides()).c_str(),
              static_cast<long long>(operand.offset()), dims_to_string(arg).c_str(),
              first.c_str(), bad == 0 ? "ok" : "MISMATCH");
  return bad == 0 ? 0 : 1;
}

int show_dims_arg() {
  section("2. DimsArg: sizes and strides, passed to the kernel by value");
  std::printf("sizeof(DimsArg) = %zu bytes (kMaxDims = %d): it travels in the kernel's\n"
              "parameter space, so a launch needs no cudaMalloc/cudaMemcpy for metadata.\n",
              sizeof(DimsArg), kMaxDims);
  const Tensor x = positions({4, 6});  // (4, 6), value == buffer position
  const Tensor t = x.Transpose(0, 1);  // (6, 4), strides (1, 6)
  const DimsArg targ = DimsArg::Of(t.meta());
  std::printf("worked example: x^T has sizes [6, 4], strides [1, 6]; linear index 9 is\n"
              "(9 / 4, 9 %% 4) = (2, 1), so its offset is 2*1 + 1*6 = 8; "
              "operand_offset says %lld\n",
              static_cast<long long>(operand_offset(9, targ)));
  int bad = operand_offset(9, targ) == 8 ? 0 : 1;

  const Shape out = {4, 6};
  const Tensor row = x.Slice(0, 2, 3);      // (1, 6): row 2, offset 12
  const Tensor col = x.Slice(1, 5, 6);      // (4, 1): column 5, offset 5
  const Tensor strided = x.Slice(1, 1, 6, 2);  // (4, 3): every second column
  auto check = [&](const char* name, const Tensor& operand, const Shape& out_sizes) {
    return check_view(name, operand, operand.Expand(out_sizes),
                      broadcast_dims(operand.sizes(), operand.strides(), out_sizes));
  };
  bad += check("x", x, out);
  bad += check("x^T", t, t.sizes());
  bad += check("x[:, 1::2]", strided, strided.sizes());
  bad += check("x[2:3] as [4, 6]", row, out);
  bad += check("x[:, 5:] as [4, 6]", col, out);
  return bad;
}

// ---------------------------------------------------------------- 3. CPU timings

// Your exercise in a CPU loop: out (contiguous) = a + b read through DimsArgs.
void strided_add_cpu(const float* a, const DimsArg& da, const float* b, const DimsArg& db,
                     float* out, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) out[i] = a[operand_offset(i, da)] + b[operand_offset(i, db)];
}

int time_cpu(bool quick) {
  const int64_t n = quick ? 512 : 2048;
  const int reps = quick ? 3 : 5;
  section("3. Contiguous fast path vs strided path, CPU");
  std::printf("out[i, j] = a[i, j] + b'[i, j] for [%lld, %lld] f32, median of %d runs.\n"
              "GB/s counts the bytes that must move: read a, read b' once, write out.\n",
              static_cast<long long>(n), static_cast<long long>(n), reps);
  const Tensor a = Tensor::Randn({n, n});
  const Tensor b = Tensor::Randn({n, n});
  const Tensor bt = Tensor::Randn({n, n}).Transpose(0, 1);  // (n, n), strides (1, n)
  const Tensor row = Tensor::Randn({n});                    // (n), broadcast over rows
  Tensor out = Tensor::Empty({n, n});
  const int64_t numel = n * n, bytes = numel * 4;

  // Every time: one untimed run (first touch of the pages, caches, the thread pool),
  // then the median of `reps` on the host's steady clock.
  using tools::median_cpu_ms;
  std::vector<float> scratch(numel);
  const double copy_ms = median_cpu_ms(
      [&] { std::memcpy(scratch.data(), a.data_ptr<float>(), bytes); }, 1, reps);
  const double copy_gbs = 2.0 * bytes / copy_ms / 1e6;
  std::printf("%-40s %9.3f ms %7.1f GB/s  (baseline)\n", "memcpy of one tensor", copy_ms, copy_gbs);

  // Reference values straight from the 2-D definitions, on the base buffers.
  const float* pa = a.data_ptr<float>();
  const float* pbt = static_cast<const float*>(bt.node()->data());  // row-major b'^T
  struct Case { const char* name; Tensor b; int64_t bytes; std::vector<float> expected; };
  std::vector<Case> cases = {
      {"contiguous + contiguous", b, 3 * bytes, {}},
      {"contiguous + transposed", bt, 3 * bytes, {}},
      {"contiguous + broadcast row", row, 2 * bytes + n * 4, {}}};
  for (Case& c : cases) c.expected.resize(numel);
  const float* pb = b.data_ptr<float>();
  const float* pr = row.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      cases[0].expected[i * n + j] = pa[i * n + j] + pb[i * n + j];
      cases[1].expected[i * n + j] = pa[i * n + j] + pbt[j * n + i];
      cases[2].expected[i * n + j] = pa[i * n + j] + pr[j];
    }
  }

  int bad = 0;
  auto report = [&](const std::string& name, const Case& c, double ms) {
    const bool ok = out.ToVector<float>() == c.expected;
    bad += ok ? 0 : 1;
    const double gbs = c.bytes / ms / 1e6;
    std::printf("%-40s %9.3f ms %7.1f GB/s %5.1f%%  %s\n", name.c_str(), ms, gbs,
                100.0 * gbs / copy_gbs, ok ? "ok" : "MISMATCH");
  };
  for (const Case& c : cases) {
    out.Fill_(0.0f);
    report(std::string("ops::add  ") + c.name, c,
           median_cpu_ms([&] { ops::add(a, c.b, out); }, 1, reps));
  }
  for (const Case& c : cases) {
    out.Fill_(0.0f);
    const DimsArg da = broadcast_dims(a.sizes(), a.strides(), out.sizes());
    const DimsArg db = broadcast_dims(c.b.sizes(), c.b.strides(), out.sizes());
    const double ms = median_cpu_ms([&] {
      strided_add_cpu(a.data_ptr<float>(), da, c.b.data_ptr<float>(), db,
                      out.data_ptr<float>(), numel);
    }, 1, reps);
    report(std::string("your loop ") + c.name, c, ms);
  }
  return bad;
}

// ---------------------------------------------------------------- 4. mixed devices

int show_mixed_devices() {
  section("4. Mixing devices");
  const Tensor a = Tensor::Ones({2, 3});  // on the CPU
  Tensor b;
  if (cuda_available()) {
    b = Tensor::Ones({3}, TensorOption().OnDevice(Device::Cuda(0)));
  } else {
    // No GPU here: a stand-in whose metadata says cuda:0 over a CPU buffer. The check
    // reads only metadata and runs before any kernel touches memory, so it sees
    // exactly what it would see with a real GPU tensor. (Never do this outside a demo.)
    TensorMeta meta = contiguous_meta({3}, DataType::F32, Device::Cuda(0));
    b = Tensor(meta, Tensor::Ones({3}).node());
    std::printf("(no CUDA device visible: b is a CPU buffer labelled cuda:0)\n");
  }
  std::printf("a on %s, b on %s; a + b:\n", a.device().ToString().c_str(),
              b.device().ToString().c_str());
  try {
    const Tensor c = a + b;
    std::printf("  no error: MISMATCH\n");
    return 1;
  } catch (const Error& e) {
    std::printf("  zero::Error: %s\n", e.what());
  }
  std::printf("ops::add(a, b, out) directly:\n");
  try {
    ops::add(a, b, Tensor::Empty({2, 3}));
    std::printf("  no error: MISMATCH\n");
    return 1;
  } catch (const Error& e) {
    std::printf("  zero::Error: %s\n", e.what());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) quick = quick || std::strcmp(argv[i], "--quick") == 0;
  std::printf("Chapter 05 · Dispatch%s\n", quick ? " (--quick)" : "");
  int bad = 0;
  try {
    bad += show_dispatch();
    bad += show_dims_arg();
    bad += time_cpu(quick);
    bad += show_mixed_devices();
    section("5. GPU");
#ifdef ZERO_CHAPTER_HAS_CUDA
    if (cuda_available()) {
      bad += ch05::run_gpu_part(quick);
    } else {
      std::printf("[skipped] GPU part: no CUDA device visible (this machine has none)\n");
    }
#else
    std::printf("[skipped] GPU part: this build has no CUDA (ZERO_CUDA=OFF or no toolkit)\n");
#endif
  } catch (const NotImplementedError& e) {
    std::printf("\n%s\nComplete the exercise in offset.h, rebuild and run again.\n", e.what());
    return 1;
  }
  if (bad != 0) {
    std::printf("\n%d check(s) FAILED\n", bad);
    return 1;
  }
  std::printf("\nall checks passed\n");
  return 0;
}

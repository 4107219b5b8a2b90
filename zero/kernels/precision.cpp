// The precision switch of precision.h: MX_FAST_MATMUL read once, and the in-process
// setting that replaces it. The setting is one atomic, so a benchmark may switch it
// between launches from any thread; kernels read it when they are launched.
#include "zero/kernels/precision.h"

#include <atomic>
#include <cstdlib>

#include "zero/core/device.h"
#include "zero/core/error.h"

namespace zero {
namespace {

// -1: nothing set in-process; otherwise a MatmulPrecision.
std::atomic<int> in_process{-1};

}  // namespace

MatmulPrecision parse_matmul_precision(const std::string& value) {
  if (value.empty() || value == "0" || value == "ieee") return MatmulPrecision::kIeee;
  if (value == "3xtf32") return MatmulPrecision::kSplitTf32;
  if (value == "tf32") return MatmulPrecision::kTf32;
  if (value == "1" || value == "fp16") return MatmulPrecision::kFp16;
  ZERO_CHECK(false, "MX_FAST_MATMUL must be one of 0, ieee, 3xtf32, tf32, 1, fp16, got \"", value,
             "\"");
  return MatmulPrecision::kIeee;
}

const char* matmul_precision_name(MatmulPrecision precision) {
  switch (precision) {
    case MatmulPrecision::kIeee: return "ieee";
    case MatmulPrecision::kSplitTf32: return "3xtf32";
    case MatmulPrecision::kTf32: return "tf32";
    case MatmulPrecision::kFp16: return "fp16";
  }
  return "?";
}

MatmulPrecision matmul_precision() {
  static const MatmulPrecision from_env = [] {
    const char* value = std::getenv("MX_FAST_MATMUL");
    return parse_matmul_precision(value == nullptr ? "" : value);
  }();
  const int set = in_process.load(std::memory_order_relaxed);
  return set < 0 ? from_env : static_cast<MatmulPrecision>(set);
}

void set_matmul_precision(MatmulPrecision precision) {
  in_process.store(static_cast<int>(precision), std::memory_order_relaxed);
}

void clear_matmul_precision() { in_process.store(-1, std::memory_order_relaxed); }

ScopedMatmulPrecision::ScopedMatmulPrecision(MatmulPrecision precision)
    : previous_(in_process.exchange(static_cast<int>(precision), std::memory_order_relaxed)) {}

ScopedMatmulPrecision::~ScopedMatmulPrecision() {
  in_process.store(previous_, std::memory_order_relaxed);
}

bool tf32_supported(int device) {
  return cuda_built() && cuda_compute_capability(device) >= 80;
}

}  // namespace zero

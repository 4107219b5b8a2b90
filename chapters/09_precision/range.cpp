// Chapter 09 · sections 3 and 4, on the CPU: the range of each format, why FP16 needs
// loss scaling and BF16 does not (measured on the gradients of a small GPT), the dynamic
// loss scale of your ex09.2 at work, and why master weights and Adam's moments stay FP32.
// main.cpp runs sections 1-2 first; formats.h is the format model used here.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "chapter.h"
#include "formats.h"
#include "mixed_precision.h"  // your exercise: solutions/ or exercises/09_precision
#include "zero/core/half.h"
#include "zero/core/tensor.h"
#include "zero/nn/gpt.h"

namespace ch09 {
namespace {

void range_table() {
  std::printf("\n== 3. Range: overflow, underflow and loss scaling\n");
  std::printf("  %-6s %15s %16s %19s %8s\n", "format", "largest finite", "smallest normal",
              "smallest subnormal", "decades");
  for (const Format& f : kFormats) {
    double max = std::numeric_limits<float>::max(), normal = std::numeric_limits<float>::min(),
           sub = std::numeric_limits<float>::denorm_min();
    if (f.bits() != 32) {
      max = table(f).max_finite();
      normal = table(f).min_normal();
      sub = table(f).min_subnormal();
    }
    std::printf("  %-6s %15.6g %16.4g %19.4g %8.1f\n", f.name, max, normal, sub,
                std::log10(max / sub));
  }
}

// The parameter gradients of a small GPT after one backward pass in FP32 on the CPU, on
// random tokens (fixed seeds, so the figures do not change from run to run). Gradients
// that are exactly zero are left out: they are zero in every format.
std::vector<float> gpt_gradients(zero::nn::GPTConfig* config, int64_t* batch) {
  zero::nn::GPTConfig& c = *config;
  c.vocab_size = 65;
  c.block_size = 64;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 128;
  c.dropout = 0.0f;
  *batch = 8;
  zero::nn::GPT model(c, 1234);
  std::mt19937 gen(5);  // the standard fixes its output, so every platform draws the same
  std::vector<int32_t> tokens(static_cast<size_t>(*batch * (c.block_size + 1)));
  for (int32_t& t : tokens) t = static_cast<int32_t>(gen() % c.vocab_size);
  std::vector<int32_t> ids, targets;
  for (int64_t b = 0; b < *batch; ++b) {
    const auto row = tokens.begin() + b * (c.block_size + 1);
    ids.insert(ids.end(), row, row + c.block_size);
    targets.insert(targets.end(), row + 1, row + c.block_size + 1);
  }
  const zero::Tensor x = zero::Tensor::FromI32(ids, {*batch, c.block_size});      // (B, T)
  const zero::Tensor y = zero::Tensor::FromI32(targets, {*batch, c.block_size});  // (B, T)
  model.Loss(x, y).Backward();
  std::vector<float> grads;
  for (const zero::Tensor& p : model.Parameters()) {
    for (const float g : p.Grad().ToVector<float>()) {
      if (g != 0.0f) grads.push_back(g);
    }
  }
  return grads;
}

struct Rounded {
  double flushed = 0, subnormal = 0, overflow = 0;  // fractions of the values
  double rel_error = 0;                             // mean over the values of |g' - g| / |g|
};

// The gradients multiplied by `scale`, rounded to FP16 (or BF16) and divided again.
Rounded round_scaled(const std::vector<float>& g, float scale, bool fp16) {
  Rounded r;
  const float smallest_normal = fp16 ? 6.103515625e-5f : std::numeric_limits<float>::min();
  for (const float v : g) {
    const float s = v * scale;
    const float q = fp16 ? static_cast<float>(zero::f16(s)) : static_cast<float>(zero::bf16(s));
    r.flushed += q == 0.0f;
    r.subnormal += q != 0.0f && std::fabs(q) < smallest_normal;
    r.overflow += std::isinf(q);
    r.rel_error += std::fabs(static_cast<double>(q) / scale - v) / std::fabs(v);
  }
  const double n = static_cast<double>(g.size());
  r.flushed /= n;
  r.subnormal /= n;
  r.overflow /= n;
  r.rel_error /= n;
  return r;
}

bool overflows_fp16(const std::vector<float>& g, float scale) {
  for (const float v : g) {
    if (!std::isfinite(static_cast<float>(zero::f16(v * scale)))) return true;
  }
  return false;
}

int loss_scaling(const std::vector<float>& g, const zero::nn::GPTConfig& c, int64_t batch) {
  std::vector<float> mag(g.size());
  std::transform(g.begin(), g.end(), mag.begin(), [](float v) { return std::fabs(v); });
  std::sort(mag.begin(), mag.end());
  const auto below = [&](double t) {
    return static_cast<double>(std::lower_bound(mag.begin(), mag.end(), t) - mag.begin()) /
           mag.size();
  };
  std::printf(
      "\nThe parameter gradients of a GPT (%lld layers, %lld wide, %lld heads, vocab %lld)\n"
      "after one FP32 backward pass on %lld x %lld random tokens: %zu non-zero values,\n"
      "|g| from %.2e to %.2e, median %.2e. Below FP16's smallest normal\n"
      "(2^-14): %.1f%%; at most half its smallest subnormal (2^-25, so 0 in FP16): %.3f%%.\n",
      (long long)c.n_layer, (long long)c.n_embd, (long long)c.n_head, (long long)c.vocab_size,
      (long long)batch, (long long)c.block_size, g.size(), mag.front(), mag.back(),
      mag[mag.size() / 2], 100 * below(std::ldexp(1.0, -14)),
      100 * below(std::nextafter(std::ldexp(1.0, -25), 1.0)));
  std::printf(
      "Multiplied by the loss scale S, rounded as a 16-bit backward pass stores them,\n"
      "then divided by S in FP32. Error: the mean over the values of |g' - g| / |g|.\n");
  std::printf("  %-6s %6s %11s %11s %10s %11s\n", "format", "S", "flushed", "subnormal", "overflow",
              "rel. error");
  int failures = 0;
  for (const int e : {0, 8, 16, 24, -1}) {
    const bool fp16 = e >= 0;
    const float scale = std::ldexp(1.0f, std::max(e, 0));
    const Rounded r = round_scaled(g, scale, fp16);
    // What was flushed must be exactly what lies at or below 2^-25 after scaling.
    const double want = below(std::nextafter(std::ldexp(1.0, -25) / scale, 1.0));
    const bool ok = !fp16 || std::fabs(r.flushed - want) < 0.5 / g.size();
    failures += !ok;
    std::printf("  %-6s %4s%-2d %10.3f%% %10.3f%% %9.3f%% %11.1e%s\n", fp16 ? "FP16" : "BF16", "2^",
                std::max(e, 0), 100 * r.flushed, 100 * r.subnormal, 100 * r.overflow,
                r.overflow > 0 ? INFINITY : r.rel_error, ok ? "" : "  MISMATCH");
  }

  // Dynamic loss scaling (your ex09.2): start too high, as a trainer does, and let the
  // overflows bring the scale down; every `growth_interval` good steps it probes higher.
  zero::ex09::LossScale s;
  s.scale = s.max_scale;
  s.growth_interval = 4;
  std::printf(
      "\nDynamic loss scaling (your ex09.2) on these gradients, from S = 2^24, growing\n"
      "after %d good steps (2000 in a real run):\n  %-7s",
      s.growth_interval, "step");
  for (int step = 1; step <= 16; ++step) std::printf(" %3d", step);
  std::string line_scale = "  log2 S ", line_step = "  taken  ";
  int taken = 0;
  for (int step = 1; step <= 16; ++step) {
    char buf[16];
    std::snprintf(buf, sizeof buf, " %3d", static_cast<int>(std::log2(s.scale)));
    line_scale += buf;
    const bool inf = overflows_fp16(g, s.scale);
    const bool take = zero::ex09::update_loss_scale(s, inf);
    taken += take;
    line_step += take ? "   y" : "   -";
  }
  std::printf("\n%s\n%s\n", line_scale.c_str(), line_step.c_str());
  std::printf("%d of 16 steps taken; the largest S that does not overflow here is 2^%d.\n", taken,
              [&] {
                int e = 24;
                while (e > 0 && overflows_fp16(g, std::ldexp(1.0f, e))) --e;
                return e;
              }());
  return failures;
}

// Section 4: an update smaller than half an ulp of the weight is lost in a 16-bit
// weight, however many steps repeat it; an FP32 master copy keeps every one. And Adam's
// second moment holds g^2, which leaves FP16's range entirely.
int master_weights(const std::vector<float>& g) {
  std::printf("\n== 4. Mixed precision: FP32 master weights and moments\n");
  std::printf(
      "A weight of 1 (a LayerNorm gain at init) after N updates w -= u, stored in\n"
      "each format (the update is rounded into the stored weight every step):\n");
  std::printf("  %8s %6s %10s %10s %10s %10s\n", "u", "N", "exact", "FP32", "BF16", "FP16");
  int failures = 0;
  for (const double u : {1e-3, 1e-4}) {
    const int n = 1000;
    float w32 = 1.0f, w_bf = 1.0f, w_h = 1.0f;
    for (int i = 0; i < n; ++i) {
      w32 -= static_cast<float>(u);
      w_bf = static_cast<float>(zero::bf16(w_bf - static_cast<float>(u)));
      w_h = static_cast<float>(zero::f16(w_h - static_cast<float>(u)));
    }
    const double exact = 1.0 - n * u;
    failures += std::fabs(w32 - exact) > 1e-4;
    std::printf("  %8.0e %6d %10.6f %10.6f %10.6f %10.6f\n", u, n, exact, w32, w_bf, w_h);
  }
  std::printf("Half an ulp of BF16 just below 1 is %.3g, of FP16 %.3g.\n", std::ldexp(1.0, -9),
              std::ldexp(1.0, -12));
  size_t lost16 = 0, lost_bf = 0;
  for (const float v : g) {
    lost16 += static_cast<float>(zero::f16(v * v)) == 0.0f;
    lost_bf += static_cast<float>(zero::bf16(v * v)) == 0.0f;
  }
  std::printf(
      "Adam's second moment v ~ g^2 for the gradients of section 3: %.1f%% of them\n"
      "are 0 in FP16, %.1f%% in BF16 (and the update divides by sqrt(v)).\n",
      100.0 * lost16 / g.size(), 100.0 * lost_bf / g.size());
  return failures;
}

}  // namespace

int range_and_mixed_precision() {
  range_table();
  zero::nn::GPTConfig config;
  int64_t batch = 0;
  const std::vector<float> grads = gpt_gradients(&config, &batch);
  int failures = loss_scaling(grads, config, batch);
  failures += master_weights(grads);
  return failures;
}

}  // namespace ch09

// The op profiler (see profiler.h): one start/end pair per outermost scope, turned into
// milliseconds and summed by name only in Stop(), so recording never waits for the GPU.
#include "zero/autograd/profiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "zero/core/stream.h"
#include "zero/core/time_accounts.h"

namespace zero::profiler {

namespace {

using Clock = std::chrono::steady_clock;

struct Span {
  const char* name;
  const char* pass;
  size_t start, end;  // indices into the event or clock arrays
  // On the CPU, the kernel and allocator accounts (time_accounts.h) at the start, and
  // after the end what they grew by in between.
  double kernel_ms = 0, allocator_ms = 0;
};

struct State {
  bool on = false;
  Device device = Device::Cpu();
  int depth = 0;               // open scopes; only depth 0 records
  std::vector<Span> spans;
  std::vector<cuda::Event> events;  // reused across recordings: creating one costs more
  size_t used = 0;                  // events handed out in this recording
  std::vector<Clock::time_point> clocks;
};

State& state() {
  static State s;
  return s;
}

// Marks "now" in the device's timeline and returns its index.
size_t mark() {
  State& s = state();
  if (!s.device.is_cuda()) {
    s.clocks.push_back(Clock::now());
    return s.clocks.size() - 1;
  }
  if (s.used == s.events.size()) s.events.push_back(cuda::Event::Create(s.device.index()));
  s.events[s.used].Record(cuda::Stream::Default(s.device.index()));
  return s.used++;
}

double elapsed_ms(const Span& span) {
  State& s = state();
  if (!s.device.is_cuda()) {
    return std::chrono::duration<double, std::milli>(s.clocks[span.end] - s.clocks[span.start])
        .count();
  }
  return cuda::Event::ElapsedMs(s.events[span.start], s.events[span.end]);
}

}  // namespace

void Start(Device device) {
  State& s = state();
  s.on = true;
  s.device = device;
  s.depth = 0;
  s.spans.clear();
  s.clocks.clear();
  s.used = 0;
  if (!device.is_cuda()) time_accounts::Enable();
}

bool recording() { return state().on; }

std::vector<Row> Stop() {
  State& s = state();
  s.on = false;
  if (s.device.is_cuda() && s.used > 0) s.events[s.used - 1].Synchronize();
  time_accounts::Disable();
  std::map<std::string, Row> by_name;
  for (const Span& span : s.spans) {
    const std::string key = span.pass ? std::string(span.name) + " " + span.pass : span.name;
    Row& row = by_name[key];
    row.name = key;
    row.calls += 1;
    row.ms += elapsed_ms(span);
    row.kernel_ms += span.kernel_ms;
    row.allocator_ms += span.allocator_ms;
  }
  std::vector<Row> rows;
  for (auto& [key, row] : by_name) rows.push_back(row);
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.ms > b.ms; });
  s.spans.clear();
  return rows;
}

Scope::Scope(const char* name, const char* pass) {
  State& s = state();
  if (!s.on) return;
  active_ = true;
  if (s.depth++ != 0) return;
  s.spans.push_back({name, pass, mark(), 0});
  if (time_accounts::enabled()) {
    s.spans.back().kernel_ms = time_accounts::total_ms(time_accounts::kKernels);
    s.spans.back().allocator_ms = time_accounts::total_ms(time_accounts::kAllocator);
  }
}

Scope::~Scope() {
  if (!active_) return;
  State& s = state();
  // Stop() during an open scope leaves nothing to close.
  if (!s.on || s.depth == 0) return;
  if (--s.depth != 0) return;
  Span& span = s.spans.back();
  span.end = mark();
  if (time_accounts::enabled()) {
    span.kernel_ms = time_accounts::total_ms(time_accounts::kKernels) - span.kernel_ms;
    span.allocator_ms = time_accounts::total_ms(time_accounts::kAllocator) - span.allocator_ms;
  }
}

std::string format_table(const std::vector<Row>& rows, double total_ms, int64_t steps) {
  const double per = steps > 0 ? 1.0 / static_cast<double>(steps) : 1.0;
  const double share = total_ms > 0 ? 100.0 / total_ms : 0.0;
  bool split = false;  // CPU rows: kernel, allocator and other time
  for (const Row& r : rows) split = split || r.kernel_ms > 0 || r.allocator_ms > 0;
  std::string out;
  char line[200];
  std::snprintf(line, sizeof line, "%-34s %8s %10s %7s", "op", "calls", "ms/step", "share");
  out += line;
  if (split) {
    std::snprintf(line, sizeof line, " %9s %9s %9s", "kernels", "alloc", "other");
    out += line;
  }
  out += "\n";
  double covered = 0, kernels = 0, allocator = 0;
  for (const Row& r : rows) {
    covered += r.ms;
    kernels += r.kernel_ms;
    allocator += r.allocator_ms;
    std::snprintf(line, sizeof line, "%-34s %8.0f %10.3f %6.1f%%", r.name.c_str(),
                  static_cast<double>(r.calls) * per, r.ms * per, r.ms * share);
    out += line;
    if (split) {
      std::snprintf(line, sizeof line, " %9.3f %9.3f %9.3f", r.kernel_ms * per,
                    r.allocator_ms * per, (r.ms - r.kernel_ms - r.allocator_ms) * per);
      out += line;
    }
    out += "\n";
  }
  if (total_ms > 0) {
    std::snprintf(line, sizeof line, "%-34s %8s %10.3f %6.1f%%\n", "(outside any op: gaps, host)",
                  "", (total_ms - covered) * per, (total_ms - covered) * share);
    out += line;
  }
  if (split && total_ms > 0) {
    const double other = covered - kernels - allocator, outside = total_ms - covered;
    std::snprintf(line, sizeof line,
                  "the step, per account: kernels %.3f ms (%.1f%%), allocator %.3f ms (%.1f%%), "
                  "autograd and dispatch %.3f ms (%.1f%%), outside any op %.3f ms (%.1f%%)\n",
                  kernels * per, kernels * share, allocator * per, allocator * share,
                  other * per, other * share, outside * per, outside * share);
    out += line;
  }
  return out;
}

}  // namespace zero::profiler

// Chapter 04: the allocations of one GPT training step, as an allocator sees them,
// and a replay loop that drives any allocator through them. Shared by main.cpp
// (the CPU half) and gpu.cu (timing against cudaMalloc). The sizes follow a
// pre-LayerNorm GPT with flash-style attention (no T x T matrix is stored).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ch04 {

// The shape of the model and batch. The default is nanoGPT's shakespeare_char.
struct GptShape {
  int64_t batch = 64, seq = 256, width = 384, layers = 6, heads = 6, vocab = 65;
};

// One allocator call: take a block for tensor `id`, or give it back.
struct Event {
  bool alloc;
  int id;
  size_t bytes;
};

// Forward keeps every activation for backward; backward walks them in reverse,
// allocating each gradient (plus a short-lived temporary) and freeing what is done.
inline std::vector<Event> gpt_step_trace(const GptShape& s) {
  std::vector<Event> events;
  std::vector<size_t> acts;  // sizes of the activations kept for backward, in order
  auto act = [&](int64_t elements) {
    const size_t bytes = static_cast<size_t>(elements) * sizeof(float);
    events.push_back({true, static_cast<int>(acts.size()), bytes});
    acts.push_back(bytes);
  };
  const int64_t bt = s.batch * s.seq, c = s.width;
  act(bt * c);  // token + position embedding  (B, T, C)
  for (int64_t l = 0; l < s.layers; ++l) {
    act(bt * c), act(bt), act(bt);        // ln_1 output, mean, rstd
    act(bt * 3 * c);                      // qkv               (B, T, 3C)
    act(bt * c), act(s.batch * s.heads * s.seq);  // attention output, logsumexp (B, H, T)
    act(bt * c), act(bt * c);             // projection, residual
    act(bt * c), act(bt), act(bt);        // ln_2 output, mean, rstd
    act(bt * 4 * c), act(bt * 4 * c);     // fc, gelu           (B, T, 4C)
    act(bt * c), act(bt * c);             // projection, residual
  }
  act(bt * c), act(bt), act(bt);          // ln_f
  act(bt * s.vocab);                      // logits            (B, T, V)
  act(1);                                 // loss
  // Backward: ids from acts.size() up are gradients and temporaries.
  int next = static_cast<int>(acts.size());
  int grad_after = -1;  // the gradient flowing in from the tensor after this one
  for (int i = static_cast<int>(acts.size()) - 1; i >= 0; --i) {
    const int grad = next++, temp = next++;
    events.push_back({true, grad, acts[i]});
    events.push_back({true, temp, acts[i]});
    events.push_back({false, temp, acts[i]});
    if (grad_after >= 0) events.push_back({false, grad_after, 0});
    events.push_back({false, i, acts[i]});
    grad_after = grad;
  }
  events.push_back({false, grad_after, 0});
  return events;
}

// Replays `events` through an allocator: take(bytes) -> void*, give(void*).
// `at_peak(blocks, sizes)` is called once, at the first free (backward has begun and
// the most memory is live), so the caller can check the live blocks. Returns the
// number of allocations.
template <typename Take, typename Give, typename AtPeak>
size_t replay(const std::vector<Event>& events, Take&& take, Give&& give, AtPeak&& at_peak) {
  std::vector<void*> ptrs(events.size(), nullptr);
  std::vector<size_t> sizes(events.size(), 0);
  size_t allocs = 0;
  bool forward = true;
  for (const Event& e : events) {
    if (forward && !e.alloc) {  // the first free: backward has begun
      std::vector<void*> live;
      std::vector<size_t> live_sizes;
      for (size_t i = 0; i < ptrs.size(); ++i) {
        if (ptrs[i] != nullptr) live.push_back(ptrs[i]), live_sizes.push_back(sizes[i]);
      }
      at_peak(live, live_sizes);
      forward = false;
    }
    if (e.alloc) {
      ptrs[e.id] = take(e.bytes);
      sizes[e.id] = e.bytes;
      ++allocs;
    } else {
      give(ptrs[e.id]);
      ptrs[e.id] = nullptr;
    }
  }
  return allocs;
}

#ifdef ZERO_CHAPTER_HAS_CUDA
// The GPU half (gpu.cu): times the trace through cudaMalloc/cudaFree, the learner's
// FreeList over cudaMalloc, and Zero's CUDA context. Returns the exit status.
int run_allocator_benchmark(const GptShape& shape, int steps);
#endif

}  // namespace ch04

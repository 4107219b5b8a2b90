// Trainer::GraphStep: a training step captured once as a CUDA graph, then replayed.
//
// Note [The step as one CUDA graph]
// A step of the GPT-2 model launches about 400 kernels. Launched one by one, the host
// spends microseconds on each (the autograd engine, the checks, the launch itself) and
// the GPU leaves a gap between each kernel and the next. From its second step the
// trainer records one step's kernels as a CUDA graph (core/cuda_graph.h) and replays it:
// one launch a step, the same kernels with the same arguments, so the same bits.
//
// A replay repeats exactly what was captured, so everything a step changes must be read
// on the device, from memory the graph owns:
//   - the batch: each step's (x, y) is copied into the two tensors the graph reads;
//   - the learning rate and the bias correction: AdamW's PrepareStep writes them to the
//     device before each replay, and the captured ApplyStep reads them there;
//   - dropout: the captured kernels add a shift, read on the device, to their Philox
//     offsets (core/cuda_graph.h). Replay k draws the stream words after those of
//     replay k - 1, as eager steps would, each step starting at a multiple of 4;
//   - memory: the blocks of the captured step stay the graph's (Note [Blocks a graph
//     uses] in core/tensor_context.h), and the loss and (norm, factor) the host reads
//     after a replay are the captured step's own tensors, rewritten by every replay.
// What stays on the host is only what the host decides between steps: the learning
// rate's value, the step count, the generator's position and reading the loss. A loss
// scaler (F16) decides on the host whether to skip, and data-parallel steps wait for
// other processes between kernels: both run kernel by kernel.
//
// If the capture fails (something in the step waits for the GPU, say), the step runs
// kernel by kernel, the trainer says why once on stderr, and never tries again.
#include <cstdio>

#include "zero/core/error.h"
#include "zero/train/trainer.h"

namespace zero::train {

namespace {

uint64_t round_up_to_4(uint64_t words) { return (words + 3) / 4 * 4; }

}  // namespace

Trainer::StepTensors Trainer::GraphStep(const Tensor& x, const Tensor& y) {
  if (graph_ == nullptr) return CaptureStep(x, y);
  graph_x_.CopyFrom_(x);
  graph_y_.CopyFrom_(y);
  Generator& gen = model_->dropout_generator();
  gen.Reserve(round_up_to_4(gen.offset()) - gen.offset());
  const uint64_t shift = gen.offset() - graph_start_;
  gen.Reserve(graph_words_);
  optimizer_->PrepareStep();
  graph_->Replay(shift);
  return graph_out_;
}

Trainer::StepTensors Trainer::CaptureStep(const Tensor& x, const Tensor& y) {
  graph_x_ = x.Clone();
  graph_y_ = y.Clone();
  Generator& gen = model_->dropout_generator();
  gen.Reserve(round_up_to_4(gen.offset()) - gen.offset());
  graph_start_ = gen.offset();
  optimizer_->PrepareStep();
  auto graph = std::make_unique<cuda::CudaGraph>(device_.index());
  StepTensors out;
  try {
    graph->Capture([&] { out = Update(model_->Loss(graph_x_, graph_y_), 1.0f, true); });
  } catch (const std::exception& e) {
    // Nothing captured ran: undo what the host counted, then run the step as usual.
    optimizer_->UncountStep();
    gen.SetState(gen.seed(), graph_start_);
    graph_x_ = graph_y_ = Tensor();
    graph_failed_ = true;
    std::fprintf(stderr, "note: the training step could not be captured as a CUDA graph, so "
                 "it runs kernel by kernel: %s\n", e.what());
    return StepTensors{};
  }
  graph_words_ = round_up_to_4(gen.offset() - graph_start_);
  gen.SetState(gen.seed(), graph_start_ + graph_words_);
  graph_ = std::move(graph);
  graph_out_ = out;
  graph_->Replay(0);  // the capture ran nothing: this is the step
  return graph_out_;
}

void Trainer::DropGraph() {
  graph_.reset();  // waits for its last replay, then gives its blocks back
  graph_out_ = StepTensors{};
  graph_x_ = graph_y_ = Tensor();
  eager_steps_ = 0;  // a step kernel by kernel first, to remake the casts a load made stale
}

}  // namespace zero::train

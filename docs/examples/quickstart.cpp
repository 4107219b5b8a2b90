// Quickstart: train a small network with Zero's public API and watch the loss fall.
//
// This is what Zero runs end to end today: tensors, autograd and the kernels, on a
// GPU when one is visible and on the CPU otherwise (`quickstart cpu` or
// `quickstart cuda:1` chooses). A 1 -> 32 -> 1 network with a tanh hidden layer
// learns y = sin(x) from 128 noisy samples by full-batch gradient descent. The
// program prints the loss as it falls, then predictions beside the true curve, and
// exits non-zero unless the final loss is below kMaxFinalLoss.
// Run it with `cmake --workflow --preset quickstart`.
// Read next: docs/mainpage.md (the path of one op), zero/autograd/functional.h.
#include <cmath>
#include <cstdio>
#include <exception>
#include <vector>

#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/core/device.h"
#include "zero/core/tensor.h"

namespace {

using zero::Tensor;

constexpr int64_t kSamples = 128;
constexpr int64_t kHidden = 32;
constexpr int kSteps = 2000;
constexpr int kLogEvery = 200;
constexpr float kLearningRate = 0.04f;
// Targets carry Gaussian noise of this standard deviation, so no model can get the
// mean squared error much below kNoise^2 = 0.0025; this one starts near 0.2.
constexpr float kNoise = 0.05f;
constexpr float kMaxFinalLoss = 0.02f;

// [model]
// A trainable leaf: standard normal values times `scale`. Nothing in the product
// requires grad, so no graph is recorded and the result is a leaf we can mark.
Tensor make_parameter(const zero::Shape& sizes, float scale, const zero::TensorOption& on,
                      zero::Generator& gen) {
  Tensor p = Tensor::Randn(sizes, on, &gen) * scale;
  p.SetRequiresGrad();
  return p;
}

struct Mlp {
  Tensor w1, b1, w2, b2;

  Tensor Forward(const Tensor& x) const {                // x: (N, 1)
    Tensor h = zero::tanh(zero::matmul(x, w1) + b1);     // (N, H); b1 (H) broadcasts
    return zero::matmul(h, w2) + b2;                     // (N, 1)
  }
  // Handles share their tensor, so updating an element of this list updates the model.
  std::vector<Tensor> Parameters() const { return {w1, b1, w2, b2}; }
};

Tensor mse(const Tensor& prediction, const Tensor& target) {
  Tensor diff = prediction - target;  // (N, 1)
  return zero::mean(diff * diff);     // ()
}
// [model]

// [sgd]
// Plain gradient descent, p <- p - lr * dL/dp. The update is not part of the model,
// so it runs with recording off; the gradient is then dropped because Backward()
// accumulates into it.
void sgd_step(const std::vector<Tensor>& parameters, float lr) {
  zero::NoGradGuard no_grad;
  for (Tensor p : parameters) {
    p.CopyFrom_(p - lr * p.Grad());
    p.ZeroGrad();
  }
}
// [sgd]

// The device named on the command line, else the first GPU if any, else the CPU.
zero::Device pick_device(int argc, char** argv) {
  if (argc > 1) return zero::Device::Parse(argv[1]);
  return zero::cuda_available() ? zero::Device::Cuda(0) : zero::Device::Cpu();
}

void print_device(const zero::Device& device) {
  if (device.is_cuda()) {
    std::printf("device: %s\n", device.ToString().c_str());
  } else if (zero::cuda_available()) {
    std::printf("device: cpu (as asked; `quickstart cuda` would use the GPU)\n");
  } else if (zero::cuda_built()) {
    std::printf("device: cpu (Zero was built with CUDA, but no GPU is visible)\n");
  } else {
    std::printf("device: cpu (Zero was built without CUDA)\n");
  }
}

int run(const zero::Device& device) {
  print_device(device);
  zero::Generator gen(42);  // one seed: the same numbers on every device (Philox)
  const auto on = zero::TensorOption().OnDevice(device);

  std::vector<float> xs(kSamples), sines(kSamples);
  for (int64_t i = 0; i < kSamples; ++i) {
    xs[i] = -3.0f + 6.0f * static_cast<float>(i) / (kSamples - 1);
    sines[i] = std::sin(xs[i]);
  }
  const Tensor x = Tensor::From(xs, {kSamples, 1}, on);                 // (N, 1)
  const Tensor y = Tensor::From(sines, {kSamples, 1}, on) +
                   kNoise * Tensor::Randn({kSamples, 1}, on, &gen);     // (N, 1)

  const auto trainable = on.WithRequiresGrad();
  Mlp model{make_parameter({1, kHidden}, 1.0f, on, gen), Tensor::Zeros({kHidden}, trainable),
            make_parameter({kHidden, 1}, 1.0f / std::sqrt(float(kHidden)), on, gen),
            Tensor::Zeros({1}, trainable)};
  std::printf("fitting y = sin(x) + noise: %lld samples, 1 -> %lld -> 1 tanh network, "
              "%d steps of gradient descent (lr %.2f)\n",
              static_cast<long long>(kSamples), static_cast<long long>(kHidden), kSteps,
              kLearningRate);

  // [training-loop]
  for (int step = 0; step < kSteps; ++step) {
    Tensor loss = mse(model.Forward(x), y);  // (); the graph back to w1..b2 is recorded
    if (step % kLogEvery == 0) std::printf("step %4d  loss %.5f\n", step, loss.Item());
    loss.Backward();                         // fills w1.Grad() ... b2.Grad()
    sgd_step(model.Parameters(), kLearningRate);
  }
  // [training-loop]

  zero::NoGradGuard no_grad;  // evaluation only from here on
  const float final_loss = mse(model.Forward(x), y).Item();
  std::printf("step %4d  loss %.5f (final)\n\n", kSteps, final_loss);

  const std::vector<float> probe = {-3.0f, -2.0f, -1.0f, 0.0f, 1.0f, 2.0f, 3.0f};
  const std::vector<float> predicted =
      model.Forward(Tensor::From(probe, {int64_t(probe.size()), 1}, on)).ToVector<float>();
  std::printf("     x    sin(x)  network\n");
  for (size_t i = 0; i < probe.size(); ++i) {
    std::printf("%6.2f  %8.4f %8.4f\n", probe[i], std::sin(probe[i]), predicted[i]);
  }

  if (!(final_loss < kMaxFinalLoss)) {  // also catches NaN
    std::fprintf(stderr, "\nFAILED: final loss %.5f is not below %.3f\n", final_loss,
                 kMaxFinalLoss);
    return 1;
  }
  std::printf("\nfinal loss %.5f is below %.3f: the network learned the curve\n", final_loss,
              kMaxFinalLoss);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(pick_device(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

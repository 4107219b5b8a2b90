// dump_gpt_step: one forward and backward pass of a small GPT, written to one file so an
// independent implementation (tools/torch_reference.py, in PyTorch) can check Zero's
// logits, loss and every gradient against its own.
//
// The model and the batch are fixed by --model, so two runs, or a CPU and a CUDA run, or
// runs in two precision modes, write the same inputs:
//   small  vocab 65, block 32, 2 layers, 2 heads, width 64; B 4, T 32 (the ctest check)
//   char   nanoGPT's character model: vocab 65, 6 layers, 6 heads, 384 wide; B 8, T 256
//   gpt2   GPT-2-shaped: vocab 50304, 2 layers, 12 heads, 768 wide; B 4, T 512
// Dropout 0, seed 1, every parameter then moved by N(0, s^2) noise (s = 0.1 for small,
// 0.02, the init's scale, for the others) so that biases and LayerNorm affines are not the
// trivial 0 and 1 of the init; token ids from a Philox stream. The file holds, by name:
// every parameter under its nanoGPT name, `batch.ids` and `batch.targets` (I32 [B, T]),
// `out.logits` [B, T, V], `out.loss` (0-d) and `grad.<parameter name>`; its metadata
// holds the sizes, the device and the precision mode (zero/kernels/precision.h).
//
//   build/default/tools/dump_gpt_step --out /tmp/step.safetensors   (--device cpu|cuda)
//   python3 tools/torch_reference.py /tmp/step.safetensors
//   tools/gpu_precision.sh build/gpu   (every model and mode against float64, one table)
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "zero/autograd/grad_mode.h"
#include "zero/core/device.h"
#include "zero/core/generator.h"
#include "zero/io/safetensors.h"
#include "zero/kernels/precision.h"
#include "zero/nn/gpt.h"

using namespace zero;

namespace {

constexpr uint64_t kModelSeed = 1;
constexpr uint64_t kBatchSeed = 2;  // a different key than the weights' stream
constexpr uint64_t kNoiseSeed = 3;

struct Case {
  nn::GPTConfig config;
  int64_t batch = 0, seq_len = 0;
  float noise = 0.0f;
};

nn::GPTConfig gpt_config(int64_t vocab, int64_t block, int64_t layers, int64_t heads,
                         int64_t width) {
  nn::GPTConfig config;
  config.vocab_size = vocab;
  config.block_size = block;
  config.n_layer = layers;
  config.n_head = heads;
  config.n_embd = width;
  config.dropout = 0.0f;  // the reference has no dropout; with p = 0 Zero's is the identity
  return config;
}

// small is the smallest model whose every part is non-trivial: two layers (the residual
// scaling and the layer loop), two heads (head splitting), T = block_size (the full
// causal mask). char and gpt2 are the shapes whose precision the modes are judged on.
Case make_case(const std::string& model) {
  if (model == "small") return {gpt_config(65, 32, 2, 2, 64), 4, 32, 0.1f};
  if (model == "char") return {gpt_config(65, 256, 6, 6, 384), 8, 256, 0.02f};
  if (model == "gpt2") return {gpt_config(50304, 512, 2, 12, 768), 4, 512, 0.02f};
  ZERO_CHECK(false, "dump_gpt_step: --model must be small, char or gpt2, got \"", model, "\"");
  return {};
}

// One random sequence of T + 1 tokens per row: ids are its first T, targets its last T,
// as a language-model batch is. Drawn on the CPU so every device sees the same batch.
void make_batch(int64_t vocab, int64_t batch, int64_t seq_len, Tensor& ids, Tensor& targets) {
  Generator gen(kBatchSeed);
  const std::vector<float> u = Tensor::Rand({batch, seq_len + 1}, {}, &gen).ToVector<float>();
  std::vector<int32_t> id_values, target_values;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < seq_len; ++t) {
      const auto token = [&](int64_t i) {  // u in [0, 1) -> a token in [0, vocab)
        const float x = u[static_cast<size_t>(b * (seq_len + 1) + i)];
        return static_cast<int32_t>(std::min<int64_t>(vocab - 1, static_cast<int64_t>(x * vocab)));
      };
      id_values.push_back(token(t));
      target_values.push_back(token(t + 1));
    }
  }
  ids = Tensor::FromI32(id_values, {batch, seq_len});          // (B, T)
  targets = Tensor::FromI32(target_values, {batch, seq_len});  // (B, T)
}

// Adds N(0, std^2) noise to every parameter (on the CPU, before the model moves).
// At GPT's init the biases are 0, the LayerNorm weights 1 and the activations small, so
// a bug in a bias, a LayerNorm affine or GeLU's curve would barely change the outputs;
// with the noise every parameter matters and the GeLU inputs reach its non-linear range.
void perturb(nn::GPT& model, float std) {
  Generator gen(kNoiseSeed);
  for (auto& [name, p] : model.NamedParameters()) {
    ZERO_CHECK(p.device().is_cpu() && p.is_contiguous(), "perturb: expected contiguous CPU parameters, got ", name, " on ", p.device().ToString());
    const std::vector<float> noise = Tensor::Randn(p.sizes(), {}, &gen).ToVector<float>();
    float* data = p.data_ptr<float>();
    for (size_t i = 0; i < noise.size(); ++i) data[i] += std * noise[i];
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = "auto", out_path, model_name = "small", precision_name;
  CLI::App app{"One GPT forward/backward step written to safetensors for tools/torch_reference.py"};
  app.add_option("--device", device_name, "cpu, cuda, or auto (cuda when available)")
      ->capture_default_str();
  app.add_option("--out", out_path, "the safetensors file to write")->required();
  app.add_option("--model", model_name, "small, char or gpt2 (see the file's header)")
      ->capture_default_str();
  app.add_option("--precision", precision_name,
                 "ieee, 3xtf32, tf32 or fp16 for the CUDA products (default: MX_FAST_MATMUL)");
  CLI11_PARSE(app, argc, argv);

  try {
    const Device device = device_name == "auto"
                              ? (cuda_available() ? Device::Cuda(0) : Device::Cpu())
                              : Device::Parse(device_name);
    const Case c = make_case(model_name);
    const nn::GPTConfig& config = c.config;
    if (!precision_name.empty()) set_matmul_precision(parse_matmul_precision(precision_name));
    nn::GPT model(config, kModelSeed);
    perturb(model, c.noise);
    model.To(device);

    Tensor ids, targets;
    make_batch(config.vocab_size, c.batch, c.seq_len, ids, targets);
    ids = ids.To(device);
    targets = targets.To(device);

    Tensor logits;
    {
      NoGradGuard no_grad;  // the logits are only compared, never differentiated
      logits = model.Forward(ids);  // (B, T, V)
    }
    // The loss goes through the fused linear + cross-entropy, the path training uses, so
    // its value and gradients are checked, not a path only this program takes.
    const Tensor loss = model.Loss(ids, targets);  // ()
    loss.Backward();

    io::NamedTensors tensors;
    const auto params = model.NamedParameters();
    for (const auto& [name, p] : params) tensors.emplace_back(name, p);
    tensors.emplace_back("batch.ids", ids);
    tensors.emplace_back("batch.targets", targets);
    tensors.emplace_back("out.logits", logits);
    tensors.emplace_back("out.loss", loss.Detach());
    for (const auto& [name, p] : params) {
      ZERO_CHECK(p.Grad().defined(), "dump_gpt_step: parameter ", name, " got no gradient");
      tensors.emplace_back("grad." + name, p.Grad());
    }
    const std::map<std::string, std::string> metadata = {
        {"vocab_size", std::to_string(config.vocab_size)},
        {"block_size", std::to_string(config.block_size)},
        {"n_layer", std::to_string(config.n_layer)},
        {"n_head", std::to_string(config.n_head)},
        {"n_embd", std::to_string(config.n_embd)},
        {"device", device.ToString()},
        {"model", model_name},
        {"precision", device.is_cuda() ? matmul_precision_name(matmul_precision()) : "cpu"},
    };
    io::save_safetensors(out_path, tensors, metadata);
    std::printf("wrote %s: %zu parameters, loss %.6f on %s\n", out_path.c_str(), params.size(),
                loss.Item(), device.ToString().c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "dump_gpt_step: %s\n", e.what());
    return 1;
  }
  return 0;
}

// The two presets of train_gpt, and the --device and --dtype flags (see config.h).
#include "zero/train/config.h"

namespace zero::train {

TrainConfig TrainConfig::Reference() {
  TrainConfig c;  // the defaults of the struct are nanoGPT's shakespeare_char values
  c.model = nn::GPTConfig{};
  return c;
}

TrainConfig TrainConfig::SmallCpu() {
  // Sized for under 3 minutes of training on an idle 2-core CPU (about 45 ms a step
  // there). With so little compute the model underfits, so the levers are throughput and
  // step size, not regularisation: a small model that sees many tokens (for a fixed FLOP
  // budget fewer parameters and more data win, Hoffmann et al. 2022: here ~0.2M
  // parameters and ~3M tokens), small batches (more updates for the same tokens; early in
  // training the critical batch size is small), a larger learning rate with a short
  // warmup, and no dropout (as nanoGPT's "baby GPT" on CPU). Until the CPU step got
  // faster (docs/cpu_vs_llmc.md) this was 3 layers 48 wide for 1000 steps.
  TrainConfig c;
  c.model.block_size = 64;
  c.model.n_layer = 4;
  c.model.n_head = 4;
  c.model.n_embd = 64;
  c.model.dropout = 0.0f;
  c.batch_size = 16;
  c.lr = 3e-3f;
  c.min_lr = 3e-4f;
  c.warmup = 50;
  c.max_steps = 3000;
  return c;
}

namespace {

bool bf16_gpu(Device device) {
  return device.is_cuda() && cuda_compute_capability(device.index()) >= 80;
}

}  // namespace

void check_compute_dtype(DataType dtype, Device device) {
  ZERO_CHECK(is_floating_point(dtype), "expected a compute dtype of f32, bf16 or f16, got ",
             to_string(dtype));
  // The CPU kernels take all three: they compute in FP32 and round, so 16 bits there
  // show mixed precision's numbers without a GPU, not its speed.
  if (dtype == DataType::F32 || !device.is_cuda()) return;
  const int cc = cuda_compute_capability(device.index());
  ZERO_CHECK(dtype != DataType::BF16 || bf16_gpu(device), "bf16 on ", device.ToString(),
             ": its compute capability is ", cc / 10, ".", cc % 10,
             ", and BF16 needs 8.0 or newer (use fp16 or fp32)");
}

DataType resolve_dtype(const std::string& name, Device device) {
  DataType dtype = DataType::F32;
  if (name == "auto") {
    dtype = bf16_gpu(device) ? DataType::BF16 : DataType::F32;
  } else if (name == "bf16") {
    dtype = DataType::BF16;
  } else if (name == "fp16") {
    dtype = DataType::F16;
  } else {
    ZERO_CHECK(name == "fp32", "--dtype: expected auto, fp32, bf16 or fp16, got '", name, "'");
  }
  try {
    check_compute_dtype(dtype, device);
  } catch (const Error& e) {
    throw Error(std::string("--dtype ") + name + ": " + e.what());
  }
  return dtype;
}

const char* dtype_flag_name(DataType dtype) {
  switch (dtype) {
    case DataType::F32: return "fp32";
    case DataType::BF16: return "bf16";
    case DataType::F16: return "fp16";
    case DataType::I32: break;
  }
  ZERO_ASSERT(false, "dtype_flag_name: ", to_string(dtype), " is not a compute dtype");
  return "?";
}

Device resolve_device(const std::string& name) {
  if (name == "auto") return cuda_available() ? Device::Cuda(0) : Device::Cpu();
  if (name == "cpu") return Device::Cpu();
  if (name == "cuda" || name.rfind("cuda:", 0) == 0) {
    ZERO_CHECK(cuda_available(), "--device ", name, ": no CUDA device is visible");
    const std::string index = name == "cuda" ? "0" : name.substr(5);
    ZERO_CHECK(!index.empty() && index.size() < 4 &&
                   index.find_first_not_of("0123456789") == std::string::npos,
               "--device: expected cuda:N with N a GPU number, got '", name, "'");
    return Device::Cuda(std::stoi(index));
  }
  ZERO_CHECK(false, "--device: expected auto, cpu, cuda or cuda:N, got '", name, "'");
  return Device::Cpu();
}

}  // namespace zero::train

// Device parsing and printing. The CUDA queries live in core/cuda/device_cuda.cu or,
// in a CPU-only build, in core/no_cuda/device.cpp.
#include "zero/core/device.h"

#include "zero/core/error.h"

namespace zero {

Device::Device(DeviceType type, int index) : type_(type), index_(index) {
  ZERO_CHECK(index >= 0, "expected a device index >= 0, got ", index);
  ZERO_CHECK(type == DeviceType::CUDA || index == 0, "the CPU has only index 0, got ", index);
}

Device Device::Parse(const std::string& text) {
  if (text == "cpu") return Cpu();
  if (text == "cuda") return Cuda(0);
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5) {
    const std::string digits = text.substr(5);
    // At most 9 digits, so std::stoi cannot overflow (it would throw std::out_of_range).
    ZERO_CHECK(digits.find_first_not_of("0123456789") == std::string::npos && digits.size() <= 9,
               "expected a device like \"cpu\", \"cuda\" or \"cuda:1\", got \"", text, "\"");
    return Cuda(std::stoi(digits));
  }
  ZERO_CHECK(false, "expected a device like \"cpu\", \"cuda\" or \"cuda:1\", got \"", text, "\"");
  return Cpu();
}

std::string Device::ToString() const {
  return is_cpu() ? "cpu" : "cuda:" + std::to_string(index_);
}

std::ostream& operator<<(std::ostream& os, const Device& device) {
  return os << device.ToString();
}

}  // namespace zero

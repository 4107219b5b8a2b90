/// @file
/// `Device`: where a tensor's memory lives (the CPU, or CUDA GPU number `index`).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace zero {

/// The kind of device.
enum class DeviceType : uint8_t {
  CPU,   ///< Host memory, CPU kernels.
  CUDA,  ///< Memory of one NVIDIA GPU, CUDA kernels.
};

/// A device: a type and, for CUDA, the GPU index. Cheap to copy and compare.
class Device {
 public:
  /// The CPU.
  constexpr Device() = default;
  /// A device of `type`; `index` selects the GPU and must be 0 for the CPU.
  Device(DeviceType type, int index);
  /// The CPU.
  static Device Cpu() { return Device(); }
  /// CUDA GPU number `index`.
  static Device Cuda(int index = 0) { return Device(DeviceType::CUDA, index); }
  /// Parses "cpu", "cuda" or "cuda:N"; throws `zero::Error` on anything else.
  static Device Parse(const std::string& text);

  /// The kind of device.
  constexpr DeviceType type() const { return type_; }
  /// The GPU index (0 for the CPU).
  constexpr int index() const { return index_; }
  /// True for the CPU.
  constexpr bool is_cpu() const { return type_ == DeviceType::CPU; }
  /// True for a CUDA GPU.
  constexpr bool is_cuda() const { return type_ == DeviceType::CUDA; }
  /// "cpu" or "cuda:N".
  std::string ToString() const;

  /// Same type and index.
  constexpr bool operator==(const Device& other) const {
    return type_ == other.type_ && index_ == other.index_;
  }
  /// Different type or index.
  constexpr bool operator!=(const Device& other) const { return !(*this == other); }

 private:
  DeviceType type_ = DeviceType::CPU;
  int index_ = 0;
};

/// Writes `Device::ToString()`.
std::ostream& operator<<(std::ostream& os, const Device& device);

/// True when Zero was built with its CUDA backend (ZERO_CUDA resolved to ON).
bool cuda_built();
/// Number of CUDA GPUs visible (0 when built without CUDA or when no GPU is present).
int cuda_device_count();
/// True when CUDA is built and at least one GPU is visible.
inline bool cuda_available() { return cuda_device_count() > 0; }
/// GPU `index`'s compute capability as major * 10 + minor (90 for an H100 or H200).
/// @throws zero::Error in a build without CUDA or for an index with no GPU.
int cuda_compute_capability(int index);

}  // namespace zero

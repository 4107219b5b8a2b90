/// @file
/// `TensorNode`: one buffer of device memory, shared by a tensor and all its views.
#pragma once

#include <cstddef>

#include "zero/core/device.h"

namespace zero {

class TensorContext;

/// Owns one buffer obtained from a `TensorContext`; returns it when destroyed.
///
/// Tensors hold a `std::shared_ptr<TensorNode>`: a view shares its base's node, so
/// the memory lives as long as any view of it.
class TensorNode {
 public:
  /// Allocates `bytes` on `device` through `DefaultTensorContext::Get(device)`.
  TensorNode(size_t bytes, Device device);
  ~TensorNode();
  TensorNode(const TensorNode&) = delete;
  TensorNode& operator=(const TensorNode&) = delete;

  /// Start of the buffer.
  void* data() const { return data_; }
  /// Size of the buffer in bytes, as requested.
  size_t bytes() const { return bytes_; }
  /// Where the buffer lives.
  Device device() const { return device_; }

 private:
  TensorContext* context_;
  void* data_;
  size_t bytes_;
  Device device_;
};

}  // namespace zero

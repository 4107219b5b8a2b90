/// @file
/// `TensorNode`: one buffer of device memory, shared by a tensor and all its views.
#pragma once

#include <cstddef>
#include <cstdint>

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
  /// How many in-place writes the buffer has had (see Note [Version counter] in
  /// autograd/tensor_op.cpp): the engine refuses a saved tensor whose version moved.
  uint64_t version() const { return version_; }
  /// Counts one in-place write; called by every in-place update of a tensor on this buffer.
  void BumpVersion() { ++version_; }

 private:
  TensorContext* context_;
  void* data_;
  size_t bytes_;
  Device device_;
  uint64_t version_ = 0;
};

}  // namespace zero

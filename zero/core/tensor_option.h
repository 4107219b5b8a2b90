/// @file
/// `TensorOption`: the dtype, device and requires-grad flag a new tensor is made with.
#pragma once

#include "zero/core/device.h"
#include "zero/core/dtype.h"

namespace zero {

/// How to make a tensor: element type, device, and whether autograd tracks it.
///
/// Defaults are F32 on the CPU without gradient. Setters return a copy so they chain:
/// `TensorOption().OnDevice(Device::Cuda()).WithRequiresGrad()`.
struct TensorOption {
  DataType dtype = DataType::F32;  ///< Element type.
  Device device;                   ///< Where the memory lives.
  bool requires_grad = false;      ///< Whether `Backward()` computes a gradient for it.

  /// A copy with element type `d`.
  TensorOption WithDtype(DataType d) const {
    TensorOption o = *this;
    o.dtype = d;
    return o;
  }
  /// A copy on device `d`.
  TensorOption OnDevice(Device d) const {
    TensorOption o = *this;
    o.device = d;
    return o;
  }
  /// A copy with `requires_grad` set to `r`.
  TensorOption WithRequiresGrad(bool r = true) const {
    TensorOption o = *this;
    o.requires_grad = r;
    return o;
  }
};

}  // namespace zero

// TensorNode: allocation and release of one buffer through its device's context.
#include "zero/core/tensor_node.h"

#include "zero/core/tensor_context.h"

namespace zero {

TensorNode::TensorNode(size_t bytes, Device device)
    : context_(&DefaultTensorContext::Get(device)),
      data_(context_->NewMem(bytes)),
      bytes_(bytes),
      device_(device) {}

TensorNode::~TensorNode() { context_->DeleteMem(data_); }

}  // namespace zero

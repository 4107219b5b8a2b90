// graph_to_string: a depth-first walk of grad_fn -> inputs() from a root tensor.
// The walk uses an explicit stack, like the engine's topological sort, so a very deep
// graph cannot overflow the call stack; ops and leaves get numbers in the order they
// are first printed, so a node reached twice is recognisable (and an op's subtree is
// printed only once, which keeps shared subgraphs from multiplying the output).
#include "zero/autograd/graph.h"

#include <sstream>
#include <unordered_map>
#include <vector>

#include "zero/autograd/tensor_op.h"

namespace zero::autograd {
namespace {

std::string describe(const TensorMeta& m) {
  return shape_to_string(m.sizes) + " " + to_string(m.dtype) + " " + m.device.ToString();
}

}  // namespace

std::string graph_to_string(const Tensor& root, int max_lines) {
  std::ostringstream os;
  std::unordered_map<const void*, int> ids;  // TensorOp* or leaf TensorImpl* -> number
  auto number = [&ids](const void* node, bool* first) {
    const auto [it, inserted] = ids.emplace(node, static_cast<int>(ids.size()) + 1);
    *first = inserted;
    return it->second;
  };
  struct Item {
    Tensor tensor;
    int depth;
  };
  std::vector<Item> stack{{root, 0}};
  int lines = 0;
  while (!stack.empty()) {
    const Item item = std::move(stack.back());
    stack.pop_back();
    if (lines++ == max_lines) {
      os << "... (stopped after " << max_lines << " lines)\n";
      break;
    }
    os << std::string(2 * item.depth, ' ');
    const Tensor& t = item.tensor;
    if (!t.defined()) {
      os << "(undefined tensor)\n";
      continue;
    }
    bool first = false;
    TensorOp* op = t.grad_fn().get();
    if (op == nullptr) {
      os << "leaf #" << number(t.impl(), &first) << " " << describe(t.meta())
         << (t.requires_grad() ? " requires_grad" : " constant");
      if (t.Grad().defined()) os << ", grad " << shape_to_string(t.Grad().sizes());
      os << "\n";
      continue;
    }
    os << op->name() << " #" << number(op, &first) << " -> " << describe(t.meta());
    const size_t outputs = op->output_metas().size();
    if (outputs > 1) os << " (output " << t.impl()->output_index << " of " << outputs << ")";
    if (!first) {
      os << " (shown above)\n";
      continue;
    }
    if (op->inputs().empty()) {
      os << " (inputs released by an earlier Backward())\n";
      continue;
    }
    os << "\n";
    const std::vector<Tensor>& inputs = op->inputs();
    for (size_t i = inputs.size(); i-- > 0;) stack.push_back({inputs[i], item.depth + 1});
  }
  return os.str();
}

}  // namespace zero::autograd

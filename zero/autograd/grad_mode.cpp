// The thread-local gradient-recording switch.
#include "zero/autograd/grad_mode.h"

namespace zero {
namespace {
thread_local bool grad_enabled = true;
}

bool GradMode::enabled() { return grad_enabled; }
void GradMode::set_enabled(bool enabled) { grad_enabled = enabled; }

}  // namespace zero

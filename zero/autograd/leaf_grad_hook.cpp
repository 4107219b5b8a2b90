// The thread-local leaf-gradient hook (see leaf_grad_hook.h); engine.cpp calls it.
#include "zero/autograd/leaf_grad_hook.h"

namespace zero::autograd {
namespace {

thread_local const LeafGradHook* g_hook = nullptr;

}  // namespace

LeafGradHookGuard::LeafGradHookGuard(LeafGradHook hook) : hook_(std::move(hook)), previous_(g_hook) {
  g_hook = &hook_;
}

LeafGradHookGuard::~LeafGradHookGuard() { g_hook = previous_; }

const LeafGradHook* current_leaf_grad_hook() { return g_hook; }

}  // namespace zero::autograd

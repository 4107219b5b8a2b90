// A test helper shared by the checkpoint and command-line tests: damages the "step"
// entry of an optimizer.safetensors file, as a hand edit or a bad writer would.
#pragma once

#include <map>
#include <string>

#include "zero/io/safetensors.h"

namespace zero::testing {

/// Rewrites the "step" metadata string of the optimizer.safetensors file `path` to `step`.
inline void set_step_metadata(const std::string& path, const std::string& step) {
  std::map<std::string, std::string> meta;
  const io::NamedTensors tensors = io::load_safetensors(path, &meta);
  meta["step"] = step;
  io::save_safetensors(path, tensors, meta);
}

}  // namespace zero::testing

// safetensors_resave IN OUT: loads IN with Zero and saves its tensors and metadata to OUT
// (adding metadata "resaved_by": "zero"). Run by safetensors_python_check.py, which
// writes IN with the reference Python library and reads OUT back with it.
#include <cstdio>
#include <exception>

#include "zero/io/safetensors.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s IN.safetensors OUT.safetensors\n", argv[0]);
    return 2;
  }
  try {
    std::map<std::string, std::string> metadata;
    const zero::io::NamedTensors tensors = zero::io::load_safetensors(argv[1], &metadata);
    metadata["resaved_by"] = "zero";
    zero::io::save_safetensors(argv[2], tensors, metadata);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}

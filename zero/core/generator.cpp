// The process-wide default generator.
#include "zero/core/generator.h"

namespace zero {

Generator& default_generator() {
  static Generator gen(0);
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().SetState(seed, 0); }

}  // namespace zero

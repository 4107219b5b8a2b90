// The restart behind use_passive_openmp_wait (cpu_threads.h).
#include "zero/kernels/cpu_threads.h"

#include <unistd.h>

#include <cstdlib>

namespace zero {

void use_passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) {
    return;  // the user's choice, or the restarted program itself
  }
  if (setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure: carry on, spinning
  unsetenv("OMP_WAIT_POLICY");    // the variable would say what is not in force
}

}  // namespace zero

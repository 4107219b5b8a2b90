# Sanitizer and fuzzing builds, switched on per target (never through global flags).
#
#   ZERO_SANITIZE=ON  AddressSanitizer + UndefinedBehaviorSanitizer on the library and
#                     on everything that links it (tests, chapter programs, tools): the
#                     `sanitize` presets. A UB report aborts the program
#                     (-fno-sanitize-recover), so a test that hits one fails.
#   ZERO_FUZZ=ON      the same, plus libFuzzer's coverage instrumentation on the library
#                     (-fsanitize=fuzzer-no-link), and the fuzz targets of tests/fuzz/,
#                     linked with libFuzzer's main (-fsanitize=fuzzer). Needs clang: the
#                     `fuzz` presets.
# Both are meant for CPU-only builds (ZERO_CUDA=OFF): the CUDA runtime and ASan's
# shadow memory do not get along without extra options.
option(ZERO_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(ZERO_FUZZ "Build the libFuzzer targets of tests/fuzz (clang; implies the sanitizers)" OFF)

if(ZERO_FUZZ AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "ZERO_FUZZ needs clang's libFuzzer; configure with the `fuzz` preset "
                      "(CMAKE_CXX_COMPILER=clang++), got ${CMAKE_CXX_COMPILER_ID}")
endif()

if((ZERO_SANITIZE OR ZERO_FUZZ) AND ZERO_HAS_CUDA)
  message(WARNING "ZERO_SANITIZE/ZERO_FUZZ with the CUDA backend: only host C++ is "
                  "instrumented, and the CUDA runtime needs ASAN_OPTIONS=protect_shadow_gap=0; "
                  "the sanitize and fuzz presets set ZERO_CUDA=OFF")
endif()

set(ZERO_SANITIZER_FLAGS "")
if(ZERO_SANITIZE OR ZERO_FUZZ)
  set(ZERO_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined
                           -fno-omit-frame-pointer)
endif()
if(ZERO_FUZZ)
  # clang reports every `#pragma omp simd` loop it leaves scalar under the sanitizers.
  list(APPEND ZERO_SANITIZER_FLAGS -Wno-pass-failed)
endif()

# zero_target_sanitize(<target>): compiles <target> with the sanitizers and makes every
# target that links it do the same, so the whole program is instrumented. Used on the
# `zero` library (zero/CMakeLists.txt); a no-op unless ZERO_SANITIZE or ZERO_FUZZ is on.
function(zero_target_sanitize target)
  if(NOT ZERO_SANITIZER_FLAGS)
    return()
  endif()
  target_compile_options(${target} PUBLIC $<$<COMPILE_LANGUAGE:CXX>:${ZERO_SANITIZER_FLAGS}>)
  target_link_options(${target} INTERFACE -fsanitize=address,undefined)
  if(ZERO_FUZZ)
    # Coverage feedback for the fuzzer from the library's code too, not only the target's.
    target_compile_options(${target} PUBLIC $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
  endif()
endfunction()

#!/usr/bin/env bash
# Makes a Debian or Ubuntu machine ready to build and test Zero.
#
# It checks each tool and library the build uses and installs, with apt-get, only
# the packages that are missing (as root, or through sudo). A ready machine is left
# as it is, so the script is safe to run before every build: the README's two
# quick-start commands and .ci/run both start with it. The CUDA toolkit is optional
# and never installed here; the last line says whether nvcc was found, which decides
# whether the default preset builds the CUDA backend.
#
# With --fuzz it also makes sure of clang, its libFuzzer runtime and its OpenMP library,
# which only the `fuzz` preset needs (tests/fuzz/, tools/fuzz.sh).
set -euo pipefail

fuzz=0
[[ ${1:-} == --fuzz ]] && fuzz=1

readonly min_cmake=3.25  # `cmake --workflow` and presets version 6
readonly min_gxx=12

missing=()

have() { command -v "$1" >/dev/null 2>&1; }

# clang links a libFuzzer target and an OpenMP program (the fuzz preset needs both).
have_clang_fuzzer() {
  have clang++ && echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, long) { return 0; }' |
    clang++ -fsanitize=fuzzer -x c++ - -o /dev/null >/dev/null 2>&1
}
have_clang_openmp() {
  have clang++ && echo 'int main() { return 0; }' |
    clang++ -fopenmp -x c++ - -o /dev/null >/dev/null 2>&1
}

have_gtest() {
  [[ -f /usr/include/gtest/gtest.h ]] && return 0
  local dir
  for dir in /usr/lib/cmake /usr/lib/*/cmake /usr/lib64/cmake /usr/local/lib/cmake \
             /usr/local/lib/*/cmake /usr/local/lib64/cmake; do
    [[ -f $dir/GTest/GTestConfig.cmake ]] && return 0
  done
  return 1
}

# check PACKAGE DESCRIPTION COMMAND...: runs COMMAND; records PACKAGE if it fails.
check() {
  local package=$1 what=$2
  shift 2
  if "$@"; then
    printf '  %-8s %s\n' ok "$what"
  else
    printf '  %-8s %s (Debian package %s)\n' missing "$what" "$package"
    missing+=("$package")
  fi
}

check_all() {
  missing=()
  check cmake              "cmake"                    have cmake
  check ninja-build        "ninja"                    have ninja
  check g++                "g++"                      have g++
  check libgtest-dev       "GoogleTest"               have_gtest
  check doxygen            "doxygen"                  have doxygen
  check graphviz           "graphviz (dot)"           have dot
  check nlohmann-json3-dev "nlohmann-json"            test -f /usr/include/nlohmann/json.hpp
  check libcli11-dev       "CLI11"                    test -f /usr/include/CLI/CLI.hpp
  check libstb-dev         "stb_image_write"          test -f /usr/include/stb/stb_image_write.h
  check python3            "python3"                  have python3
  if (( fuzz )); then
    check clang            "clang++"                  have clang++
    check libclang-rt-dev  "clang's libFuzzer"        have_clang_fuzzer
    check libomp-dev       "clang's OpenMP (libomp)"  have_clang_openmp
  fi
}

install_missing() {
  local -a as_root=()
  if [[ $(id -u) -ne 0 ]]; then
    if have sudo; then
      as_root=(sudo)
    else
      echo "setup: not root and no sudo. As root, run:" >&2
      echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
      exit 1
    fi
  fi
  if ! have apt-get; then
    echo "setup: apt-get not found (not Debian or Ubuntu). Install the equivalents of:" >&2
    echo "  ${missing[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  ${as_root[@]+"${as_root[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update -q
  ${as_root[@]+"${as_root[@]}"} env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# True when version $1 >= version $2 (dotted numbers).
version_at_least() {
  [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" == "$2" ]]
}

echo "setup: checking what Zero needs"
check_all
if (( ${#missing[@]} > 0 )); then
  install_missing
  echo "setup: checking again"
  check_all
  if (( ${#missing[@]} > 0 )); then
    echo "setup: still missing after apt-get: ${missing[*]}" >&2
    exit 1
  fi
fi

cmake_version=$(cmake --version | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')
if ! version_at_least "$cmake_version" "$min_cmake"; then
  echo "setup: cmake $cmake_version is too old; the presets need $min_cmake or newer." >&2
  echo "  Debian 12 and Ubuntu 24.04 ship one; elsewhere, 'pip install cmake' is a quick way." >&2
  exit 1
fi
gxx_version=$(g++ -dumpfullversion -dumpversion)
if ! version_at_least "$gxx_version" "$min_gxx"; then
  echo "setup: warning: g++ $gxx_version is older than $min_gxx, the version Zero is tested with"
fi

if have nvcc; then
  echo "setup: ready. nvcc found ($(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')," \
       "$(command -v nvcc)): the default preset builds the CUDA backend"
elif [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: ready. nvcc is in /usr/local/cuda/bin but not on PATH: builds are CPU-only" \
       "until you add it (export PATH=/usr/local/cuda/bin:\$PATH)"
else
  echo "setup: ready. nvcc not found: builds are CPU-only (CUDA is optional)"
fi

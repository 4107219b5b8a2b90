// What every fuzz target of tests/fuzz/ shares: the libFuzzer entry points, the rule for
// what counts as a finding, a private temporary folder for loaders that take a path, and
// the writer of the seed corpus.
//
// A target defines two functions and includes this header once:
//
//   void fuzz_one(const uint8_t* data, size_t size);  // one input; may throw zero::Error
//   void write_seeds(Seeds& seeds);                   // its seed inputs (Zero's own writers)
//
// The rule: a zero::Error is the loader rejecting a bad input, as it promises; it is
// expected and ignored. Everything else is a finding: a crash, a sanitizer report, a
// leak, an input-size-dependent allocation libFuzzer calls out-of-memory, a failed
// FUZZ_CHECK (a property of what was loaded, such as "saving and loading again gives the
// same thing"), and any exception that is not a zero::Error (std::invalid_argument from
// std::stoll, nlohmann::json::type_error, std::bad_alloc, ...): the API promises a
// zero::Error with a message, so those escape to the caller as something else. The
// target prints the exception's type and message and aborts, and libFuzzer saves the input.
//
// With ZERO_FUZZ_WRITE_SEEDS=DIR set, the program writes its seeds into DIR and exits
// instead of fuzzing: tools/fuzz.sh --seeds regenerates tests/fuzz/corpus/ that way.
#pragma once

#include <cxxabi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>

#include "zero/core/error.h"

namespace zero_fuzz {

namespace fs = std::filesystem;

// A failed property: print it and abort, so libFuzzer reports a crash and saves the input.
#define FUZZ_CHECK(cond, what)                                                    \
  do {                                                                            \
    if (!(cond)) {                                                                \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s (%s)\n", __FILE__,     \
                   __LINE__, #cond, std::string(what).c_str());                   \
      std::abort();                                                               \
    }                                                                             \
  } while (0)

// Seeds by name, written into one folder.
class Seeds {
 public:
  explicit Seeds(fs::path dir) : dir_(std::move(dir)) { fs::create_directories(dir_); }
  void Add(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

// A folder of this process's own under $TMPDIR (or /tmp), removed at exit. Targets write
// each input there under a fixed name before calling a loader that takes a path.
inline const fs::path& work_dir() {
  static const fs::path* dir = [] {  // never destroyed: the exit handler below still reads it
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/zero-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("zero fuzz: mkdtemp");
      std::abort();
    }
    return new fs::path(pattern);
  }();
  static const bool cleanup = std::atexit([] {
    std::error_code ec;
    fs::remove_all(*dir, ec);
  }) == 0;
  (void)cleanup;
  return *dir;
}

// Writes `size` bytes at `data` to `path` (replacing it).
inline void write_bytes(const fs::path& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) {
    std::fprintf(stderr, "zero fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

inline std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The demangled type of the exception being handled ("std::invalid_argument").
inline std::string current_exception_type() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (!type) return "(unknown)";
  int status = 0;
  char* name = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : type->name();
  std::free(name);
  return out;
}

}  // namespace zero_fuzz

void fuzz_one(const uint8_t* data, size_t size);
void write_seeds(zero_fuzz::Seeds& seeds);

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("ZERO_FUZZ_WRITE_SEEDS")) {
    zero_fuzz::Seeds seeds{zero_fuzz::fs::path(dir)};
    write_seeds(seeds);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    fuzz_one(data, size);
  } catch (const zero::Error&) {
    // The input was rejected with a message: what a loader should do with a bad file.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FINDING: uncaught %s (not a zero::Error): %s\n",
                 zero_fuzz::current_exception_type().c_str(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "FINDING: uncaught exception of type %s\n",
                 zero_fuzz::current_exception_type().c_str());
    std::abort();
  }
  return 0;
}

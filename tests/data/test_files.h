// Helpers for the data and io tests, which read and write real files:
//   - TempDir: a fresh folder under the system temp directory, removed with its contents
//     when the object goes out of scope;
//   - write_bytes / read_bytes: a whole file at once;
//   - expect_error: runs a callable, expects zero::Error, and checks that the message
//     mentions each given part (a file name, a number, a reason).
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "zero/core/error.h"

namespace zero::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "zero_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw Error("cannot create a temporary folder");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // `name` inside the folder.
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

template <typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected zero::Error mentioning '" << (parts.empty() ? "" : parts[0]) << "'";
  } catch (const Error& e) {
    for (const auto& part : parts) EXPECT_THAT(e.what(), ::testing::HasSubstr(part));
  }
}

}  // namespace zero::testing

// Tests of the unique-id file exchange (distributed/unique_id.h): a round trip of all 256 byte
// values, a reader that starts before the writer, the timeout, and damaged files.
#include "zero/distributed/unique_id.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/support/test_support.h"

namespace zero::dist {
namespace {

namespace fs = std::filesystem;
using testing::expect_error_mentions;

class UniqueIdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("zero_unique_id_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path() const { return (dir_ / "nccl_id").string(); }
  void write_raw(const std::string& text) const { std::ofstream(path()) << text; }
  fs::path dir_;
};

UniqueId counting_id() {
  UniqueId id;
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<uint8_t>(i * 2 + 1);  // 1, 3, ..., 255
  return id;
}

TEST_F(UniqueIdTest, RoundTripKeepsEveryByte) {
  const UniqueId id = counting_id();
  write_unique_id_file(path(), id);
  EXPECT_EQ(read_unique_id_file(path(), 0), id);
  UniqueId zeros{}, ones;
  ones.fill(0xff);
  write_unique_id_file(path(), zeros);  // replaces the file
  EXPECT_EQ(read_unique_id_file(path(), 0), zeros);
  write_unique_id_file(path(), ones);
  EXPECT_EQ(read_unique_id_file(path(), 0), ones);
  EXPECT_FALSE(fs::exists(path() + ".tmp"));  // the temporary name is gone
}

TEST_F(UniqueIdTest, ReaderWaitsForTheWriter) {
  const UniqueId id = counting_id();
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    write_unique_id_file(path(), id);
  });
  const UniqueId got = read_unique_id_file(path(), 10.0, 0.005);
  writer.join();
  EXPECT_EQ(got, id);
}

TEST_F(UniqueIdTest, TimeoutSaysWhatItWaitedFor) {
  const auto start = std::chrono::steady_clock::now();
  expect_error_mentions([&] { read_unique_id_file(path(), 0.1, 0.01); },
                        {"timed out after 0.1 s", "rank 0", path()});
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
}

TEST_F(UniqueIdTest, DamagedFilesAreClearErrors) {
  write_raw("something else\n00\n");
  expect_error_mentions([&] { read_unique_id_file(path(), 0); }, {"header", "something else"});
  write_raw("zero-nccl-unique-id v1\n" + std::string(100, 'a') + "\n");
  expect_error_mentions([&] { read_unique_id_file(path(), 0); }, {"256 hex digits", "got 100"});
  write_raw("zero-nccl-unique-id v1\n" + std::string(254, '0') + "zz\n");
  expect_error_mentions([&] { read_unique_id_file(path(), 0); }, {"'zz'", "byte 127"});
  write_raw("");
  expect_error_mentions([&] { read_unique_id_file(path(), 0); }, {"header"});
}

}  // namespace
}  // namespace zero::dist

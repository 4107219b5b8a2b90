// The unique-id file (see unique_id.h): write atomically as hex text, poll, parse.
#include "zero/distributed/unique_id.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "zero/core/error.h"
#include "zero/io/atomic_file.h"

namespace zero::dist {
namespace {

constexpr const char* kHeader = "zero-nccl-unique-id v1";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

UniqueId parse(const std::string& text, const std::string& path) {
  std::istringstream in(text);
  std::string header, hex;
  std::getline(in, header);
  std::getline(in, hex);
  ZERO_CHECK(header == kHeader, "NCCL unique-id file ", path, ": expected the header line '",
             kHeader, "', got '", header.substr(0, 40), "' (not a file written by Zero's rank 0?)");
  ZERO_CHECK(hex.size() == 2 * kUniqueIdBytes, "NCCL unique-id file ", path, ": expected ",
             2 * kUniqueIdBytes, " hex digits, got ", hex.size(), " (a damaged file)");
  UniqueId id{};
  for (size_t i = 0; i < kUniqueIdBytes; ++i) {
    const int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    ZERO_CHECK(hi >= 0 && lo >= 0, "NCCL unique-id file ", path,
               ": expected lower-case hex digits, got '", hex.substr(2 * i, 2), "' at byte ", i);
    id[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return id;
}

}  // namespace

void write_unique_id_file(const std::string& path, const UniqueId& id) {
  static const char* kDigits = "0123456789abcdef";
  std::string text = std::string(kHeader) + "\n";
  for (uint8_t b : id) {
    text += kDigits[b >> 4];
    text += kDigits[b & 15];
  }
  text += "\n";
  io::write_file_atomically(path, text);
}

UniqueId read_unique_id_file(const std::string& path, double timeout_seconds,
                             double poll_seconds) {
  ZERO_CHECK(timeout_seconds >= 0 && poll_seconds > 0, "read_unique_id_file: expected "
             "timeout >= 0 and poll interval > 0 seconds, got ", timeout_seconds, " and ",
             poll_seconds);
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (true) {
    std::ifstream in(path, std::ios::binary);
    if (in) {  // the rename is atomic: an existing file is complete
      std::ostringstream text;
      text << in.rdbuf();
      return parse(text.str(), path);
    }
    ZERO_CHECK(Clock::now() < deadline, "timed out after ", timeout_seconds,
               " s waiting for rank 0 to write the NCCL unique id to ", path,
               " (did rank 0 start? look at its output for an earlier error)");
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_seconds));
  }
}

}  // namespace zero::dist

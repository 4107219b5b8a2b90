/// @file
/// Sharing the NCCL unique id between the processes of one run through a file.
///
/// Layer `zero/distributed/` (data-parallel training over several GPUs) sits above `autograd`
/// and `nn` and below `train`: `unique_id.h` (this file), `communicator.h` (NCCL),
/// `grad_buckets.h` (which gradients travel together) and `data_parallel.h` (the glue
/// that all-reduces gradients during backward). Read it in that order.
///
/// Before N processes can talk, they must agree on one 128-byte token: rank 0 asks NCCL
/// for it (`ncclGetUniqueId`, which also opens the socket the others will dial) and
/// every other rank must receive it. On one host a file is the simplest channel: rank 0
/// writes it atomically (temporary name, then rename), so a reader sees either no file
/// or the whole id, never half of one; the others poll until it appears.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace zero::dist {

/// Size of an NCCL unique id (`NCCL_UNIQUE_ID_BYTES`; communicator.cpp checks they agree).
constexpr size_t kUniqueIdBytes = 128;

/// The opaque bytes of an NCCL unique id.
using UniqueId = std::array<uint8_t, kUniqueIdBytes>;

/// Writes `id` to `path` atomically as two text lines: a header naming the format and
/// the 256 hexadecimal digits of the bytes. @throws zero::Error if it cannot be written.
void write_unique_id_file(const std::string& path, const UniqueId& id);

/// Waits until `path` exists (checking every `poll_seconds`), then reads the id in it.
/// @throws zero::Error if the file has not appeared after `timeout_seconds` (rank 0 is
/// probably not running: the message says so), or if it is not a unique-id file
/// (wrong header, wrong length, a character that is not a hex digit).
UniqueId read_unique_id_file(const std::string& path, double timeout_seconds,
                             double poll_seconds = 0.02);

}  // namespace zero::dist

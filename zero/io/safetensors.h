/// @file
/// Reading and writing safetensors files, the checkpoint format shared with PyTorch and
/// Hugging Face.
///
/// A safetensors file is: 8 bytes, a little-endian uint64 N; N bytes of JSON (padded with
/// spaces); then the raw tensor data. The JSON maps each tensor name to
/// `{"dtype": "F32", "shape": [768, 2304], "data_offsets": [begin, end]}`, offsets in bytes
/// from the start of the data section, plus an optional `"__metadata__"` object of
/// string values. Data is row-major and little-endian. Zero reads and writes F32 and I32.
/// A file Zero writes is read by the reference `safetensors` library and vice versa.
/// Read next: atomic_file.h (how files are written so a crash cannot corrupt them).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "zero/core/tensor.h"

namespace zero::io {

/// Tensors by name, in order.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// Writes `tensors` (F32 or I32, any device and layout: each is copied to a contiguous
/// CPU tensor) and `metadata` to `path`, in the given order, through `path`.tmp, `fsync`
/// and a rename (atomic_file.h), so `path` is never half-written.
/// @throws zero::Error for an undefined tensor, an empty or repeated name, the reserved
/// name "__metadata__", or a file that cannot be written.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads every tensor of `path` as a CPU tensor, in file (data offset) order, and its
/// metadata into `*metadata` when given. Every inconsistency is a zero::Error naming the
/// file: too short, header length beyond the file, a header that is not a JSON object,
/// an unknown dtype, a shape that does not match its byte range, offsets out of range,
/// overlapping or leaving gaps, or bytes after the last tensor (the reference library
/// rejects those too). As in the reference library, the header is a JSON object padded
/// at the end with spaces only (a NUL byte, a newline or other bytes after it are errors),
/// no key appears twice in one object, and no tensor name is empty.
NamedTensors load_safetensors(const std::string& path,
                              std::map<std::string, std::string>* metadata = nullptr);

}  // namespace zero::io

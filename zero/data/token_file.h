/// @file
/// Token files: a text prepared once into `train.bin` / `val.bin`, then loaded per run.
///
/// Same layout as nanoGPT's `prepare.py`: each file is a flat array of uint16 token ids,
/// little-endian, so 1 MB of text is 2 MB on disk and loads with one read. Beside them
/// `vocab.json` (the `CharTokenizer`) and `meta.json` (sizes, for checks and for humans):
/// `{"format": "zero-char-dataset", "version": 1, "vocab_size": 65, "train_tokens": ...,
/// "val_tokens": ..., "source_bytes": ..., "val_fraction": 0.1}`.
/// Read next: batch_sampler.h (random windows of these tokens as training batches).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zero::data {

/// Where a prepared dataset lives and how big it is.
struct DatasetInfo {
  std::string dir;           ///< Folder holding train.bin, val.bin, vocab.json, meta.json.
  int64_t vocab_size = 0;    ///< Number of distinct characters.
  int64_t train_tokens = 0;  ///< Tokens in train.bin.
  int64_t val_tokens = 0;    ///< Tokens in val.bin.
};

/// Largest vocabulary a uint16 token file can hold (ids 0..65535).
constexpr int64_t kMaxTokenFileVocab = 65536;

/// Tokenizes `text` by character and writes `out_dir`/{train.bin, val.bin, vocab.json,
/// meta.json}, creating `out_dir` if needed. The first `1 - val_fraction` of the characters
/// are the training split, the rest validation (a cut between two characters, never
/// inside one). Each file is written to a temporary name and renamed, and meta.json last,
/// so a complete meta.json means a complete dataset.
/// @throws zero::Error on invalid UTF-8, `val_fraction` outside (0, 1), a split that would
/// be empty, more than 65536 distinct characters, or a file that cannot be written.
DatasetInfo prepare_char_dataset(const std::string& text, const std::string& out_dir,
                                 double val_fraction = 0.1);

/// Reads `dir`/meta.json written by `prepare_char_dataset`.
/// @throws zero::Error naming the file if it is missing or malformed.
DatasetInfo read_dataset_info(const std::string& dir);

/// The token ids of a uint16 token file, as int32 (the dtype of Zero's id tensors).
/// @throws zero::Error naming the file if it is missing, empty, has an odd number of
/// bytes, or holds an id >= `vocab_size` (naming the id and its position).
std::vector<int32_t> load_tokens(const std::string& bin_path, int64_t vocab_size);

/// The whole content of a file, as bytes (for `--data FILE`; a pipe is read to its end).
/// @throws zero::Error naming the file if it cannot be read, or is a folder or a device
/// (such as /dev/zero, which never ends).
std::string read_text_file(const std::string& path);

}  // namespace zero::data

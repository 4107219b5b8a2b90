// Preparing and loading token files (see token_file.h). Ids are written byte by byte
// in little-endian order, so the files are the same on any machine, and read back the
// same way; nothing here depends on the host's byte order.
#include "zero/data/token_file.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "zero/core/error.h"
#include "zero/data/char_tokenizer.h"
#include "zero/io/atomic_file.h"
#include "zero/io/json_fields.h"

namespace zero::data {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "zero-char-dataset";
constexpr int kVersion = 1;

std::string to_uint16_le(const std::vector<int32_t>& ids, size_t begin, size_t end) {
  std::string bytes(2 * (end - begin), '\0');
  for (size_t i = begin; i < end; ++i) {
    const auto id = static_cast<uint16_t>(ids[i]);
    bytes[2 * (i - begin)] = static_cast<char>(id & 0xFF);
    bytes[2 * (i - begin) + 1] = static_cast<char>(id >> 8);
  }
  return bytes;
}

}  // namespace

DatasetInfo prepare_char_dataset(const std::string& text, const std::string& out_dir,
                                 double val_fraction) {
  ZERO_CHECK(val_fraction > 0.0 && val_fraction < 1.0, "expected val_fraction in (0, 1), got ",
             val_fraction);
  const CharTokenizer tok = CharTokenizer::FromText(text);
  ZERO_CHECK(tok.vocab_size() <= kMaxTokenFileVocab, "expected at most ", kMaxTokenFileVocab,
             " distinct characters (uint16 token files), got ", tok.vocab_size());
  const std::vector<int32_t> ids = tok.Encode(text);
  const auto n = static_cast<int64_t>(ids.size());
  const auto n_train =
      static_cast<int64_t>(std::floor(static_cast<double>(n) * (1.0 - val_fraction)));
  ZERO_CHECK(n_train >= 1 && n_train < n, "expected a text long enough for both splits, got ", n,
             " characters with val_fraction ", val_fraction, " (", n_train, " train, ", n - n_train,
             " val)");

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  ZERO_CHECK(!ec, "cannot create dataset folder '", out_dir, "': ", ec.message());
  const fs::path dir(out_dir);
  io::write_file_atomically((dir / "train.bin").string(), to_uint16_le(ids, 0, n_train));
  io::write_file_atomically((dir / "val.bin").string(), to_uint16_le(ids, n_train, n));
  tok.Save((dir / "vocab.json").string());

  DatasetInfo info{out_dir, tok.vocab_size(), n_train, n - n_train};
  const nlohmann::json meta = {{"format", kFormat},
                               {"version", kVersion},
                               {"vocab_size", info.vocab_size},
                               {"train_tokens", info.train_tokens},
                               {"val_tokens", info.val_tokens},
                               {"source_bytes", text.size()},
                               {"val_fraction", val_fraction},
                               {"token_type", "uint16 little-endian"}};
  io::write_file_atomically((dir / "meta.json").string(), meta.dump(1) + "\n");
  return info;
}

DatasetInfo read_dataset_info(const std::string& dir) {
  const std::string path = (fs::path(dir) / "meta.json").string();
  const std::string file = "dataset file '" + path + "'";
  const nlohmann::json meta = io::parse_json(read_text_file(path), file);
  const io::JsonFields fields(meta, file);
  fields.Expect("format", kFormat);
  fields.Expect("version", kVersion);
  return DatasetInfo{dir, fields.Int("vocab_size", 1, kMaxTokenFileVocab),
                     fields.Int("train_tokens", 0), fields.Int("val_tokens", 0)};
}

std::vector<int32_t> load_tokens(const std::string& bin_path, int64_t vocab_size) {
  ZERO_CHECK(vocab_size >= 1 && vocab_size <= kMaxTokenFileVocab, "expected vocab_size in [1, ",
             kMaxTokenFileVocab, "] for token file '", bin_path, "', got ", vocab_size);
  const std::string bytes = read_text_file(bin_path);
  ZERO_CHECK(!bytes.empty(), "token file '", bin_path, "' is empty");
  ZERO_CHECK(bytes.size() % 2 == 0, "token file '", bin_path, "' has ", bytes.size(),
             " bytes, expected an even number (2 bytes per uint16 token); is it truncated?");
  std::vector<int32_t> ids(bytes.size() / 2);
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = b[2 * i] | (b[2 * i + 1] << 8);
    ZERO_CHECK(id < vocab_size, "token file '", bin_path, "': token ", id, " at position ", i,
               " is not below vocab_size ", vocab_size,
               " (was it prepared with another vocabulary?)");
    ids[i] = id;
  }
  return ids;
}

std::string read_text_file(const std::string& path) {
  // A folder opens as a stream on Linux, and reading it then throws std::ios_base::failure.
  std::error_code ec;
  ZERO_CHECK(!fs::is_directory(path, ec), "cannot read '", path,
             "': it is a folder, expected a file");
  // A device such as /dev/zero never ends: reading it would fill the memory. (A pipe, as
  // from the shell's <(command), ends when its writer does, and is read.)
  ZERO_CHECK(!fs::is_character_file(path, ec) && !fs::is_block_file(path, ec), "cannot read '",
             path, "': it is a device, expected a file");
  std::ifstream in(path, std::ios::binary);
  ZERO_CHECK(in.good(), "cannot open '", path, "' for reading (does it exist?)");
  std::string bytes;
  try {
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::exception& e) {
    ZERO_CHECK(false, "failed reading '", path, "': ", e.what());
  }
  ZERO_CHECK(!in.bad(), "failed reading '", path, "'");
  return bytes;
}

}  // namespace zero::data

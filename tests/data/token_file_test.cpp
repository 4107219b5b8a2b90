// Tests of token files (data/token_file.h): prepare + load round trip in a temporary
// folder, the byte layout, the 90/10 split at a character boundary, and clear errors
// for missing, empty, odd-sized and out-of-vocabulary files.
#include "zero/data/token_file.h"

#include <gtest/gtest.h>

#include "tests/data/test_files.h"
#include "zero/data/char_tokenizer.h"
#include "zero/data/utf8.h"

namespace zero::data {
namespace {

using testing::expect_error;
using testing::TempDir;

TEST(TokenFileTest, PrepareAndLoadRoundTrip) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 20; ++i)
    text += "To be, or not to be: caf\xC3\xA9 \xF0\x9F\x98\x80\n";  // 28 chars each
  const DatasetInfo info = prepare_char_dataset(text, dir / "ds");
  EXPECT_EQ(info.dir, dir / "ds");
  EXPECT_EQ(info.train_tokens, 504);  // floor(560 * 0.9)
  EXPECT_EQ(info.val_tokens, 56);

  const CharTokenizer tok = CharTokenizer::Load(dir / "ds/vocab.json");
  EXPECT_EQ(tok.vocab_size(), info.vocab_size);
  const std::vector<int32_t> train = load_tokens(dir / "ds/train.bin", info.vocab_size);
  const std::vector<int32_t> val = load_tokens(dir / "ds/val.bin", info.vocab_size);
  ASSERT_EQ(static_cast<int64_t>(train.size()), info.train_tokens);
  ASSERT_EQ(static_cast<int64_t>(val.size()), info.val_tokens);
  EXPECT_EQ(tok.Decode(train) + tok.Decode(val), text);  // the split never cuts a character

  const DatasetInfo meta = read_dataset_info(dir / "ds");
  EXPECT_EQ(meta.vocab_size, info.vocab_size);
  EXPECT_EQ(meta.train_tokens, info.train_tokens);
  EXPECT_EQ(meta.val_tokens, info.val_tokens);
}

TEST(TokenFileTest, FilesAreUint16LittleEndian) {
  TempDir dir;
  prepare_char_dataset("abcabcabca", dir.str(), 0.5);  // vocab a=0 b=1 c=2
  EXPECT_EQ(testing::read_bytes(dir / "train.bin"), std::string("\0\0\1\0\2\0\0\0\1\0", 10));
  EXPECT_EQ(testing::read_bytes(dir / "val.bin"), std::string("\2\0\0\0\1\0\2\0\0\0", 10));
}

TEST(TokenFileTest, LoadReportsBadFilesNamingThem) {
  TempDir dir;
  const std::string path = dir / "train.bin";
  expect_error([&] { load_tokens(path, 10); }, {path, "cannot open"});
  testing::write_bytes(path, "");
  expect_error([&] { load_tokens(path, 10); }, {path, "empty"});
  testing::write_bytes(path, std::string("\1\0\2", 3));
  expect_error([&] { load_tokens(path, 10); }, {path, "3 bytes", "even"});
  testing::write_bytes(path, std::string("\1\0\2\0\x0A\0", 6));  // 1, 2, 10
  expect_error([&] { load_tokens(path, 10); }, {path, "token 10", "position 2", "vocab_size 10"});
  EXPECT_EQ(load_tokens(path, 11), (std::vector<int32_t>{1, 2, 10}));
}

TEST(TokenFileTest, PrepareRejectsBadArguments) {
  TempDir dir;
  expect_error([&] { prepare_char_dataset("abcdef", dir.str(), 1.0); }, {"val_fraction", "got 1"});
  expect_error([&] { prepare_char_dataset("a", dir.str()); }, {"both splits", "1 characters"});
  expect_error([&] { prepare_char_dataset("ab\xFF", dir.str()); }, {"byte offset 2"});
  expect_error([&] { read_dataset_info(dir / "nothing"); }, {"meta.json"});
}

TEST(TokenFileTest, DatasetInfoChecksEachField) {
  TempDir dir;
  const std::string path = dir / "meta.json";
  // {"format": 1} threw nlohmann's type_error from meta.value("format", "").
  testing::write_bytes(path, R"({"format": 1})");
  expect_error([&] { read_dataset_info(dir.str()); }, {path, "field \"format\"", "got 1"});
  const std::string head = R"({"format": "zero-char-dataset", "version": 1, )";
  testing::write_bytes(path, head + R"("vocab_size": "65", "train_tokens": 9, "val_tokens": 1})");
  expect_error([&] { read_dataset_info(dir.str()); }, {path, "field \"vocab_size\"", "\"65\""});
  testing::write_bytes(path, head + R"("vocab_size": 65, "train_tokens": -9, "val_tokens": 1})");
  expect_error([&] { read_dataset_info(dir.str()); }, {path, "\"train_tokens\"", ">= 0", "-9"});
  testing::write_bytes(path, head + R"("vocab_size": 65, "train_tokens": 9})");
  expect_error([&] { read_dataset_info(dir.str()); }, {path, "\"val_tokens\"", "missing"});
  testing::write_bytes(path, head + R"("vocab_size": 65, "train_tokens": 9, "val_tokens": 1})");
  EXPECT_EQ(read_dataset_info(dir.str()).vocab_size, 65);
  // A folder where a file is expected: reading it threw std::ios_base::failure.
  expect_error([&] { read_text_file(dir.str()); }, {dir.str(), "folder"});
  // A device that never ends (train_gpt --data /dev/zero read until the memory ran out).
  expect_error([&] { read_text_file("/dev/zero"); }, {"/dev/zero", "device"});
}

TEST(TokenFileTest, PrepareRejectsVocabularyBeyondUint16) {
  std::vector<char32_t> cps;
  for (char32_t c = 0x4E00; cps.size() < 65537; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    cps.push_back(c);
  }
  TempDir dir;
  expect_error([&] { prepare_char_dataset(encode_utf8(cps), dir.str()); },
               {"at most 65536", "got 65537"});
}

}  // namespace
}  // namespace zero::data

// Tests of CharTokenizer (data/char_tokenizer.h): vocabularies, round trips through
// ASCII and multi-byte text, clear errors, and vocab.json save/load.
#include "zero/data/char_tokenizer.h"

#include <gtest/gtest.h>

#include "tests/data/test_files.h"

namespace zero::data {
namespace {

using testing::expect_error;
using testing::TempDir;

TEST(CharTokenizerTest, VocabularyIsSortedDistinctCharacters) {
  const CharTokenizer tok = CharTokenizer::FromText("hello world\n");
  EXPECT_EQ(tok.vocab_size(), 9);  // \n, ' ', d, e, h, l, o, r, w
  EXPECT_EQ(tok.chars(), (std::vector<char32_t>{'\n', ' ', 'd', 'e', 'h', 'l', 'o', 'r', 'w'}));
  EXPECT_EQ(tok.Encode("hello"), (std::vector<int32_t>{4, 3, 5, 5, 6}));
}

TEST(CharTokenizerTest, AsciiRoundTrip) {
  const std::string text = "First Citizen:\nBefore we proceed any further, hear me speak.\n";
  const CharTokenizer tok = CharTokenizer::FromText(text);
  EXPECT_EQ(tok.Decode(tok.Encode(text)), text);
}

TEST(CharTokenizerTest, MultiByteRoundTripCountsCharactersNotBytes) {
  const std::string text =
      "na\xC3\xAFve caf\xC3\xA9 \xE2\x82\xAC"
      "5 \xF0\x9F\x98\x80\xF0\x9F\x98\x80!";
  const CharTokenizer tok = CharTokenizer::FromText(text);
  const std::vector<int32_t> ids = tok.Encode(text);
  EXPECT_EQ(ids.size(), 17u);   // 17 characters in 27 bytes
  EXPECT_EQ(ids[15], ids[14]);  // the two emoji are one token
  EXPECT_EQ(tok.chars().back(), char32_t{0x1F600});
  EXPECT_EQ(tok.Decode(ids), text);
}

TEST(CharTokenizerTest, InvalidUtf8NamesTheByteOffset) {
  expect_error(
      [] {
        CharTokenizer::FromText(
            "abc\xFF"
            "def");
      },
      {"invalid UTF-8", "byte offset 3"});
  const CharTokenizer tok = CharTokenizer::FromText("abc");
  expect_error([&] { tok.Encode("ab\xC3"); }, {"byte offset 2"});
}

TEST(CharTokenizerTest, UnknownCharacterAndBadIdAreErrors) {
  const CharTokenizer tok = CharTokenizer::FromText("abc");
  expect_error([&] { tok.Encode("abz"); },
               {"U+007A 'z'", "byte offset 2", "not in the vocabulary"});
  expect_error([&] { tok.Decode({0, 3}); }, {"[0, 3)", "got 3", "position 1"});
  expect_error([&] { tok.Decode({-1}); }, {"got -1"});
  expect_error([] { CharTokenizer::FromText(""); }, {"non-empty"});
}

TEST(CharTokenizerTest, SaveAndLoadRoundTrip) {
  TempDir dir;
  const std::string text = "\"quoted\"\\ \t\n\xC3\xA9\xF0\x9F\x98\x80";
  const CharTokenizer tok = CharTokenizer::FromText(text);
  tok.Save(dir / "vocab.json");
  const CharTokenizer back = CharTokenizer::Load(dir / "vocab.json");
  EXPECT_EQ(back.chars(), tok.chars());
  EXPECT_EQ(back.Decode(back.Encode(text)), text);
  EXPECT_THAT(testing::read_bytes(dir / "vocab.json"), ::testing::HasSubstr("\"version\": 1"));
}

TEST(CharTokenizerTest, LoadRejectsBadFilesNamingThem) {
  TempDir dir;
  const std::string path = dir / "vocab.json";
  expect_error([&] { CharTokenizer::Load(path); }, {path, "cannot open"});
  testing::write_bytes(path, "{not json");
  expect_error([&] { CharTokenizer::Load(path); }, {path, "not valid JSON"});
  testing::write_bytes(path, R"({"format": "zero-char-vocab", "version": 2, "chars": ["a"]})");
  expect_error([&] { CharTokenizer::Load(path); }, {path, "\"version\"", "expected 1", "got 2"});
  testing::write_bytes(path, R"({"format": "zero-char-vocab", "version": 1, "chars": ["b", "a"]})");
  expect_error([&] { CharTokenizer::Load(path); }, {path, "increasing"});
  testing::write_bytes(path, R"({"format": "zero-char-vocab", "version": 1, "chars": ["ab"]})");
  expect_error([&] { CharTokenizer::Load(path); }, {path, "exactly one character"});
}

TEST(CharTokenizerTest, LoadChecksEachFieldsType) {
  TempDir dir;
  const std::string path = dir / "vocab.json";
  // A "format" of the wrong type threw nlohmann's type_error out of the program.
  testing::write_bytes(path, R"({"format": [1], "version": 1, "chars": ["a"]})");
  expect_error([&] { CharTokenizer::Load(path); }, {path, "field \"format\"", "got [1]"});
  testing::write_bytes(path, R"({"format": "zero-char-vocab", "version": "1", "chars": ["a"]})");
  expect_error([&] { CharTokenizer::Load(path); }, {path, "field \"version\"", "got \"1\""});
  testing::write_bytes(path, R"({"format": "zero-char-vocab", "version": 1, "chars": "ab"})");
  expect_error([&] { CharTokenizer::Load(path); }, {path, "field \"chars\"", "an array"});
  testing::write_bytes(path, R"({"format": "zero-char-vocab", "version": 1})");
  expect_error([&] { CharTokenizer::Load(path); }, {path, "field \"chars\"", "missing"});
  testing::write_bytes(path, R"({"format": "zero-char-vocab", "version": 1, "chars": ["a", 2]})");
  expect_error([&] { CharTokenizer::Load(path); }, {path, "entry 1", "got 2"});
  testing::write_bytes(path, "[1, 2]");
  expect_error([&] { CharTokenizer::Load(path); }, {path, "expected a JSON object"});
  expect_error([&] { CharTokenizer::Load(dir.str()); }, {dir.str(), "folder"});
}

}  // namespace
}  // namespace zero::data

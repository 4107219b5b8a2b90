// Tests of UTF-8 decoding and encoding (data/utf8.h): every length of sequence, the
// boundary code points, and each kind of malformed input with its byte offset.
#include "zero/data/utf8.h"

#include <gtest/gtest.h>

#include "tests/data/test_files.h"

namespace zero::data {
namespace {

using testing::expect_error;

TEST(Utf8Test, DecodesOneToFourByteSequences) {
  // "a", "é" (C3 A9), "€" (E2 82 AC), "😀" (F0 9F 98 80)
  const std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  EXPECT_EQ(decode_utf8(text), (std::vector<char32_t>{0x61, 0xE9, 0x20AC, 0x1F600}));
}

TEST(Utf8Test, EncodeInvertsDecodeAtBoundaries) {
  const std::vector<char32_t> cps = {0x0,    0x7F,   0x80,   0x7FF,   0x800,
                                     0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF};
  const std::string bytes = encode_utf8(cps);
  EXPECT_EQ(bytes.size(), 2u * 1 + 2 * 2 + 4 * 3 + 2 * 4);
  EXPECT_EQ(decode_utf8(bytes), cps);
}

TEST(Utf8Test, RejectsMalformedBytesNamingTheOffset) {
  expect_error([] { decode_utf8(std::string("ab\x80", 3)); },
               {"byte offset 2", "0x80", "continuation"});
  expect_error([] { decode_utf8("abc\xC3"); }, {"byte offset 3", "ends inside"});
  expect_error([] { decode_utf8("\xC3(x"); }, {"byte offset 1", "0x28"});
  expect_error([] { decode_utf8("\xC0\xAF"); }, {"byte offset 0", "0xC0"});  // overlong '/'
  expect_error([] { decode_utf8("x\xE0\x80\xAF"); }, {"byte offset 2", "overlong"});
  expect_error([] { decode_utf8("\xED\xA0\x80"); }, {"byte offset 1", "surrogate"});
  expect_error([] { decode_utf8("\xF4\x90\x80\x80"); }, {"byte offset 1", "U+10FFFF"});
  expect_error([] { decode_utf8("\xFF"); }, {"byte offset 0", "0xFF"});
}

TEST(Utf8Test, EncodeRejectsSurrogatesAndOutOfRange) {
  expect_error([] { encode_utf8({0xD800}); }, {"U+D800"});
  expect_error([] { encode_utf8({0x110000}); }, {"U+110000"});
}

}  // namespace
}  // namespace zero::data

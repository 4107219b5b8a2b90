// UTF-8 decoding with validation and encoding (see utf8.h). The decoder follows the
// table of well-formed byte sequences in the Unicode Standard (chapter 3, table 3-7):
// the allowed range of the second byte depends on the first, which is what rules out
// overlong forms (E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and values above
// U+10FFFF (F4 90..BF) without decoding first and checking afterwards.
#include "zero/data/utf8.h"

#include <cstdint>
#include <cstdio>

#include "zero/core/error.h"

namespace zero::data {
namespace {

std::string hex_byte(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02X", b);
  return buf;
}

[[noreturn]] void throw_invalid(size_t offset, unsigned char byte, const char* why) {
  throw Error(detail::str_cat("invalid UTF-8 at byte offset ", offset, " (byte ", hex_byte(byte),
                              "): ", why));
}

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

}  // namespace

std::vector<char32_t> decode_utf8(const std::string& utf8) {
  std::vector<char32_t> out;
  out.reserve(utf8.size());
  const auto* s = reinterpret_cast<const unsigned char*>(utf8.data());
  const size_t n = utf8.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char b0 = s[i];
    if (b0 < 0x80) {  // ASCII: the common case
      out.push_back(b0);
      ++i;
      continue;
    }
    int length = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    char32_t cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      length = 2, cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      length = 3, cp = b0 & 0x0F;
      if (b0 == 0xE0) lo = 0xA0;  // below: overlong
      if (b0 == 0xED) hi = 0x9F;  // above: UTF-16 surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      length = 4, cp = b0 & 0x07;
      if (b0 == 0xF0) lo = 0x90;  // below: overlong
      if (b0 == 0xF4) hi = 0x8F;  // above: beyond U+10FFFF
    } else if (is_continuation(b0)) {
      throw_invalid(i, b0, "a continuation byte where a character should start");
    } else {
      throw_invalid(i, b0, "not a valid first byte (C0, C1 and F5..FF never occur in UTF-8)");
    }
    for (int k = 1; k < length; ++k) {
      if (i + k >= n) throw_invalid(i, b0, "the text ends inside a multi-byte character");
      const unsigned char b = s[i + k];
      const bool ok = k == 1 ? (b >= lo && b <= hi) : is_continuation(b);
      if (!ok) {
        throw_invalid(i + k, b,
                      k == 1 && is_continuation(b)
                          ? "an overlong encoding, a surrogate or a value above U+10FFFF"
                          : "expected a continuation byte (10xxxxxx)");
      }
      cp = (cp << 6) | (b & 0x3F);
    }
    out.push_back(cp);
    i += length;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  ZERO_CHECK(cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF),
             "expected a Unicode scalar value (U+0000..U+10FFFF, not a surrogate), got ",
             code_point_name(cp));
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(const std::vector<char32_t>& code_points) {
  std::string out;
  out.reserve(code_points.size());
  for (char32_t cp : code_points) append_utf8(out, cp);
  return out;
}

std::string code_point_name(char32_t code_point) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "U+%04X", static_cast<unsigned>(code_point));
  return buf;
}

}  // namespace zero::data

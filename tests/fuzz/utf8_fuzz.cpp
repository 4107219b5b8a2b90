// Fuzz target: data::decode_utf8 and append_utf8 (zero/data/utf8.h).
// Bytes it accepts must be re-encoded to exactly the same bytes (well-formed UTF-8 has one
// encoding per code point) and hold only Unicode scalar values. Every 4-byte group of the
// input read as a code point must either be refused by append_utf8 (surrogates, above
// U+10FFFF) or encode to bytes that decode back to it.
#include <cstring>

#include "fuzz_support.h"
#include "zero/data/utf8.h"

void fuzz_one(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  bool valid = true;
  try {
    const std::vector<char32_t> cps = zero::data::decode_utf8(bytes);
    for (char32_t cp : cps) {
      FUZZ_CHECK(cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF), zero::data::code_point_name(cp));
    }
    FUZZ_CHECK(zero::data::encode_utf8(cps) == bytes, "decode then encode changed the bytes");
  } catch (const zero::Error&) {
    valid = false;  // a malformed text: the decoder said so, and where
  }
  (void)valid;
  for (size_t i = 0; i + 4 <= size; i += 4) {
    uint32_t raw;
    std::memcpy(&raw, data + i, 4);
    const auto cp = static_cast<char32_t>(raw);
    std::string one;
    try {
      zero::data::append_utf8(one, cp);
    } catch (const zero::Error&) {
      FUZZ_CHECK(cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF),
                 "append_utf8 refused " + zero::data::code_point_name(cp));
      continue;
    }
    const std::vector<char32_t> back = zero::data::decode_utf8(one);
    FUZZ_CHECK(back.size() == 1 && back[0] == cp,
               "append_utf8 of " + zero::data::code_point_name(cp) + " does not decode back");
  }
}

void write_seeds(zero_fuzz::Seeds& seeds) {
  seeds.Add("ascii", "To be, or not to be\n");
  seeds.Add("mixed", zero::data::encode_utf8({U'h', 0xE9, 0x20AC, 0x1F600, 0x10FFFF, 0}));
  seeds.Add("overlong", "\xC0\xAF\xE0\x80\xAF");
  seeds.Add("surrogate", "\xED\xA0\x80");
  seeds.Add("above_max", "\xF4\x90\x80\x80");
  seeds.Add("truncated", "ok\xF0\x9F\x98");
  seeds.Add("stray_continuation", "a\x80z");
  const char32_t cps[] = {0xD7FF, 0xE000, 0x110000, 0xFFFFFFFF};  // little-endian groups
  seeds.Add("code_points", std::string(reinterpret_cast<const char*>(cps), sizeof(cps)));
}

/// @file
/// UTF-8 decoding and encoding with validation, for the character tokenizer.
///
/// Text files are bytes; a character tokenizer needs characters (Unicode code
/// points). `decode_utf8` turns bytes into code points and rejects anything that is
/// not well-formed UTF-8 (RFC 3629): stray continuation bytes, truncated sequences,
/// overlong encodings, UTF-16 surrogates and values above U+10FFFF. The error names
/// the byte offset, so a learner can find the bad byte with `xxd -s OFFSET`.
/// Read next: char_tokenizer.h.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace zero::data {

/// The code points of `utf8`, in order.
/// @throws zero::Error naming the byte offset and value of the first malformed byte.
std::vector<char32_t> decode_utf8(const std::string& utf8);

/// Appends the UTF-8 encoding (1 to 4 bytes) of `code_point` to `out`.
/// @throws zero::Error if `code_point` is a surrogate or above U+10FFFF.
void append_utf8(std::string& out, char32_t code_point);

/// The UTF-8 encoding of `code_points`.
/// @throws zero::Error as `append_utf8`.
std::string encode_utf8(const std::vector<char32_t>& code_points);

/// "U+00E9" for code point 0xE9: how messages name a character.
std::string code_point_name(char32_t code_point);

}  // namespace zero::data

// CharTokenizer (see char_tokenizer.h): the vocabulary, encoding and decoding, and
// vocab.json through nlohmann-json (which escapes control characters such as "\n"
// and writes every other character as plain UTF-8, so the file is readable).
#include "zero/data/char_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "zero/core/error.h"
#include "zero/data/utf8.h"
#include "zero/data/token_file.h"  // read_text_file
#include "zero/io/atomic_file.h"
#include "zero/io/json_fields.h"

namespace zero::data {
namespace {

constexpr const char* kFormat = "zero-char-vocab";
constexpr int kVersion = 1;

// `name` and, when it is printable ASCII, the character itself: U+0041 'A'.
std::string describe(char32_t cp) {
  std::string out = code_point_name(cp);
  if (cp >= 0x20 && cp < 0x7F) out += std::string(" '") + static_cast<char>(cp) + "'";
  return out;
}

}  // namespace

CharTokenizer CharTokenizer::FromText(const std::string& utf8) {
  std::vector<char32_t> chars = decode_utf8(utf8);
  ZERO_CHECK(!chars.empty(), "expected a non-empty text to build a vocabulary from, got 0 bytes");
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  return FromCodePoints(std::move(chars));
}

CharTokenizer CharTokenizer::FromCodePoints(std::vector<char32_t> chars) {
  ZERO_CHECK(chars.size() <= static_cast<size_t>(INT32_MAX), "expected at most 2^31-1 characters");
  CharTokenizer tok;
  for (size_t i = 0; i < chars.size(); ++i) {
    ZERO_CHECK(i == 0 || chars[i - 1] < chars[i],
               "expected vocabulary characters in strictly increasing order, got ",
               code_point_name(chars[i]), " after ", code_point_name(chars[i - 1]));
    std::string check;
    append_utf8(check, chars[i]);  // throws for surrogates and values above U+10FFFF
    tok.ids_.emplace(chars[i], static_cast<int32_t>(i));
  }
  tok.chars_ = std::move(chars);
  return tok;
}

std::vector<int32_t> CharTokenizer::Encode(const std::string& utf8) const {
  const std::vector<char32_t> chars = decode_utf8(utf8);
  std::vector<int32_t> ids(chars.size());
  size_t byte_offset = 0;
  for (size_t i = 0; i < chars.size(); ++i) {
    const auto it = ids_.find(chars[i]);
    if (it == ids_.end()) {
      throw Error(detail::str_cat("character ", describe(chars[i]), " at byte offset ", byte_offset,
                                  " is not in the vocabulary (", chars_.size(),
                                  " characters); build the tokenizer from a text containing it"));
    }
    ids[i] = it->second;
    std::string encoded;
    append_utf8(encoded, chars[i]);
    byte_offset += encoded.size();
  }
  return ids;
}

std::string CharTokenizer::Decode(const std::vector<int32_t>& ids) const {
  std::string out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    ZERO_CHECK(ids[i] >= 0 && ids[i] < vocab_size(), "expected token ids in [0, ", vocab_size(),
               "), got ", ids[i], " at position ", i);
    append_utf8(out, chars_[ids[i]]);
  }
  return out;
}

void CharTokenizer::Save(const std::string& path) const {
  nlohmann::json chars = nlohmann::json::array();
  for (char32_t cp : chars_) {
    std::string s;
    append_utf8(s, cp);
    chars.push_back(s);
  }
  const nlohmann::json doc = {{"format", kFormat}, {"version", kVersion}, {"chars", chars}};
  io::write_file_atomically(path, doc.dump(1) + "\n");
}

CharTokenizer CharTokenizer::Load(const std::string& path) {
  const std::string file = "vocabulary file '" + path + "'";
  const nlohmann::json doc = io::parse_json(read_text_file(path), file);
  const io::JsonFields fields(doc, file);
  fields.Expect("format", kFormat);
  fields.Expect("version", kVersion);
  std::vector<char32_t> chars;
  for (const auto& entry : fields.Array("chars")) {
    ZERO_CHECK(entry.is_string(), "vocabulary file '", path, "': field \"chars\": entry ",
               chars.size(), ": expected a string, got ", entry.dump());
    std::vector<char32_t> cps;
    try {
      cps = decode_utf8(entry.get<std::string>());
    } catch (const Error& e) {
      throw Error(
          detail::str_cat("vocabulary file '", path, "': entry ", chars.size(), ": ", e.what()));
    }
    ZERO_CHECK(cps.size() == 1, "vocabulary file '", path, "': entry ", chars.size(),
               " should be exactly one character, got ", cps.size());
    chars.push_back(cps[0]);
  }
  try {
    return FromCodePoints(std::move(chars));
  } catch (const Error& e) {
    throw Error(detail::str_cat("vocabulary file '", path, "': ", e.what()));
  }
}

}  // namespace zero::data

/// @file
/// `CharTokenizer`: one token per Unicode character, as in nanoGPT's shakespeare_char.
///
/// The vocabulary is the set of distinct code points of a text, sorted by code point,
/// so the same text always gives the same ids. Tiny-shakespeare has 65 of them; the
/// project's own corpus (code and prose) about a hundred. It is saved as `vocab.json`:
/// `{"format": "zero-char-vocab", "version": 1, "chars": ["\n", " ", "!", ...]}`,
/// each entry the UTF-8 string of one character, in id order.
/// Read next: token_file.h (turning a text into train.bin / val.bin).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace zero::data {

/// Maps each Unicode code point of a fixed vocabulary to an id and back.
class CharTokenizer {
 public:
  /// The vocabulary of `utf8`: its distinct code points, sorted.
  /// @throws zero::Error on invalid UTF-8 (naming the byte offset) or an empty text.
  static CharTokenizer FromText(const std::string& utf8);
  /// A tokenizer over `chars`, which must be strictly increasing Unicode scalar values.
  static CharTokenizer FromCodePoints(std::vector<char32_t> chars);

  /// The id of each character of `utf8`.
  /// @throws zero::Error on invalid UTF-8, or for a character not in the vocabulary
  /// (naming it and its byte offset).
  std::vector<int32_t> Encode(const std::string& utf8) const;
  /// The text of `ids`. @throws zero::Error for an id outside [0, vocab_size()).
  std::string Decode(const std::vector<int32_t>& ids) const;

  /// Number of distinct characters.
  int64_t vocab_size() const { return static_cast<int64_t>(chars_.size()); }
  /// The vocabulary: code point of id i at position i.
  const std::vector<char32_t>& chars() const { return chars_; }

  /// Writes the vocabulary to `path` as JSON (see the file comment).
  /// @throws zero::Error if the file cannot be written.
  void Save(const std::string& path) const;
  /// Reads a vocabulary written by `Save`.
  /// @throws zero::Error naming the file if it is missing, not JSON, of another format or
  /// version, or its entries are not single characters in increasing order.
  static CharTokenizer Load(const std::string& path);

 private:
  std::vector<char32_t> chars_;                // id -> code point, increasing
  std::unordered_map<char32_t, int32_t> ids_;  // code point -> id
};

}  // namespace zero::data

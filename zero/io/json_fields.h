/// @file
/// Checked reading of the JSON files Zero writes and reads back (vocab.json, meta.json,
/// trainer.json): each field is looked up, type-checked and range-checked, so a damaged
/// or hand-edited file gives `FILE: field "model.n_embd": expected an integer >= 1, got
/// "abc"` rather than a nlohmann-json exception that names neither.
///
/// Internal to the library: only zero's .cpp files include this header, because
/// nlohmann-json is a private dependency of zero (no public header exposes it).
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace zero::io {

/// Parses `text` as JSON; throws zero::Error naming `file` (e.g. "vocabulary file 'x'").
nlohmann::json parse_json(const std::string& text, const std::string& file);

/// The fields of one JSON object of a file, each read with its checks.
class JsonFields {
 public:
  /// `value` must be an object (throws otherwise); `file` names the file in messages and
  /// `prefix` the object's place in it ("model." for the fields of "model").
  JsonFields(const nlohmann::json& value, std::string file, std::string prefix = "");

  /// True when the object has the field `key`.
  bool Has(const std::string& key) const { return object_.contains(key); }
  /// The field as it is; throws if it is missing.
  const nlohmann::json& Get(const std::string& key) const;
  /// The field, which must be a string.
  std::string String(const std::string& key) const;
  /// An integer in [lo, hi]; a fraction, a string or a number out of range is refused.
  int64_t Int(const std::string& key, int64_t lo = std::numeric_limits<int64_t>::min(),
              int64_t hi = std::numeric_limits<int64_t>::max()) const;
  /// A non-negative integer (seeds, stream positions), up to 2^64 - 1.
  uint64_t Uint(const std::string& key) const;
  /// A number that is finite as a float.
  float Float(const std::string& key) const;
  /// The field, which must be an object, as JsonFields of its own.
  JsonFields Object(const std::string& key) const;
  /// The field, which must be an array.
  const nlohmann::json& Array(const std::string& key) const;
  /// Throws unless the string field `key` equals `expected` ("format": "zero-char-vocab").
  void Expect(const std::string& key, const std::string& expected) const;
  /// Throws unless the integer field `key` equals `expected` ("version": 1).
  void Expect(const std::string& key, int64_t expected) const;

 private:
  [[noreturn]] void Fail(const std::string& key, const std::string& expected) const;

  const nlohmann::json& object_;
  std::string file_, prefix_;
};

}  // namespace zero::io

// JsonFields (see json_fields.h): one check per field and type, each failing with the
// file, the field's full name, what was expected and the value that was found.
#include "zero/io/json_fields.h"

#include <cmath>

#include "zero/core/error.h"

namespace zero::io {

namespace {

// A value for a message: a long one (a whole array) is cut short.
std::string shown(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  return text;
}

}  // namespace

nlohmann::json parse_json(const std::string& text, const std::string& file) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(detail::str_cat(file, " is not valid JSON: ", e.what()));
  }
}

JsonFields::JsonFields(const nlohmann::json& value, std::string file, std::string prefix)
    : object_(value), file_(std::move(file)), prefix_(std::move(prefix)) {
  if (value.is_object()) return;
  if (prefix_.empty()) throw Error(detail::str_cat(file_, ": expected a JSON object, got ",
                                                   shown(value)));
  Fail(prefix_.substr(0, prefix_.size() - 1), "an object");  // "model." names "model"
}

void JsonFields::Fail(const std::string& key, const std::string& expected) const {
  const auto it = object_.find(key);
  throw Error(detail::str_cat(file_, ": field \"", prefix_, key, "\": expected ", expected,
                              ", got ", it == object_.end() ? "nothing (it is missing)" : shown(*it)));
}

const nlohmann::json& JsonFields::Get(const std::string& key) const {
  const auto it = object_.find(key);
  if (it == object_.end()) Fail(key, "a value");
  return *it;
}

std::string JsonFields::String(const std::string& key) const {
  if (!Has(key) || !object_[key].is_string()) Fail(key, "a string");
  return object_[key].get<std::string>();
}

int64_t JsonFields::Int(const std::string& key, int64_t lo, int64_t hi) const {
  const std::string range =
      lo == std::numeric_limits<int64_t>::min()
          ? (hi == std::numeric_limits<int64_t>::max() ? "an integer"
                                                       : detail::str_cat("an integer <= ", hi))
          : (hi == std::numeric_limits<int64_t>::max()
                 ? detail::str_cat("an integer >= ", lo)
                 : detail::str_cat("an integer in [", lo, ", ", hi, "]"));
  if (!Has(key) || !object_[key].is_number_integer()) Fail(key, range);
  const nlohmann::json& v = object_[key];
  // nlohmann-json keeps non-negative integers unsigned: above INT64_MAX they do not fit.
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    Fail(key, range);
  }
  const int64_t n = v.get<int64_t>();
  if (n < lo || n > hi) Fail(key, range);
  return n;
}

uint64_t JsonFields::Uint(const std::string& key) const {
  if (!Has(key) || !object_[key].is_number_unsigned()) Fail(key, "a non-negative integer");
  return object_[key].get<uint64_t>();
}

float JsonFields::Float(const std::string& key) const {
  if (!Has(key) || !object_[key].is_number()) Fail(key, "a number");
  const double v = object_[key].get<double>();
  if (!std::isfinite(static_cast<float>(v))) Fail(key, "a finite number");
  return static_cast<float>(v);
}

JsonFields JsonFields::Object(const std::string& key) const {
  if (!Has(key) || !object_[key].is_object()) Fail(key, "an object");
  return JsonFields(object_[key], file_, prefix_ + key + ".");
}

const nlohmann::json& JsonFields::Array(const std::string& key) const {
  if (!Has(key) || !object_[key].is_array()) Fail(key, "an array");
  return object_[key];
}

void JsonFields::Expect(const std::string& key, const std::string& expected) const {
  if (!Has(key) || object_[key] != expected) Fail(key, "\"" + expected + "\"");
}

void JsonFields::Expect(const std::string& key, int64_t expected) const {
  if (!Has(key) || !object_[key].is_number_integer() || object_[key] != expected)
    Fail(key, std::to_string(expected));
}

}  // namespace zero::io

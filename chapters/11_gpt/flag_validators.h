// The checks of single flags that train_gpt and sample_gpt attach with CLI11 (cli_checks.h
// says which flag gets which): each a CLI::Validator, so a value out of range is refused
// by CLI11 with the flag's name ("--lr: expected a finite number in [0, 1], got 1e30").
// Note that CLI11's own CLI::Range lets NaN through (every comparison with NaN is false)
// and that CLI11 reads "-1" into an unsigned option as 2^64 - 1; the validators here
// check the text.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "zero/core/error.h"
#include "zero/data/utf8.h"

namespace ch11 {

// An integer of at least `lo`, written in decimal with nothing around it.
inline CLI::Validator integer_at_least(int64_t lo) {
  return CLI::Validator(
      [lo](std::string& text) -> std::string {
        int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc() && ptr == end && value >= lo) return "";
        return "expected an integer >= " + std::to_string(lo) + ", got " + text;
      },
      lo == 0 ? "NONNEGATIVE" : lo == 1 ? "POSITIVE" : ">= " + std::to_string(lo));
}

// A seed: any 64-bit unsigned integer, but not a negative number wrapped around.
inline CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc() && ptr == end) return "";
        return "expected an integer in [0, 2^64 - 1], got " + text;
      },
      "");
}

// A finite number in [lo, hi], or in [lo, hi) when `hi_open`.
inline CLI::Validator finite_in(double lo, double hi, bool hi_open = false) {
  std::ostringstream range;
  if (std::isinf(hi)) {
    range << ">= " << lo;
  } else {
    range << "in [" << lo << ", " << hi << (hi_open ? ")" : "]");
  }
  const std::string in = range.str();
  return CLI::Validator(
      [lo, hi, hi_open, in](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
        const bool ok = !text.empty() && end == text.c_str() + text.size() && std::isfinite(v) &&
                        v >= lo && (hi_open ? v < hi : v <= hi);
        return ok ? "" : "expected a finite number " + in + ", got " + text;
      },
      std::isinf(hi) && lo == 0 ? "NONNEGATIVE" : in.substr(std::isinf(hi) ? 0 : 3));
}

// A finite number >= lo.
inline CLI::Validator finite_at_least(double lo) { return finite_in(lo, HUGE_VAL); }

// A string that is not empty (a folder, a checkpoint).
inline CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "expected a non-empty path" : "";
      },
      "NONEMPTY");
}

// A prompt: non-empty, valid UTF-8. (Whether its characters are in the vocabulary is
// known only once the data is: check_prompt.)
inline CLI::Validator prompt_text() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.empty()) return "expected at least one character, got an empty prompt";
        try {
          zero::data::decode_utf8(text);
        } catch (const zero::Error& e) {
          return std::string("expected UTF-8 text: ") + e.what();
        }
        return "";
      },
      "UTF-8");
}

// One of a fixed list of words (--dtype).
inline CLI::Validator one_of(std::vector<std::string> words) {
  std::string list;
  for (const std::string& w : words) list += (list.empty() ? "" : ", ") + w;
  return CLI::Validator(
      [words, list](std::string& text) -> std::string {
        for (const std::string& w : words) {
          if (text == w) return "";
        }
        return "expected one of " + list + ", got '" + text + "'";
      },
      "{" + list + "}");
}

// Attaches `validator` to each named option of `app`.
inline void check_options(CLI::App& app, std::initializer_list<const char*> names,
                          const CLI::Validator& validator) {
  for (const char* name : names) app.get_option(name)->check(validator);
}

}  // namespace ch11

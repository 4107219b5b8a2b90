// What train_gpt and sample_gpt share at their edges: the checks of their flags, made
// when the command line is parsed (before any data is prepared or any step is run), the
// last-resort handler that turns any exception into a message and exit status 1, which
// flags a resumed run applies and which it refuses (none is silently ignored), and the
// choice of sampler (your ex11.1 once it is done), the printing of samples and of a
// skipped update. (The flags of the ranks that --nproc starts are those of chapter 10's
// launcher.h.)
//
// Each flag gets a CLI::Validator, so a value out of range is refused by CLI11 with the
// flag's name ("--lr: expected a finite number in [0, 1], got 1e30"). Note that CLI11's
// own CLI::Range lets NaN through (every comparison with NaN is false) and that CLI11
// reads "-1" into an unsigned option as 2^64 - 1; the validators here check the text.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sample_token.h"  // exercise ex11.1: the samples are drawn with your code
#include "zero/core/error.h"
#include "zero/data/char_tokenizer.h"
#include "zero/data/utf8.h"
#include "zero/train/checkpoint.h"
#include "zero/train/sampling.h"
#include "zero/train/trainer.h"

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

// train_gpt's flags (call after adding them, before parsing).
inline void check_train_flags(CLI::App& app) {
  check_options(app, {"--out-dir"}, non_empty());
  check_options(app, {"--data"}, CLI::ExistingFile);
  app.get_option("--corpus")->check(CLI::IsMember({"project", "chinese"}))->excludes("--data");
  check_options(app,
                {"--n-layer", "--n-head", "--n-embd", "--block-size", "--batch-size",
                 "--eval-iters", "--nproc"},
                integer_at_least(1));
  check_options(app,
                {"--warmup", "--max-steps", "--eval-every", "--log-every", "--sample-every",
                 "--samples", "--sample-tokens", "--top-k", "--profile"},
                integer_at_least(0));
  check_options(app, {"--seed"}, unsigned_integer());
  check_options(app, {"--lr", "--min-lr"}, finite_in(0, 1));
  check_options(app, {"--dropout", "--beta2"}, finite_in(0, 1, true));
  check_options(app, {"--weight-decay", "--grad-clip", "--temperature", "--peak-tflops"},
                finite_at_least(0));
  check_options(app, {"--prompt"}, prompt_text());
  check_options(app, {"--dtype"}, one_of({"auto", "fp32", "bf16", "fp16"}));
}

// sample_gpt's flags.
inline void check_sample_flags(CLI::App& app) {
  check_options(app, {"--checkpoint"}, non_empty());
  check_options(app, {"--num-samples"}, integer_at_least(1));
  check_options(app, {"--max-new-tokens", "--top-k"}, integer_at_least(0));
  check_options(app, {"--seed"}, unsigned_integer());
  check_options(app, {"--temperature"}, finite_at_least(0));
  check_options(app, {"--prompt"}, prompt_text());
}

// --device alone, read before the full parse: the device picks the preset whose values
// the full parser then shows as defaults in --help. The other flags pass by (extras),
// and a --device that cannot be read is left for the full parser to refuse.
inline std::string device_flag(int argc, char** argv) {
  CLI::App pre;
  pre.allow_extras();
  pre.set_help_flag();  // --help is the full parser's
  std::string device = "auto";
  pre.add_option("--device", device);
  try {
    pre.parse(argc, argv);
  } catch (const CLI::ParseError&) {
    return "auto";
  }
  return device;
}

// The prompt must be made of characters of the vocabulary; train_gpt checks it before
// training, not after the whole run when the samples are drawn.
inline void check_prompt(const zero::data::CharTokenizer& tok, const std::string& prompt) {
  try {
    tok.Encode(prompt);
  } catch (const zero::Error& e) {
    throw zero::Error(std::string("--prompt: expected characters of the training text: ") +
                      e.what());
  }
}

// Runs `run`; a zero::Error (a refused flag, file or setting) prints its message and
// returns 1. Anything else is a case that should have been checked with a clear
// message; printing what() and returning 1 still beats std::terminate's abort.
template <typename Run>
int guarded_main(const char* program, Run&& run) {
  try {
    return run();
  } catch (const zero::Error& e) {
    std::cerr << program << ": " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << program << ": unexpected error: " << e.what() << "\n";
  }
  return 1;
}

// The flags that fix a model's shape: a checkpoint's weights decide them.
inline const char* const kShapeFlags[] = {"--n-layer", "--n-head", "--n-embd", "--block-size"};

// --init-from takes its shape from the weights: a shape flag beside it is refused.
inline void check_init_from_flags(const CLI::App& app) {
  for (const char* flag : kShapeFlags) {
    ZERO_CHECK(app.count(flag) == 0, "--init-from takes the model's shape from its weights; drop ",
               flag);
  }
}

// The config of a resumed run: the checkpoint's, with every optimisation flag given on
// the command line applied. Flags that cannot apply to a continued run are refused.
inline zero::train::TrainConfig resumed_config(const CLI::App& app,
                                               const zero::train::TrainConfig& given,
                                               const zero::train::TrainerState& saved,
                                               const std::string& ckpt) {
  for (const char* flag : kShapeFlags) {
    ZERO_CHECK(app.count(flag) == 0, "--resume continues the model saved in ", ckpt,
               ", whose shape is fixed; drop ", flag);
  }
  for (const char* flag : {"--data", "--init-from"}) {
    ZERO_CHECK(app.count(flag) == 0, "--resume continues with the data of the run saved in ",
               ckpt, "; drop ", flag);
  }
  ZERO_CHECK(app.count("--seed") == 0, "--resume continues the random streams saved in ", ckpt,
             " (seed ", saved.config.seed, "); drop --seed");
  zero::train::TrainConfig cfg = saved.config;
  auto take = [&](const char* flag, auto& field, const auto& value) {
    if (app.count(flag)) field = value;
  };
  take("--max-steps", cfg.max_steps, given.max_steps);
  take("--lr", cfg.lr, given.lr);
  take("--min-lr", cfg.min_lr, given.min_lr);
  take("--warmup", cfg.warmup, given.warmup);
  take("--dropout", cfg.model.dropout, given.model.dropout);
  take("--batch-size", cfg.batch_size, given.batch_size);
  take("--weight-decay", cfg.weight_decay, given.weight_decay);
  take("--beta2", cfg.beta2, given.beta2);
  take("--grad-clip", cfg.grad_clip, given.grad_clip);
  take("--dtype", cfg.dtype, given.dtype);  // the weights are FP32 whatever the run's dtype
  return cfg;
}

// What a skipped update prints: the norm, and in F16 the scale it halved to.
inline std::string skipped_line(int64_t step, const zero::train::StepResult& r,
                                const zero::train::Trainer& trainer) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "step %lld: gradient norm %g, update skipped",
                static_cast<long long>(step), r.grad_norm);
  std::string line = buf;
  if (trainer.loss_scaler().enabled()) {
    std::snprintf(buf, sizeof buf, " (loss scale %g -> %g)", r.loss_scale,
                  trainer.loss_scaler().scale());
    line += buf;
  }
  return line;
}

// Your ex11.1 sampler if it is done; the library's otherwise (said once, plainly).
inline zero::train::TokenSampler pick_sampler() {
  try {
    const float logits[2] = {0.0f, 1.0f};
    zero::ex11::sample_token(logits, 2, 1.0f, 0, 0.5f);
    return zero::ex11::sample_token;
  } catch (const zero::NotImplementedError&) {
    std::cout << "note: exercise ex11.1 (sample_token.h) is not done yet; sampling with "
                 "zero::train::sample_token instead\n";
    return zero::train::sample_token;
  }
}

// Generates `count` continuations of `prompt` as one batch, prints them, and returns the
// seconds generation took.
inline double print_samples(zero::nn::GPT& model, const zero::data::CharTokenizer& tok,
                            const std::string& prompt, int64_t tokens, int64_t count,
                            float temperature, int64_t top_k, zero::Generator& gen,
                            const zero::train::TokenSampler& sampler) {
  const auto start = std::chrono::steady_clock::now();
  const auto seqs = zero::train::generate(model, tok.Encode(prompt), tokens, temperature, top_k,
                                          count, gen, sampler);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t i = 0; i < seqs.size(); ++i) {
    std::cout << "---------------- sample " << i + 1 << " ----------------\n"
              << tok.Decode(seqs[i]) << "\n";
  }
  return s;
}

}  // namespace ch11

// What train_gpt and sample_gpt share at their edges: the checks of their flags, made
// when the command line is parsed (before any data is prepared or any step is run), the
// last-resort handler that turns any exception into a message and exit status 1, which
// flags a resumed run applies and which it refuses (none is silently ignored), and the
// choice of sampler (your ex11.1 once it is done), the printing of samples and of a
// skipped update. (The flags of the ranks that --nproc starts are those of chapter 10's
// launcher.h.) Each flag's own range is checked by a validator of flag_validators.h.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "flag_validators.h"
#include "sample_token.h"  // exercise ex11.1: the samples are drawn with your code
#include "zero/core/error.h"
#include "zero/data/char_tokenizer.h"
#include "zero/train/checkpoint.h"
#include "zero/train/sampling.h"
#include "zero/train/trainer.h"

namespace ch11 {

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

// What no single flag's range can say, checked before any data is prepared: the heads
// split the width evenly, the learning rate decays from --lr down to --min-lr, and a
// flag that --quick sets itself (a tiny model for 20 steps) is not also given, where it
// would be overridden without a word. (A resumed run's config is checked again.)
inline void check_config(const CLI::App& app, const zero::train::TrainConfig& cfg, bool quick) {
  ZERO_CHECK(cfg.model.n_embd % cfg.model.n_head == 0, "--n-head ", cfg.model.n_head,
             " must divide --n-embd ", cfg.model.n_embd, " (each head takes n-embd / n-head)");
  ZERO_CHECK(cfg.min_lr <= cfg.lr, "--min-lr ", cfg.min_lr, " is above --lr ", cfg.lr,
             ": the learning rate decays from --lr down to --min-lr");
  for (const char* flag : {"--n-layer", "--n-head", "--n-embd", "--block-size", "--dropout",
                           "--batch-size", "--max-steps", "--warmup", "--eval-every",
                           "--eval-iters", "--log-every", "--samples", "--sample-tokens"}) {
    ZERO_CHECK(!quick || app.count(flag) == 0, "--quick sets ", flag,
               " itself (a tiny model for 20 steps); drop one of the two");
  }
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
  check_config(app, cfg, false);
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

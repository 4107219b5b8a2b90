// Chapter 11: sample text from a checkpoint that train_gpt wrote.
//
// Loads model.safetensors and vocab.json from a checkpoint folder, then decodes
// --num-samples continuations of --prompt as one batch through the KV cache
// (zero::train::generate) and reports the decoding speed. The more sequences in the
// batch, the more tokens each read of the weights serves: try --num-samples 1, 8 and
// 64 on a GPU and compare tokens/s (the chapter README explains the arithmetic).
// Read next: zero/train/sampling.h.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "zero/data/char_tokenizer.h"
#include "zero/kernels/cpu_threads.h"
#include "zero/train/checkpoint.h"
#include "zero/train/config.h"
#include "zero/train/metrics.h"
#include "zero/train/sampling.h"


#include "cli_checks.h"  // flag checks, and exceptions to messages in main

namespace fs = std::filesystem;
using namespace zero;

namespace {

int run(int argc, char** argv) {
  std::string checkpoint = "out/gpt/best", prompt = "\n", device_name = "auto";
  float temperature = 0.8f;
  int64_t top_k = 200, num_samples = 4, max_new_tokens = 500;
  uint64_t seed = 1337;
  bool library_sampler = false;
  CLI::App app{"Sample from a GPT checkpoint written by train_gpt (chapter 11)."};
  app.option_defaults()->always_capture_default();
  app.add_option("--checkpoint", checkpoint,
                 "checkpoint folder (train_gpt's OUT_DIR/best or /checkpoint)");
  app.add_option("--prompt", prompt, "text to continue");
  app.add_option("--temperature", temperature,
                 "divides the logits: < 1 sharper, > 1 flatter, 0 greedy");
  app.add_option("--top-k", top_k, "sample among the k most likely tokens (0: all)");
  app.add_option("--num-samples", num_samples, "sequences, decoded together as one batch");
  app.add_option("--max-new-tokens", max_new_tokens, "tokens generated per sequence");
  app.add_option("--device", device_name, "auto, cpu, cuda or cuda:N");
  app.add_option("--seed", seed, "seed of the sampling stream");
  app.add_flag("--library-sampler", library_sampler,
               "sample with zero::train::sample_token instead of your ex11.1 sample_token");
  ch11::check_sample_flags(app);  // ranges, finite numbers, a non-empty prompt (cli_checks.h)
  CLI11_PARSE(app, argc, argv);
  const Device device = train::resolve_device(device_name);

  train::TrainerState state = train::read_trainer_state(checkpoint);
  nn::GPT model(state.config.model, state.config.seed);
  train::load_checkpoint(checkpoint, model, nullptr, state);
  model.To(device);
  const data::CharTokenizer tok =
      data::CharTokenizer::Load((fs::path(checkpoint) / "vocab.json").string());
  ch11::check_prompt(tok, prompt);
  std::printf("loaded %s: step %lld, best val loss %.4f, %.2fM parameters, on %s\n",
              checkpoint.c_str(), static_cast<long long>(state.step), state.best_val_loss,
              model.NumParameters() / 1e6, device.ToString().c_str());

  const train::TokenSampler sampler = library_sampler ? train::sample_token : ch11::pick_sampler();
  Generator gen(seed);
  const double s = ch11::print_samples(model, tok, prompt, max_new_tokens, num_samples,
                                       temperature, top_k, gen, sampler);
  const double tokens = static_cast<double>(num_samples * max_new_tokens);
  std::printf("---------------- %lld sequences x %lld tokens in %.2f s: %s tok/s (batch of %lld)\n",
              static_cast<long long>(num_samples), static_cast<long long>(max_new_tokens), s,
              train::format_rate(tokens / s).c_str(), static_cast<long long>(num_samples));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  zero::use_passive_openmp_wait(argv);  // first: it may start the program again
  return ch11::guarded_main("sample_gpt", [&] { return run(argc, argv); });
}

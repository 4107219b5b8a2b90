// Chapter 11: train a character-level GPT and sample from it.
//
// Everything the earlier chapters built meets here: kernels, the allocator, autograd,
// zero/nn, optim, data, io and train. This file is only the command line around
// zero::train::Trainer: pick the device and the preset, prepare the data, run steps,
// evaluate, save, draw the loss curve, print samples.
// With no flags it trains on the project's own text; --nproc N trains on N GPUs, one
// process each (chapter 10's launcher, chapters/10_multi_gpu/launcher.h).
// Read next: zero/train/trainer.h, zero/nn/gpt.h, the README.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "zero/core/tensor_context.h"
#include "zero/data/char_tokenizer.h"
#include "zero/data/corpus.h"
#include "zero/data/token_file.h"
#include "zero/io/atomic_file.h"
#include "zero/io/dir_lock.h"
#include "zero/kernels/cpu_threads.h"
#include "zero/train/budget.h"
#include "zero/train/distributed.h"  // the Trainer, and the ranks of --nproc
#include "zero/train/flops.h"
#include "zero/train/loss_curve.h"
#include "zero/train/metrics.h"
#include "zero/train/sampling.h"

#include "chapters/10_multi_gpu/launcher.h"  // --nproc: one process per GPU (chapter 10)
#include "cli_checks.h"  // flag checks, and exceptions to messages in main

namespace fs = std::filesystem;
using namespace zero;

namespace {

// Ctrl-C sets a flag; the loop finishes its step, saves and exits. A second Ctrl-C
// (the handler re-arms the default) kills the program at once.
volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) {
  g_interrupted = 1;
  std::signal(SIGINT, SIG_DFL);
}

struct RunOptions {
  std::string device = "auto", dtype = "auto", data, corpus = "project", out_dir = "out/gpt";
  std::string init_from, prompt = "\n";
  bool resume = false, quick = false;
  int64_t eval_every = 0, eval_iters = 0, sample_every = 0, log_every = 0, nproc = 1;
  int64_t samples = 0, sample_tokens = 0, top_k = 200, profile = 0;
  float temperature = 0.8f;
  double peak_tflops = 0;
};

void print_samples(nn::GPT& model, const data::CharTokenizer& tok, const RunOptions& o,
                   int64_t count, Generator& gen, const train::TokenSampler& sampler) {
  if (count <= 0 || o.sample_tokens <= 0) return;
  const double s = ch11::print_samples(model, tok, o.prompt, o.sample_tokens, count,
                                       o.temperature, o.top_k, gen, sampler);
  std::printf("---------------- (%lld x %lld tokens in %.2f s, %s tok/s)\n",
              static_cast<long long>(count), static_cast<long long>(o.sample_tokens), s,
              train::format_rate(static_cast<double>(count * o.sample_tokens) / s).c_str());
}

}  // namespace

int run(int argc, char** argv) {
  train::DistributedOptions dist;  // set in the processes that --nproc starts
  Device device = train::resolve_device(ch11::device_flag(argc, argv));
  // Presets: the reference model on a GPU (2000 steps: the built-in corpus is small
  // enough that 5000 overfits), a small one on the CPU.
  train::TrainConfig cfg =
      device.is_cuda() ? train::TrainConfig::Reference() : train::TrainConfig::SmallCpu();
  RunOptions o;
  if (device.is_cuda()) {
    cfg.max_steps = 2000;
    o.eval_every = 250, o.eval_iters = 100, o.sample_every = 1000, o.log_every = 50;
    o.samples = 4, o.sample_tokens = 400, o.peak_tflops = -1;  // -1: the dtype's H200 peak
  } else {
    o.eval_every = 200, o.eval_iters = 20, o.sample_every = 0, o.log_every = 50;
    o.samples = 3, o.sample_tokens = 300;
  }

  CLI::App app{"Train a character-level GPT (chapter 11). With no --data it trains on the "
               "project's own text and sources; Ctrl-C saves a checkpoint and stops."};
  app.option_defaults()->always_capture_default();
  app.add_option("--device", o.device,
                 "auto, cpu, cuda or cuda:N (the defaults shown depend on it)");
  app.add_option("--dtype", o.dtype, "what the model computes in (auto: bf16 on sm_80+, or fp32)");
  app.add_option("--data", o.data, "a UTF-8 text file to train on (default: --corpus)");
  app.add_option("--corpus", o.corpus, "without --data: project (the project's text and "
                 "sources) or chinese (the book's Chinese pages), built in");
  app.add_option("--out-dir", o.out_dir, "where data, checkpoints, metrics and the curve go");
  app.add_flag("--resume", o.resume, "continue the run saved in OUT_DIR/checkpoint");
  app.add_option("--init-from", o.init_from, "start from the weights of this checkpoint folder");
  app.add_flag("--quick", o.quick,
               "a tiny model for 20 steps (replaces the model and run-length flags)");
  app.add_option("--n-layer", cfg.model.n_layer, "transformer blocks");
  app.add_option("--n-head", cfg.model.n_head, "attention heads (must divide n-embd)");
  app.add_option("--n-embd", cfg.model.n_embd, "width of the residual stream, C");
  app.add_option("--block-size", cfg.model.block_size, "context length, T");
  app.add_option("--dropout", cfg.model.dropout, "dropout probability");
  app.add_option("--batch-size", cfg.batch_size, "sequences per step, B");
  app.add_option("--lr", cfg.lr, "peak learning rate");
  app.add_option("--min-lr", cfg.min_lr, "final learning rate of the cosine decay");
  app.add_option("--warmup", cfg.warmup, "steps of linear warmup");
  app.add_option("--max-steps", cfg.max_steps, "optimizer steps (0: only evaluate and sample)");
  app.add_option("--weight-decay", cfg.weight_decay, "AdamW weight decay");
  app.add_option("--beta2", cfg.beta2, "AdamW beta2");
  app.add_option("--grad-clip", cfg.grad_clip, "global gradient-norm bound (0: off)");
  app.add_option("--seed", cfg.seed, "seeds the weights, dropout and batches");
  app.add_option("--eval-every", o.eval_every, "evaluate, save and redraw the curve every N steps");
  app.add_option("--eval-iters", o.eval_iters, "validation batches per evaluation");
  app.add_option("--log-every", o.log_every, "print and record a step every N steps");
  app.add_option("--sample-every", o.sample_every, "print one sample every N steps (0: off)");
  app.add_option("--samples", o.samples, "samples printed at the end (decoded as one batch)");
  app.add_option("--sample-tokens", o.sample_tokens, "tokens per sample");
  app.add_option("--temperature", o.temperature, "sampling temperature");
  app.add_option("--top-k", o.top_k, "sample among the k most likely tokens (0: all)");
  app.add_option("--prompt", o.prompt, "text the samples continue");
  app.add_option("--peak-tflops", o.peak_tflops, "MFU's peak TFLOP/s (0: off; GPU: the H200's)");
  app.add_option("--profile", o.profile, "after 10 steps, time N steps op by op and print where");
  app.add_option("--nproc", o.nproc, "GPUs to train on, one process each (rank 0 logs, saves)");
  app.add_option("--cuda-graph", cfg.cuda_graph, "on a GPU, replay each step as one CUDA graph");
  ch11::check_train_flags(app);  // ranges, finite numbers, existing files (cli_checks.h)
  ch10::add_rank_flags(app, dist);
  CLI11_PARSE(app, argc, argv);
  if (dist.is_rank()) device = Device::Cuda(dist.rank);  // rank r trains on GPU r
  cfg.dtype = train::resolve_dtype(o.dtype, device);  // FP32 master weights in every dtype
  if (o.nproc > 1 && !dist.is_rank()) {
    ZERO_CHECK(o.device == "auto" || device.is_cuda(), "--nproc ", o.nproc,
               " trains on GPUs, one process each; drop --device ", o.device);
    return ch10::launch_ranks(argc, argv, o.nproc, o.out_dir);
  }
  if (o.quick) {  // the chapter test: seconds, whatever the device
    cfg.model = nn::GPTConfig{0, 32, 2, 2, 32, 0.1f};
    cfg.batch_size = 8, cfg.max_steps = 20, cfg.warmup = 5;
    o.eval_every = 10, o.eval_iters = 2, o.log_every = 5, o.samples = 2, o.sample_tokens = 40;
  }
  ch11::check_config(app, cfg, o.quick);  // flags that disagree: now, before any work

  const fs::path out(o.out_dir), ckpt = out / "checkpoint", best = out / "best";
  std::optional<io::DirLock> lock;  // one run per out-dir at a time; rank 0 holds it for all
  if (dist.rank <= 0) {  // then repair what a run killed in the middle of a save left
    lock.emplace(out.string(), "train_gpt");
    io::recover_directory(best.string());
    io::StagedDirectory::Discard((out / "data").string());
  }
  if (dist.rank > 0) fs::create_directories(out);
  std::string data_dir;              // recorded in checkpoints
  std::optional<io::StagedDirectory> staged;  // a new run's data, moved in once all checks pass
  if (o.resume) {
    const train::TrainerState saved = train::read_trainer_state(ckpt.string());
    cfg = ch11::resumed_config(app, cfg, saved, ckpt.string());
    data_dir = train::resume_data_dir(saved, out.string(), ckpt.string());
    std::cout << "resuming " << ckpt.string() << " at step " << saved.step << "\n";
  } else {
    const std::string text =
        o.data.empty() ? data::builtin_corpus(o.corpus) : data::read_text_file(o.data);
    std::cout << "data: " << (!o.data.empty() ? o.data : o.corpus == "chinese"
        ? "the built-in Chinese corpus (the book's Chinese pages)"
        : "the built-in corpus (project text and sources)") << ", " << text.size() << " bytes\n";
    const fs::path shown = out / (dist.rank > 0 ? "data-rank" + std::to_string(dist.rank) : "data");
    staged.emplace(fs::absolute(shown).string());
    data_dir = staged->final_dir();
    const data::DatasetInfo info = data::prepare_char_dataset(text, staged->staging());
    std::printf("prepared %s: vocab %lld, train %lld tokens, val %lld tokens\n", shown.c_str(),
                static_cast<long long>(info.vocab_size), static_cast<long long>(info.train_tokens),
                static_cast<long long>(info.val_tokens));
    cfg.model.vocab_size = info.vocab_size;
    if (!o.init_from.empty()) {
      ch11::check_init_from_flags(app);
      const train::TrainerState init = train::read_trainer_state(o.init_from);
      ZERO_CHECK(
          data::CharTokenizer::Load((fs::path(o.init_from) / "vocab.json").string()).chars() ==
              data::CharTokenizer::Load(staged->staging() + "/vocab.json").chars(),
          "--init-from ", o.init_from, ": its vocabulary differs from the data's");
      const float dropout = cfg.model.dropout;
      cfg.model = init.config.model;  // the weights decide the shape
      cfg.model.dropout = dropout;
    }
  }
  train::check_fits(train::sampling_bytes_lower_bound(cfg.model, o.samples, o.sample_tokens),
                    device, detail::str_cat("--samples ", o.samples, " of --sample-tokens ",
                                            o.sample_tokens));  // now, not after training
  const std::string read_dir = staged ? staged->staging() : data_dir;
  const data::CharTokenizer tok = data::CharTokenizer::Load(read_dir + "/vocab.json");
  const int64_t vocab = tok.vocab_size();
  if (o.sample_tokens > 0 && (o.samples > 0 || o.sample_every > 0))
    ch11::check_prompt(tok, o.prompt);  // now, not when the samples are drawn
  train::Trainer trainer(cfg,
                         {data::load_tokens(read_dir + "/train.bin", vocab),
                          data::load_tokens(read_dir + "/val.bin", vocab), data_dir,
                          data_dir + "/vocab.json"},
                         device);
  if (o.resume) trainer.Resume(ckpt.string());
  if (!o.init_from.empty()) trainer.LoadWeights(o.init_from);
  if (staged) staged->Commit();  // every check has passed: only now is the out-dir changed
  if (dist.is_rank() && train::join_group(trainer, dist) > 0) return train::run_worker(trainer);

  const nn::GPTConfig& m = cfg.model;
  const char* dtype = train::dtype_flag_name(cfg.dtype);  // fp32, bf16 or fp16
  const int64_t batch = cfg.batch_size * dist.world, tokens_per_step = batch * m.block_size;
  const double flops_per_token = train::gpt_train_flops_per_token(m, m.block_size) / dist.world;
  const double peak = o.peak_tflops < 0 ? train::h200_peak_flops(cfg.dtype) : o.peak_tflops * 1e12;
  std::printf(
      "model: %lld layers, %lld heads, %lld wide, block %lld, vocab %lld: %.2fM parameters\n"
      "train: batch %lld x %lld = %lld tokens/step, %lld steps, lr %.1e -> %.1e, warmup %lld, "
      "dropout %.2f, on %s in %s\n",
      (long long)m.n_layer, (long long)m.n_head, (long long)m.n_embd, (long long)m.block_size,
      (long long)m.vocab_size, trainer.model().NumParameters() / 1e6, (long long)batch,
      (long long)m.block_size, (long long)tokens_per_step, (long long)cfg.max_steps, cfg.lr,
      cfg.min_lr, (long long)cfg.warmup, m.dropout, device.ToString().c_str(), dtype);
  const train::TokenSampler sampler = ch11::pick_sampler();
  Generator sample_gen(cfg.seed + 2);
  const std::string metrics_path = (out / "metrics.jsonl").string();
  const std::string curve_path = (out / "loss_curve.png").string();
  train::MetricsLog log(metrics_path, o.resume ? trainer.step() : -1);
  if (log.skipped_lines() > 0)
    std::cout << metrics_path << ": dropped " << log.skipped_lines() << " unreadable line(s)\n";
  trainer.set_metrics_path(metrics_path);
  TensorContext& memory = DefaultTensorContext::Get(device);
  const std::string title =
      detail::str_cat("GPT ", m.n_layer, "x", m.n_embd, " (", device.ToString(), ", ", dtype, ")");
  auto redraw = [&] {
    std::vector<train::LossPoint> tr, va;
    train::loss_points(log.records(), &tr, &va);
    try {  // a picture is not worth stopping a run for (a full disk, a read-only file)
      train::write_loss_curve_png(curve_path, tr, va, title);
    } catch (const Error& e) {
      std::cerr << "warning: loss curve not drawn: " << e.what() << "\n";
    }
  };
  std::signal(SIGINT, on_sigint);
  double ms_sum = 0, ms_count = 0;  // time and number of the steps since the last log line
  while (true) {
    const int64_t step = trainer.step();
    const bool last = step >= cfg.max_steps;
    std::optional<float> val;
    if ((o.eval_every > 0 && step % o.eval_every == 0) || last) {
      val = trainer.Evaluate(o.eval_iters);
      const bool improved = trainer.RecordValLoss(*val);
      std::printf("step %lld | val loss %.4f%s\n", (long long)step, *val,
                  improved ? " (best)" : "");
      if (improved && step > 0) trainer.Save(best.string());
      if (step > 0) trainer.Save(ckpt.string());
    }
    if (o.sample_every > 0 && step > 0 && step % o.sample_every == 0 && !last) {
      print_samples(trainer.model(), tok, o, 1, sample_gen, sampler);
    }
    const double peak_gib = memory.Stats().peak_bytes / 1073741824.0;
    if (last && val) log.Write({step, NAN, val, 0, 0, 0, std::nullopt, peak_gib, {}, {}, {}});
    if (last) break;
    if (o.profile > 0 && step == 10) {  // warmed up: where a step's time goes, op by op
      std::cout << trainer.ProfileSteps(std::min(o.profile, cfg.max_steps - step)).Table();
      continue;
    }
    const train::StepResult r = trainer.Step();
    if (r.skipped) std::cout << ch11::skipped_line(step, r, trainer) << std::endl;
    ms_sum += r.ms, ++ms_count;
    if (val || (o.log_every > 0 && step % o.log_every == 0) || g_interrupted) {
      train::StepMetrics rec;
      rec.step = step, rec.loss = r.loss, rec.val_loss = val, rec.lr = r.lr;
      rec.ms = ms_sum / ms_count, rec.tokens_per_s = tokens_per_step / (rec.ms / 1e3);
      rec.mem_gib = peak_gib, rec.skipped = trainer.skipped_steps(), rec.dtype = dtype;
      if (trainer.loss_scaler().enabled()) rec.loss_scale = trainer.loss_scaler().scale();
      if (peak > 0) {
        rec.mfu = train::model_flops_utilization(flops_per_token, rec.tokens_per_s, peak);
      }
      log.Write(rec);
      std::cout << train::format_log_line(rec, cfg.max_steps) << std::endl;
      ms_sum = 0, ms_count = 0;
    }
    if (val) redraw();
    if (g_interrupted) {
      trainer.Save(ckpt.string());
      redraw();
      std::cout << "\ninterrupted after step " << trainer.step() << ": checkpoint saved to "
                << ckpt.string() << " (continue with --resume --out-dir " << o.out_dir << ")\n";
      return 0;
    }
  }
  if (cfg.max_steps > 0) trainer.Save(ckpt.string());
  redraw();
  std::printf("best val loss %.4f (%s); checkpoints in %s and %s, metrics in %s, curve in %s\n",
              trainer.best_val_loss(), dtype, ckpt.c_str(), best.c_str(), metrics_path.c_str(),
              curve_path.c_str());
  std::signal(SIGINT, SIG_DFL);  // everything is saved: Ctrl-C now simply ends the samples
  print_samples(trainer.model(), tok, o, o.samples, sample_gen, sampler);
  return 0;
}

int main(int argc, char** argv) {
  zero::use_passive_openmp_wait(argv);  // first: it may start the program again
  return ch11::guarded_main("train_gpt", [&] { return run(argc, argv); });
}

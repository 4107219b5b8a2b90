// Tests of the chapter 11 programs as a user runs them (train_gpt and sample_gpt, built
// from chapters/11_gpt/): flags and files that must be refused exit with status 1 and a
// message naming the flag or the file, before any training, never with an abort
// ("terminate called") or a crash. A tiny CPU model keeps every run to a second or two.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/data/test_files.h"
#include "tests/train/step_metadata.h"
#include "zero/core/device.h"
#include "zero/io/safetensors.h"
#include "zero/train/checkpoint.h"

namespace zero::train {
namespace {

using testing::read_bytes;
using testing::set_step_metadata;
using testing::TempDir;
using testing::write_bytes;

struct Outcome {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// Runs `program args` through the shell, its output captured in a file of `dir`.
Outcome run_program(const std::string& program, const std::string& args, const TempDir& dir) {
  const std::string log = dir / "run.log";
  const int status = std::system((program + " " + args + " > '" + log + "' 2>&1").c_str());
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return {code, read_bytes(log)};
}

// The program must have failed cleanly: a non-zero status that is not a signal (1 for a
// zero::Error, CLI11's own codes for a flag it refuses; an abort is 134), and every part
// in its output.
void expect_refused(const Outcome& r, const std::vector<std::string>& parts) {
  EXPECT_TRUE(r.exit_code > 0 && r.exit_code < 128) << "status " << r.exit_code << ":\n"
                                                   << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
  for (const std::string& p : parts) {
    EXPECT_NE(r.output.find(p), std::string::npos) << "output lacks \"" << p << "\":\n"
                                                   << r.output;
  }
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

using Flags = std::map<std::string, std::string>;

#ifdef ZERO_TRAIN_GPT
// The tiny CPU run; a test replaces or adds flags.
Flags tiny_flags() {
  return {{"--device", "cpu"},    {"--n-layer", "1"},     {"--n-head", "2"},
          {"--n-embd", "16"},     {"--block-size", "16"}, {"--batch-size", "4"},
          {"--eval-iters", "2"},  {"--samples", "0"},     {"--max-steps", "5"},
          {"--eval-every", "5"}};
}

const char* const kSwitch = "(no value)";  // the value of a flag that takes none: --resume

std::string args_of(const Flags& flags) {
  std::string out;
  for (const auto& [flag, value] : flags) {
    out += " " + flag + (value == kSwitch ? "" : " " + quoted(value));
  }
  return out;
}

// A small corpus (a few KB, lines ending in newlines) in `dir`; returns its path.
std::string write_corpus(const TempDir& dir) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "the quick brown fox jumps over the lazy dog\n";
  write_bytes(dir / "corpus.txt", text);
  return dir / "corpus.txt";
}

// train_gpt with the tiny flags on the small corpus, writing under `dir`, with `changes`.
Outcome train(const TempDir& dir, const Flags& changes = {}) {
  Flags flags = tiny_flags();
  flags["--data"] = write_corpus(dir);
  flags["--out-dir"] = dir / "out";
  for (const auto& [flag, value] : changes) flags[flag] = value;
  return run_program(ZERO_TRAIN_GPT, args_of(flags), dir);
}

TEST(GptCliTest, TinyRunSucceeds) {
  TempDir dir;
  const Outcome r = train(dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(GptCliTest, SizesThatOverflowAreRefused) {
  TempDir dir;
  // 4 * n_embd wrapped to 0 (an MLP of no width); batch x block wrapped in the sampler.
  expect_refused(train(dir, {{"--n-embd", "4611686018427387904"}, {"--n-head", "1"}}),
                 {"n_embd = 4611686018427387904"});
  expect_refused(train(dir, {{"--batch-size", "4611686018427387904"}}),
                 {"4611686018427387904 x 16"});
}

TEST(GptCliTest, PathsThatCannotBeUsedAreRefused) {
  TempDir dir;
  const std::string plain = dir / "plain";
  write_bytes(plain, "a file, not a folder\n");
  // Each threw std::filesystem_error (or std::ios_base::failure) out of main: an abort.
  expect_refused(train(dir, {{"--out-dir", plain}}), {plain});
  expect_refused(train(dir, {{"--out-dir", plain + "/sub"}}), {plain + "/sub"});
  expect_refused(train(dir, {{"--out-dir", ""}}), {"--out-dir", "non-empty"});
  expect_refused(train(dir, {{"--out-dir", "/sys/zero_cli_test"}}), {"/sys/zero_cli_test"});
  expect_refused(train(dir, {{"--data", dir.str()}}), {"--data", dir.str()});
  expect_refused(train(dir, {{"--data", dir / "missing.txt"}}), {"--data", dir / "missing.txt"});
}

// --corpus names a built-in corpus: chinese trains on the book's Chinese pages (a
// vocabulary of over a thousand characters); it excludes --data, and other names are refused.
TEST(GptCliTest, TheChineseCorpusTrainsAndBadCorporaAreRefused) {
  TempDir dir;
  Flags chinese = tiny_flags();
  chinese["--corpus"] = "chinese";
  chinese["--out-dir"] = dir / "out";
  chinese["--max-steps"] = "1";
  chinese["--eval-every"] = "1";
  const Outcome r = run_program(ZERO_TRAIN_GPT, args_of(chinese), dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the built-in Chinese corpus"), std::string::npos) << r.output;
  const size_t at = r.output.find("vocab ");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_GT(std::stoi(r.output.substr(at + 6)), 1000) << r.output;
  expect_refused(train(dir, {{"--corpus", "chinese"}}), {"--data excludes --corpus"});
  chinese["--corpus"] = "klingon";
  expect_refused(run_program(ZERO_TRAIN_GPT, args_of(chinese), dir), {"--corpus", "klingon"});
}

TEST(GptCliTest, DamagedCheckpointFilesAreRefusedNamingTheField) {
  TempDir dir;
  ASSERT_EQ(train(dir).exit_code, 0);
  const std::string ckpt = dir / "out/checkpoint";
  const Flags resume = {{"--device", "cpu"},   {"--out-dir", dir / "out"}, {"--resume", kSwitch},
                        {"--max-steps", "6"}, {"--eval-iters", "2"},      {"--samples", "0"}};
  for (const std::string bad : {"abc", "7xyz", "12345678901234567890123"}) {
    set_step_metadata(ckpt + "/optimizer.safetensors", bad);
    expect_refused(run_program(ZERO_TRAIN_GPT, args_of(resume), dir),
                   {ckpt + "/optimizer.safetensors", "\"step\"", "\"" + bad + "\""});
  }
  set_step_metadata(ckpt + "/optimizer.safetensors", "5");
  const Outcome resumed = run_program(ZERO_TRAIN_GPT, args_of(resume), dir);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
#ifdef ZERO_SAMPLE_GPT
  const std::string sample = " --device cpu --num-samples 1 --max-new-tokens 5 --checkpoint ";
  const Outcome sampled = run_program(ZERO_SAMPLE_GPT, sample + quoted(ckpt), dir);
  EXPECT_EQ(sampled.exit_code, 0) << sampled.output;
  // nlohmann's type_error from CharTokenizer::Load aborted sample_gpt.
  write_bytes(ckpt + "/vocab.json", R"({"format": [1], "version": 1, "chars": ["a"]})");
  expect_refused(run_program(ZERO_SAMPLE_GPT, sample + quoted(ckpt), dir),
                 {ckpt + "/vocab.json", "field \"format\"", "[1]"});
#endif
}

TEST(GptCliTest, FlagsOutOfRangeAreRefusedBeforeAnyWork) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--seed", "-1"},           {"--nproc", "0"},         {"--nproc", "-1"},
      {"--lr", "inf"},            {"--lr", "nan"},          {"--lr", "1e30"},
      {"--temperature", "-1"},    {"--temperature", "nan"}, {"--min-lr", "-0.5"},
      {"--dropout", "1"},         {"--beta2", "nan"},       {"--batch-size", "0"},
      {"--max-steps", "-3"},      {"--top-k", "-1"},        {"--grad-clip", "inf"}};
  for (const auto& [flag, value] : bad) {
    const Outcome r = train(dir, {{flag, value}});
    expect_refused(r, {flag, value});
    EXPECT_EQ(r.output.find("prepared"), std::string::npos) << flag << " " << value;
  }
  expect_refused(train(dir, {{"--prompt", ""}}), {"--prompt", "empty prompt"});
  expect_refused(train(dir, {{"--prompt", "ab\xff"}}), {"--prompt", "UTF-8"});
  // The corpus is 4400 characters: a block of 1000 leaves too few validation tokens.
  expect_refused(train(dir, {{"--block-size", "1000"}}), {"(1000)", "--block-size"});
}

TEST(GptCliTest, FlagsThatDisagreeAreRefusedBeforeAnyWork) {
  TempDir dir;
  const std::vector<std::pair<Flags, std::vector<std::string>>> bad = {
      {{{"--n-embd", "18"}, {"--n-head", "4"}}, {"--n-head 4 must divide --n-embd 18"}},
      {{{"--min-lr", "0.5"}, {"--lr", "0.1"}}, {"--min-lr 0.5 is above --lr 0.1"}},
      {{{"--quick", kSwitch}}, {"--quick sets --n-layer itself", "drop one of the two"}}};
  for (const auto& [flags, parts] : bad) {
    const Outcome r = train(dir, flags);
    expect_refused(r, parts);
    EXPECT_EQ(r.output.find("prepared"), std::string::npos) << r.output;
  }
}

// The flags of --nproc (chapters/10_multi_gpu/launcher.h): the ranks' own flags are checked
// like any other and shown apart in --help; the launcher wants one GPU per process.
TEST(GptCliTest, RankFlagsAndNprocAreCheckedBeforeAnyWork) {
  TempDir dir;
  const std::string more = std::to_string(cuda_device_count() + 2);  // 2 or more
  const std::vector<std::pair<Flags, std::vector<std::string>>> bad = {
      {{{"--rank", "2"}, {"--world", "2"}, {"--nccl-id-file", dir / "id"}},
       {"--rank", "rank 2 of world 2"}},
      {{{"--rank", "one"}}, {"--rank", "one"}},
      {{{"--world", "0"}}, {"--world", "world 0"}},
      {{{"--rank", "0"}, {"--world", "1"}}, {"--nccl-id-file", "file ''"}},
      {{{"--nproc", "2"}}, {"--nproc 2", "drop --device cpu"}},
      {{{"--nproc", more}, {"--device", "auto"}}, {"--nproc " + more, "visible GPUs"}}};
  for (const auto& [flags, parts] : bad) {
    const Outcome r = train(dir, flags);
    expect_refused(r, parts);
    EXPECT_EQ(r.output.find("prepared"), std::string::npos) << args_of(flags);
  }
  const Outcome help = run_program(ZERO_TRAIN_GPT, "--help", dir);
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_NE(help.output.find("--nproc"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("Set by the launcher"), std::string::npos) << help.output;
}

TEST(GptCliTest, PromptsOutsideTheVocabularyAreRefusedBeforeTraining) {
  TempDir dir;
  const Flags sampling = {{"--samples", "1"}, {"--sample-tokens", "5"}};
  Flags flags = sampling;
  flags["--prompt"] = "Zebra";  // the corpus has no capital letters
  Outcome r = train(dir, flags);
  expect_refused(r, {"--prompt", "not in the vocabulary"});
  EXPECT_EQ(r.output.find("val loss"), std::string::npos) << "refused only after training";
  // With no newline in the text, the default prompt ("\n") cannot be encoded either.
  std::string text;
  for (int i = 0; i < 200; ++i) text += "no newline here. ";
  write_bytes(dir / "flat.txt", text);
  flags = sampling;
  flags["--data"] = dir / "flat.txt";
  flags["--out-dir"] = dir / "flat";
  Flags all = tiny_flags();
  for (const auto& [flag, value] : flags) all[flag] = value;
  r = run_program(ZERO_TRAIN_GPT, args_of(all), dir);
  expect_refused(r, {"--prompt", "not in the vocabulary"});
  EXPECT_EQ(r.output.find("val loss"), std::string::npos) << "refused only after training";
  EXPECT_EQ(train(dir, {{"--prompt", "the"}, {"--samples", "1"}, {"--sample-tokens", "5"}})
                .exit_code,
            0);
}
#endif

#ifdef ZERO_TRAIN_GPT
// The flags of a resumed run of the tiny model in `dir`/out, with `changes`.
Flags resume_flags(const TempDir& dir, const Flags& changes = {}) {
  Flags flags = {{"--device", "cpu"},   {"--out-dir", dir / "out"}, {"--resume", kSwitch},
                 {"--max-steps", "8"},  {"--eval-iters", "2"},      {"--samples", "0"},
                 {"--eval-every", "4"}};
  for (const auto& [flag, value] : changes) flags[flag] = value;
  return flags;
}

// A run whose second start fails a check must leave the first run's files as they were,
// and --resume must refuse data that is not the checkpoint's, whatever the directory.
TEST(GptCliTest, AFailedStartLeavesTheRunAndResumeChecksItsData) {
  TempDir dir;
  ASSERT_EQ(train(dir).exit_code, 0);
  const std::string vocab = read_bytes(dir / "out/data/vocab.json");
  const std::string trainer_json = read_bytes(dir / "out/checkpoint/trainer.json");
  // Another text, and a check that fails once its data is prepared (its vocabulary is
  // not the one of the weights given to --init-from).
  write_bytes(dir / "other.txt", std::string(3000, 'x') + "\n");
  const Outcome second = train(dir, {{"--data", dir / "other.txt"},
                                     {"--init-from", dir / "out/checkpoint"}});
  EXPECT_NE(second.exit_code, 0) << second.output;
  EXPECT_EQ(read_bytes(dir / "out/data/vocab.json"), vocab) << "the failed start replaced the data";
  EXPECT_EQ(read_bytes(dir / "out/checkpoint/trainer.json"), trainer_json);
  EXPECT_FALSE(std::filesystem::exists(dir / "out/data.staging"));
  // Resume from another working directory: the data is found.
  const Outcome resumed =
      run_program("cd / && " + std::string(ZERO_TRAIN_GPT), args_of(resume_flags(dir)), dir);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  // Data of another text put where the run's data was: refused, and nothing written.
  ASSERT_EQ(train(dir, {{"--data", dir / "other.txt"}, {"--out-dir", dir / "other"}}).exit_code, 0);
  std::filesystem::remove_all(dir / "out/data");
  std::filesystem::copy(dir / "other/data", dir / "out/data");
  const std::string saved = read_bytes(dir / "out/checkpoint/trainer.json");
  expect_refused(run_program(ZERO_TRAIN_GPT, args_of(resume_flags(dir, {{"--max-steps", "12"}})), dir),
                 {"is not the data it was trained on"});
  EXPECT_EQ(read_bytes(dir / "out/checkpoint/trainer.json"), saved);
}

// Ctrl-C while the final samples are drawn (everything is saved by then) ends the
// program at once; it used to be swallowed until a second Ctrl-C.
TEST(GptCliTest, CtrlCDuringTheFinalSamplesEndsTheRun) {
  TempDir dir;
  Flags flags = tiny_flags();
  flags["--data"] = write_corpus(dir);
  flags["--out-dir"] = dir / "out";
  flags["--max-steps"] = "0";  // evaluate, then sample: the samples start at once
  flags["--samples"] = "64";
  flags["--sample-tokens"] = "100000";  // minutes of sampling if nothing stops it
  const std::string log = dir / "run.log";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl("/bin/sh", "sh", "-c",
            ("exec " + std::string(ZERO_TRAIN_GPT) + args_of(flags) + " > '" + log + "' 2>&1").c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait until sampling has started: the loss curve is drawn just before it (the output
  // itself is buffered, so it cannot tell).
  const std::string curve = dir / "out/loss_curve.png";
  for (int i = 0; i < 200 && !std::filesystem::exists(curve); ++i) ::usleep(50000);
  ASSERT_TRUE(std::filesystem::exists(curve)) << "no loss curve after 10 s: " << read_bytes(log);
  ::usleep(300000);
  ::kill(child, SIGINT);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 100 && done == 0; ++i) {  // at most 5 s
    done = ::waitpid(child, &status, WNOHANG);
    if (done == 0) ::usleep(50000);
  }
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL() << "train_gpt was still sampling 5 s after Ctrl-C";
  }
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << read_bytes(log);
}

// Every flag given with --resume is applied or refused, never ignored.
TEST(GptCliTest, ResumeAppliesOrRefusesEveryFlag) {
  TempDir dir;
  ASSERT_EQ(train(dir).exit_code, 0);
  for (const std::string flag : {"--n-layer", "--block-size", "--seed"}) {
    expect_refused(run_program(ZERO_TRAIN_GPT, args_of(resume_flags(dir, {{flag, "3"}})), dir),
                   {"--resume", "drop " + flag});
  }
  const Outcome r = run_program(
      ZERO_TRAIN_GPT,
      args_of(resume_flags(dir, {{"--batch-size", "2"}, {"--weight-decay", "0.05"},
                                 {"--beta2", "0.95"}, {"--grad-clip", "0.5"}, {"--warmup", "3"}})),
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const TrainerState state = read_trainer_state(dir / "out/checkpoint");
  EXPECT_EQ(state.config.batch_size, 2);
  EXPECT_FLOAT_EQ(state.config.weight_decay, 0.05f);
  EXPECT_FLOAT_EQ(state.config.beta2, 0.95f);
  EXPECT_FLOAT_EQ(state.config.grad_clip, 0.5f);
  EXPECT_EQ(state.config.warmup, 3);
  // --init-from takes the shape from the weights: a shape flag beside it is refused.
  Flags init = {{"--init-from", dir / "out/checkpoint"}, {"--out-dir", dir / "tuned"}};
  init["--n-layer"] = "2";
  expect_refused(train(dir, init), {"--init-from", "drop --n-layer"});
}

// --dtype: an unknown value is refused when parsed; the CPU trains in every dtype, says
// which in the train: and summary lines, logs F16's loss scale, and keeps the dtype in
// the checkpoint, which --resume continues in unless --dtype is given again.
TEST(GptCliTest, DtypeIsCheckedNamedAndKeptByResume) {
  TempDir dir;
  for (const std::string bad : {"fp8", "float16", ""}) {
    const Outcome r = train(dir, {{"--dtype", bad}});
    expect_refused(r, {"--dtype", "expected one of auto, fp32, bf16, fp16"});
    EXPECT_EQ(r.output.find("prepared"), std::string::npos) << bad;
  }
  const Outcome fp32 = train(dir);  // --dtype auto on the CPU
  ASSERT_EQ(fp32.exit_code, 0) << fp32.output;
  EXPECT_NE(fp32.output.find(", on cpu in fp32\n"), std::string::npos) << fp32.output;
  EXPECT_NE(fp32.output.find(" (fp32); checkpoints in "), std::string::npos) << fp32.output;
  EXPECT_NE(fp32.output.find("MiB | fp32\n"), std::string::npos) << fp32.output;
  EXPECT_EQ(fp32.output.find("| scale"), std::string::npos) << fp32.output;
  EXPECT_EQ(read_trainer_state(dir / "out/checkpoint").config.dtype, DataType::F32);

  const Outcome fp16 = train(dir, {{"--dtype", "fp16"}});
  ASSERT_EQ(fp16.exit_code, 0) << fp16.output;
  EXPECT_NE(fp16.output.find(", on cpu in fp16\n"), std::string::npos) << fp16.output;
  EXPECT_NE(fp16.output.find("MiB | fp16 | scale 65536 | skipped 0\n"), std::string::npos)
      << fp16.output;
  EXPECT_NE(read_bytes(dir / "out/metrics.jsonl").find("\"loss_scale\":65536"),
            std::string::npos);
  const TrainerState saved = read_trainer_state(dir / "out/checkpoint");
  EXPECT_EQ(saved.config.dtype, DataType::F16);
  EXPECT_EQ(saved.loss_scale, 65536.0f);
  EXPECT_EQ(saved.loss_scale_good_steps, 5);  // five finite steps, none skipped
  const Outcome resumed = run_program(ZERO_TRAIN_GPT, args_of(resume_flags(dir)), dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find(" in fp16\n"), std::string::npos) << resumed.output;
  EXPECT_EQ(read_trainer_state(dir / "out/checkpoint").loss_scale_good_steps, 8);
  const Outcome switched = run_program(
      ZERO_TRAIN_GPT, args_of(resume_flags(dir, {{"--dtype", "bf16"}, {"--max-steps", "10"}})),
      dir);
  ASSERT_EQ(switched.exit_code, 0) << switched.output;
  EXPECT_NE(switched.output.find(" in bf16\n"), std::string::npos) << switched.output;
  EXPECT_EQ(read_trainer_state(dir / "out/checkpoint").config.dtype, DataType::BF16);
}
#endif

#ifdef ZERO_SAMPLE_GPT
TEST(GptCliTest, SampleFlagsOutOfRangeAreRefused) {
  TempDir dir;
  const std::string base = " --device cpu --checkpoint " + quoted(dir / "none");
  for (const std::string bad : {"--temperature nan", "--temperature -1", "--seed -1",
                                "--num-samples 0", "--max-new-tokens -5", "--top-k -1"}) {
    const std::string flag = bad.substr(0, bad.find(' '));
    expect_refused(run_program(ZERO_SAMPLE_GPT, base + " " + bad, dir), {flag});
  }
  expect_refused(run_program(ZERO_SAMPLE_GPT, base + " --prompt ''", dir), {"--prompt"});
  expect_refused(run_program(ZERO_SAMPLE_GPT, " --checkpoint ''", dir), {"--checkpoint"});
  // A checkpoint folder that is not one: a clear message, not an exception.
  expect_refused(run_program(ZERO_SAMPLE_GPT, base, dir), {dir / "none"});
}
#endif

}  // namespace
}  // namespace zero::train

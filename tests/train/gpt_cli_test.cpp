// Tests of the chapter 09 programs as a user runs them (train_gpt and sample_gpt, built
// from chapters/09_gpt/): flags and files that must be refused exit with status 1 and a
// message naming the flag or the file, before any training, never with an abort
// ("terminate called") or a crash. A tiny CPU model keeps every run to a second or two.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tests/data/test_files.h"

namespace zero::train {
namespace {

using testing::read_bytes;
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

// The program must have failed cleanly: status 1, every part in its output.
void expect_refused(const Outcome& r, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.exit_code, 1) << r.output;
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
                 {"4611686018427387904 x 16", "--batch-size"});
}
#endif

}  // namespace
}  // namespace zero::train

// Tests of the JSONL metrics log (zero/train/metrics.h).
#include "zero/train/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "zero/core/error.h"

namespace zero::train {
namespace {

using ::testing::HasSubstr;

StepMetrics record(int64_t step, float loss) {
  StepMetrics m;
  m.step = step;
  m.loss = loss;
  m.lr = 1e-3f;
  m.ms = 12.5;
  m.tokens_per_s = 81920;
  m.mem_gib = 0.25;
  return m;
}

TEST(MetricsTest, LineRoundTrip) {
  StepMetrics m = record(100, 2.125f);
  m.val_loss = 2.25f;
  m.mfu = 0.123;
  const std::string line = to_json_line(m);
  EXPECT_EQ(line,
            "{\"step\":100,\"loss\":2.125,\"val_loss\":2.25,\"lr\":0.0010000000474974513,"
            "\"ms\":12.5,\"tokens_per_s\":81920.0,\"mfu\":0.123,\"mem_gib\":0.25}");
  const StepMetrics back = from_json_line(line);
  EXPECT_EQ(back.step, 100);
  EXPECT_EQ(back.loss, 2.125f);
  ASSERT_TRUE(back.val_loss.has_value());
  EXPECT_EQ(*back.val_loss, 2.25f);
  EXPECT_EQ(back.lr, 1e-3f);
  ASSERT_TRUE(back.mfu.has_value());
  EXPECT_DOUBLE_EQ(*back.mfu, 0.123);
  const StepMetrics plain = from_json_line(to_json_line(record(1, 3.0f)));
  EXPECT_FALSE(plain.val_loss.has_value());
  EXPECT_FALSE(plain.mfu.has_value());
  EXPECT_THAT([] { from_json_line("{\"step\":1}"); },
              ::testing::ThrowsMessage<Error>(HasSubstr("tokens_per_s")));
}

TEST(MetricsTest, DtypeSkippedUpdatesAndLossScaleRoundTripAndShow) {
  StepMetrics m = record(7, 3.0f);
  m.dtype = "fp16";
  m.skipped = 2;
  m.loss_scale = 32768.0f;
  const std::string line = to_json_line(m);
  EXPECT_THAT(line, HasSubstr(",\"dtype\":\"fp16\",\"skipped\":2,\"loss_scale\":32768.0}"));
  const StepMetrics back = from_json_line(line);
  ASSERT_TRUE(back.dtype && back.skipped && back.loss_scale);
  EXPECT_EQ(*back.dtype, "fp16");
  EXPECT_EQ(*back.skipped, 2);
  EXPECT_EQ(*back.loss_scale, 32768.0f);
  const StepMetrics plain = from_json_line(to_json_line(record(1, 3.0f)));
  EXPECT_FALSE(plain.dtype || plain.skipped || plain.loss_scale);
  // FP16: the scale and the count always; otherwise the count only once it is not 0.
  EXPECT_THAT(format_log_line(m, 10), ::testing::EndsWith("MiB | fp16 | scale 32768 | skipped 2"));
  m.loss_scale.reset();
  m.dtype = "bf16";
  EXPECT_THAT(format_log_line(m, 10), ::testing::EndsWith("MiB | bf16 | skipped 2"));
  m.skipped = 0;
  EXPECT_THAT(format_log_line(m, 10), ::testing::EndsWith("MiB | bf16"));
}

TEST(MetricsTest, ConsoleLine) {
  StepMetrics m = record(100, 2.12344f);
  m.tokens_per_s = 362400;
  m.mfu = 0.1234;
  m.mem_gib = 1.2;
  EXPECT_EQ(format_log_line(m, 5000),
            "step 100/5000 | loss 2.1234 | lr 1.00e-03 | 12.5 ms | 362k tok/s | mfu 12.3% | mem "
            "1.20 GiB");
  m.mfu.reset();
  m.mem_gib = 0.25;
  EXPECT_EQ(format_log_line(m, 5000),
            "step 100/5000 | loss 2.1234 | lr 1.00e-03 | 12.5 ms | 362k tok/s | mem 256 MiB");
  EXPECT_EQ(format_rate(950), "950");
  EXPECT_EQ(format_rate(3140), "3.1k");
  EXPECT_EQ(format_rate(1.254e6), "1.25M");
}

TEST(MetricsTest, ResumeKeepsRecordsUpToTheCheckpoint) {
  const std::string path = ::testing::TempDir() + "zero_metrics_test.jsonl";
  {
    MetricsLog log(path);
    for (int64_t s : {10, 20, 30, 40}) log.Write(record(s, 1.0f * s));
  }
  MetricsLog resumed(path, 20);  // the checkpoint was at step 20: 30 and 40 are redone
  resumed.Write(record(30, 99.0f));
  const std::vector<StepMetrics> all = read_metrics(path);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].step, 20);
  EXPECT_EQ(all[2].loss, 99.0f);
  EXPECT_EQ(resumed.records().size(), 3u);
  std::vector<LossPoint> train, val;
  loss_points(all, &train, &val);
  EXPECT_EQ(train.size(), 3u);
  EXPECT_TRUE(val.empty());
  MetricsLog fresh(path);  // a new run starts an empty log
  EXPECT_TRUE(read_metrics(path).empty());
  std::remove(path.c_str());
}

TEST(MetricsTest, ATruncatedLastLineIsSkippedAndCounted) {
  const std::string path = ::testing::TempDir() + "zero_metrics_truncated.jsonl";
  {
    std::ofstream out(path);
    out << to_json_line(record(1, 2.0f)) << "\n"
        << "{\"step\":2,\"lo";  // what a kill in the middle of an append leaves
  }
  int64_t skipped = -1;
  EXPECT_EQ(read_metrics(path, &skipped).size(), 1u);
  EXPECT_EQ(skipped, 1);
  std::remove(path.c_str());
  EXPECT_TRUE(read_metrics(path, &skipped).empty());  // a missing file has no records
  EXPECT_EQ(skipped, 0);
}

// A damaged line anywhere must not make the run impossible to resume: the resumed log
// keeps every readable record, drops the rest, says how many, and the file it leaves
// holds only good lines.
TEST(MetricsTest, ResumeDropsDamagedLinesAndReportsThem) {
  const std::string path = ::testing::TempDir() + "zero_metrics_damaged.jsonl";
  {
    std::ofstream out(path);
    out << to_json_line(record(10, 1.0f)) << "\n"
        << "not json at all\n"
        << to_json_line(record(20, 2.0f)) << "\n"
        << "{\"step\":30,\"lo";
  }
  MetricsLog resumed(path, 20);
  EXPECT_EQ(resumed.skipped_lines(), 2);
  ASSERT_EQ(resumed.records().size(), 2u);
  resumed.Write(record(30, 3.0f));
  int64_t skipped = -1;
  const std::vector<StepMetrics> all = read_metrics(path, &skipped);
  EXPECT_EQ(skipped, 0);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2].step, 30);
  std::remove(path.c_str());
}

// The rewrite on resume goes through a temporary file: none is left beside the log.
TEST(MetricsTest, ResumeLeavesNoTemporaryFile) {
  const std::string path = ::testing::TempDir() + "zero_metrics_tmp.jsonl";
  {
    MetricsLog log(path);
    log.Write(record(1, 1.0f));
  }
  { MetricsLog resumed(path, 1); }
  EXPECT_FALSE(std::ifstream(path + ".tmp").good());
  EXPECT_EQ(read_metrics(path).size(), 1u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace zero::train

// Tests of BatchSampler (data/batch_sampler.h) on every device: windows are consecutive
// tokens with y = x shifted by one, the same seed gives the same batches, SetPosition
// resumes exactly (also after a prefetch on CUDA), bad sizes are clear errors, and
// sharded samplers split the batches of one unsharded sampler row by row.
#include "zero/data/batch_sampler.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "tests/data/test_files.h"
#include "tests/support/test_support.h"

namespace zero::data {
namespace {

using testing::expect_error;

class BatchSamplerTest : public testing::DeviceTest {};

// 0, 1, 2, ...: a token's value is its position, so a window is recognisable.
std::vector<int32_t> iota_tokens(int n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), 0);
  return t;
}

std::vector<std::vector<int32_t>> draw(BatchSampler& s, int batches) {
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < batches; ++i) {
    auto [x, y] = s.Next();
    out.push_back(x.ToVector<int32_t>());
    out.push_back(y.ToVector<int32_t>());
  }
  return out;
}

TEST_P(BatchSamplerTest, WindowsAreConsecutiveAndTargetsShiftedByOne) {
  const int n = 1000, B = 8, T = 16;
  BatchSampler sampler(iota_tokens(n), B, T, /*seed=*/7, device());
  std::set<int32_t> starts;
  for (int step = 0; step < 5; ++step) {
    auto [x, y] = sampler.Next();
    EXPECT_EQ(x.sizes(), (Shape{B, T}));
    EXPECT_EQ(y.sizes(), (Shape{B, T}));
    EXPECT_EQ(x.dtype(), DataType::I32);
    EXPECT_EQ(x.device(), device());
    const auto xv = x.ToVector<int32_t>(), yv = y.ToVector<int32_t>();
    for (int b = 0; b < B; ++b) {
      const int32_t o = xv[b * T];
      EXPECT_EQ(o, sampler.WindowOffset(step * B + b));
      EXPECT_GE(o, 0);
      EXPECT_LE(o + T, n - 1);  // y's last token, o + T, must exist
      starts.insert(o);
      for (int t = 0; t < T; ++t) {
        EXPECT_EQ(xv[b * T + t], o + t);
        EXPECT_EQ(yv[b * T + t], o + t + 1);
      }
    }
  }
  EXPECT_GT(starts.size(), 30u);  // 40 draws from 984 offsets: nearly all distinct
  EXPECT_EQ(sampler.position(), 5u * B);
}

TEST_P(BatchSamplerTest, SameSeedSameBatchesOtherSeedOthers) {
  BatchSampler a(iota_tokens(500), 4, 8, 123, device());
  BatchSampler b(iota_tokens(500), 4, 8, 123, device());
  BatchSampler c(iota_tokens(500), 4, 8, 124, device());
  const auto da = draw(a, 3), db = draw(b, 3), dc = draw(c, 3);
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);
}

TEST_P(BatchSamplerTest, SetPositionResumesExactly) {
  BatchSampler run(iota_tokens(500), 4, 8, 99, device());
  draw(run, 2);
  const uint64_t saved = run.position();
  const auto expected = draw(run, 3);

  BatchSampler resumed(iota_tokens(500), 4, 8, run.seed(), device());
  resumed.SetPosition(saved);
  EXPECT_EQ(draw(resumed, 3), expected);

  // Rewinding a sampler that has already prefetched its next batch gives the same again.
  run.SetPosition(saved);
  EXPECT_EQ(draw(run, 3), expected);
}

TEST_P(BatchSamplerTest, BadSizesAreErrorsNamingThem) {
  expect_error([&] { BatchSampler(iota_tokens(10), 2, 9, 0, device()); }, {"(9)", "(10 - 1)", "--block-size"});
  expect_error([&] { BatchSampler(iota_tokens(10), 2, 20, 0, device()); }, {"(20)", "(10 - 1)"});
  expect_error([&] { BatchSampler(iota_tokens(10), 0, 4, 0, device()); }, {"batch size", "got 0"});
  expect_error([&] { BatchSampler(iota_tokens(10), 2, 0, 0, device()); }, {"block size", "got 0"});
  // 2^62 x 4 tokens wrapped to 0; the sampler then wrote rows past its buffers.
  expect_error([&] { BatchSampler(iota_tokens(10), int64_t{1} << 62, 4, 0, device()); },
               {"4611686018427387904 x 4", "--batch-size"});
  BatchSampler wide(iota_tokens(10), int64_t{1} << 40, 4, 0, Device::Cpu());  // allocates nothing
  expect_error([&] { wide.SetShard(0, 1 << 20); }, {"1048576 ranks", "1099511627776 x 4"});
  BatchSampler smallest(iota_tokens(10), 2, 8, 0, device());  // offsets 0 and 1
  auto [x, y] = smallest.Next();
  EXPECT_EQ(y.ToVector<int32_t>().back() - x.ToVector<int32_t>().back(), 1);
}

TEST_P(BatchSamplerTest, ShardsAreTheRowsOfTheUnshardedBatch) {
  // 3 ranks with batch 2 must see, step by step, rows [2r, 2r + 2) of the batches of one
  // sampler with batch 6 and the same seed (the data-parallel equality argument).
  constexpr int kWorld = 3, kBatch = 2, kBlock = 5, kSteps = 4;
  BatchSampler whole(iota_tokens(300), kWorld * kBatch, kBlock, 7, device());
  std::vector<BatchSampler> shards;
  for (int r = 0; r < kWorld; ++r) {
    shards.emplace_back(iota_tokens(300), kBatch, kBlock, 7, device());
    shards.back().SetShard(r, kWorld);
  }
  for (int step = 0; step < kSteps; ++step) {
    auto [x, y] = whole.Next();  // (6, 5) each
    for (int r = 0; r < kWorld; ++r) {
      auto [xr, yr] = shards[r].Next();  // (2, 5) each
      EXPECT_EQ(xr.ToVector<int32_t>(), x.Slice(0, r * kBatch, (r + 1) * kBatch).ToVector<int32_t>())
          << "rank " << r << " step " << step;
      EXPECT_EQ(yr.ToVector<int32_t>(), y.Slice(0, r * kBatch, (r + 1) * kBatch).ToVector<int32_t>());
      EXPECT_EQ(shards[r].position(), whole.position());  // checkpoints agree across world sizes
    }
  }
  expect_error([&] { shards[0].SetShard(3, 3); }, {"rank 3 of world 3"});
  expect_error([&] { shards[0].SetShard(0, 0); }, {"rank 0 of world 0"});
}

ZERO_INSTANTIATE_DEVICE_TEST(BatchSamplerTest);

}  // namespace
}  // namespace zero::data

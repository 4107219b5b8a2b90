// Tests of GradBuckets (distributed/grad_buckets.h): buckets filled from the last parameter
// to the first under the byte cap, offsets into the flat buffers, release strictly in
// bucket order, MarkRemaining, Reset, and the errors for unknown and repeated marks.
#include "zero/distributed/grad_buckets.h"

#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace zero::dist {
namespace {

using testing::expect_error_mentions;
using Params = std::vector<std::pair<std::string, int64_t>>;
using Indices = std::vector<size_t>;

// Five parameters of 4-byte elements: 100, 300, 50, 200 and 10 elements.
Params five() { return {{"a", 100}, {"b", 300}, {"c", 50}, {"d", 200}, {"e", 10}}; }

TEST(GradBucketsTest, FillsFromTheLastParameterUnderTheCap) {
  // Cap 1000 bytes = 250 elements. From the back: e(10) + d(200) = 210 (c would make
  // 260 > 250); c(50) alone (b would make 350); b(300) is over the cap: its own bucket;
  // a(100) last.
  const GradBuckets g(five(), 1000);
  ASSERT_EQ(g.num_buckets(), 4u);
  EXPECT_EQ(g.bucket(0), (Indices{4, 3}));
  EXPECT_EQ(g.bucket(1), (Indices{2}));
  EXPECT_EQ(g.bucket(2), (Indices{1}));
  EXPECT_EQ(g.bucket(3), (Indices{0}));
  EXPECT_EQ(g.bucket_numel(0), 210);
  EXPECT_EQ(g.bucket_of(3), 0u);
  EXPECT_EQ(g.offset_of(4), 0);    // e first in bucket 0
  EXPECT_EQ(g.offset_of(3), 10);   // d right after e
  EXPECT_EQ(g.offset_of(1), 0);
  EXPECT_EQ(g.index_of("d"), 3u);
}

TEST(GradBucketsTest, ExactFitStaysInOneBucketAndHugeCapMakesOne) {
  const GradBuckets exact({{"x", 25}, {"y", 25}}, 200);  // 100 + 100 bytes = the cap
  EXPECT_EQ(exact.num_buckets(), 1u);
  const GradBuckets one(five(), GradBuckets::kDefaultCapBytes);
  ASSERT_EQ(one.num_buckets(), 1u);
  EXPECT_EQ(one.bucket(0), (Indices{4, 3, 2, 1, 0}));
  EXPECT_EQ(one.bucket_numel(0), 660);
  // Tiny cap: one parameter per bucket, in reverse registration order.
  const GradBuckets each(five(), 1);
  ASSERT_EQ(each.num_buckets(), 5u);
  for (size_t b = 0; b < 5; ++b) EXPECT_EQ(each.bucket(b), (Indices{4 - b}));
}

TEST(GradBucketsTest, ReleasesBucketsInIndexOrderOnly) {
  GradBuckets g(five(), 1000);  // buckets {e, d}, {c}, {b}, {a}
  EXPECT_EQ(g.MarkReady("b"), Indices{});      // bucket 2 complete, waits behind 0 and 1
  EXPECT_EQ(g.MarkReady("e"), Indices{});      // bucket 0 half done
  EXPECT_EQ(g.MarkReady("c"), Indices{});      // bucket 1 complete, still behind 0
  EXPECT_EQ(g.MarkReady("d"), (Indices{0, 1, 2}));  // 0 completes: 0, 1, 2 go together
  EXPECT_FALSE(g.all_launched());
  EXPECT_EQ(g.MarkReady(size_t{0}), (Indices{3}));
  EXPECT_TRUE(g.all_launched());
}

TEST(GradBucketsTest, MarkRemainingReleasesTheRestAndResetStartsOver) {
  GradBuckets g(five(), 1000);
  EXPECT_EQ(g.MarkReady("e"), Indices{});
  EXPECT_EQ(g.MarkRemaining(), (Indices{0, 1, 2, 3}));  // d, c, b, a never came
  EXPECT_TRUE(g.all_launched());
  EXPECT_EQ(g.MarkRemaining(), Indices{});  // nothing is released twice
  g.Reset();
  EXPECT_FALSE(g.all_launched());
  EXPECT_EQ(g.MarkReady("e"), Indices{});  // marking again is fine after Reset
  EXPECT_EQ(g.MarkReady("d"), (Indices{0}));
}

TEST(GradBucketsTest, ErrorsNameTheParameter) {
  GradBuckets g(five(), 1000);
  expect_error_mentions([&] { g.MarkReady("nope"); }, {"unknown parameter 'nope'"});
  expect_error_mentions([&] { g.MarkReady(size_t{5}); }, {"below 5", "got 5"});
  g.MarkReady("c");
  expect_error_mentions([&] { g.MarkReady("c"); }, {"'c'", "twice"});
  expect_error_mentions([&] { GradBuckets({}, 100); }, {"at least one parameter"});
  expect_error_mentions([&] { GradBuckets({{"w", 3}, {"w", 4}}, 100); }, {"'w' twice"});
  expect_error_mentions([&] { GradBuckets({{"w", 0}}, 100); }, {"'w'", "numel 0"});
  expect_error_mentions([&] { GradBuckets({{"w", 1}}, 0); }, {"above 0 bytes", "got 0"});
}

}  // namespace
}  // namespace zero::dist

// Tests of the op profiler (autograd/profiler.h) on the CPU: every op's forward and
// backward is counted once per call under its name, work an op does through other ops
// is charged to the outermost one only, user scopes add rows, and nothing is recorded
// outside Start/Stop.
#include "zero/autograd/profiler.h"

#include <gtest/gtest.h>

#include <string>

#include "zero/autograd/functional.h"

namespace zero {
namespace {

const profiler::Row* find(const std::vector<profiler::Row>& rows, const std::string& name) {
  for (const profiler::Row& r : rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(ProfilerTest, CountsEachOpOncePerCallAndPass) {
  const Tensor a = Tensor::From({1, 2, 3}, {3}).SetRequiresGrad();
  const Tensor b = Tensor::From({4, 5, 6}, {3}).SetRequiresGrad();
  profiler::Start(Device::Cpu());
  EXPECT_TRUE(profiler::recording());
  const Tensor loss = sum((a + b) * a);  // (): OpAdd, OpMul, a sum
  loss.Backward();
  {
    profiler::Scope scope("my scope");
    const Tensor ignored = a + b;  // inside a scope: charged to it, not to OpAdd
  }
  const std::vector<profiler::Row> rows = profiler::Stop();
  EXPECT_FALSE(profiler::recording());
  const profiler::Row* add = find(rows, "OpAdd forward");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->calls, 1);
  ASSERT_NE(find(rows, "OpMul forward"), nullptr);
  ASSERT_NE(find(rows, "OpMul backward"), nullptr);
  EXPECT_EQ(find(rows, "OpMul backward")->calls, 1);
  const profiler::Row* scope = find(rows, "my scope");
  ASSERT_NE(scope, nullptr);
  EXPECT_EQ(scope->calls, 1);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].ms, rows[i].ms);  // longest first
  for (const profiler::Row& r : rows) EXPECT_GE(r.ms, 0.0) << r.name;
}

TEST(ProfilerTest, NothingIsRecordedOutsideStartAndStop) {
  const Tensor a = Tensor::From({1, 2}, {2});
  profiler::Start(Device::Cpu());
  EXPECT_TRUE(profiler::Stop().empty());
  const Tensor b = a + a;  // not recording
  profiler::Start(Device::Cpu());
  const std::vector<profiler::Row> rows = profiler::Stop();
  EXPECT_TRUE(rows.empty());
}

TEST(ProfilerTest, TableShowsEveryRowAndTheUnaccountedRest) {
  const std::vector<profiler::Row> rows = {{"OpLinear forward", 4, 3.0}, {"AdamW step", 2, 1.0}};
  const std::string table = profiler::format_table(rows, 8.0, 2);
  EXPECT_NE(table.find("OpLinear forward"), std::string::npos);
  EXPECT_NE(table.find("1.500"), std::string::npos);   // 3 ms over 2 steps
  EXPECT_NE(table.find("37.5%"), std::string::npos);   // 3 of 8 ms
  EXPECT_NE(table.find("outside any op"), std::string::npos);
  EXPECT_NE(table.find("2.000"), std::string::npos);   // (8 - 4) / 2 ms not in any row
}

}  // namespace
}  // namespace zero

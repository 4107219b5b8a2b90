// Tests of the cache of parameter casts (autograd/cast_cache.cpp): a cast of an unchanged
// parameter reuses the kept values, which equal to_dtype's bit for bit; any write to the
// parameter or to the values makes the next cast convert again; AdamW rewrites the values
// in its own pass, to the bits a fresh cast of the updated parameter has; a graph that
// saved the values refuses its backward once AdamW has rewritten them; gradients through a
// cached cast are to_dtype's. On the CPU and on CUDA (AdamW's multi-tensor kernel).
#include <string>
#include <vector>

#include "tests/support/test_support.h"
#include "zero/autograd/cast_cache.h"
#include "zero/autograd/functional.h"
#include "zero/autograd/grad_mode.h"
#include "zero/optim/adamw.h"

namespace zero {
namespace {

using testing::expect_error_mentions;
using testing::randn_leaf;

std::vector<float> floats(const Tensor& t) { return to_dtype(t, DataType::F32).ToVector<float>(); }

// The cast's values are to_dtype's, bit for bit.
void expect_fresh_cast(const Tensor& cast, const Tensor& param) {
  const Tensor want = to_dtype(param.Detach(), cast.dtype());
  EXPECT_EQ(floats(cast), floats(want));
}

class CastCacheTest : public testing::DeviceTest {};

TEST_P(CastCacheTest, AnUnchangedParameterReusesTheValues) {
  for (DataType dtype : {DataType::BF16, DataType::F16}) {
    SCOPED_TRACE(to_string(dtype));
    const Tensor p = randn_leaf({3, 7}, device(), 1);
    const Tensor a = cached_cast(p, dtype), b = cached_cast(p, dtype);
    EXPECT_EQ(a.dtype(), dtype);
    EXPECT_EQ(a.data(), b.data()) << "the second cast converted again";
    expect_fresh_cast(b, p);
  }
}

TEST_P(CastCacheTest, AWriteToTheParameterMakesTheNextCastConvert) {
  const Tensor p = randn_leaf({5}, device(), 2);
  const Tensor before = cached_cast(p, DataType::BF16);
  const std::vector<float> old_values = floats(before);
  {
    NoGradGuard no_grad;
    Tensor(p).Fill_(0.25f);
  }
  const Tensor after = cached_cast(p, DataType::BF16);
  EXPECT_EQ(floats(after), std::vector<float>(5, 0.25f));
  EXPECT_EQ(floats(before), old_values) << "a graph's saved cast must keep its values";
}

TEST_P(CastCacheTest, AWriteToTheValuesMakesTheNextCastConvert) {
  const Tensor p = randn_leaf({4}, device(), 3);
  Tensor cast = cached_cast(p, DataType::BF16).Detach();
  {
    NoGradGuard no_grad;
    cast.Fill_(7.0f);
  }
  expect_fresh_cast(cached_cast(p, DataType::BF16), p);
}

TEST_P(CastCacheTest, AViewOfAParameterIsNotTheParameter) {
  const Tensor p = randn_leaf({6}, device(), 4);
  const Tensor whole = cached_cast(p, DataType::BF16);
  const Tensor tail = cached_cast(p.Slice(0, 2, 6), DataType::BF16);
  EXPECT_EQ(tail.sizes(), (Shape{4}));
  expect_fresh_cast(tail, p.Slice(0, 2, 6));
  expect_fresh_cast(cached_cast(p, DataType::BF16), p);
  EXPECT_EQ(floats(whole).size(), 6u);
}

TEST_P(CastCacheTest, GradientsAreToDtypes) {
  const Tensor p = randn_leaf({2, 3}, device(), 5);
  const Tensor r = randn_leaf({2, 3}, device(), 6).Detach();
  cached_cast(p, DataType::BF16);  // kept: the cast below reuses it
  sum(to_dtype(cached_cast(p, DataType::BF16) * to_dtype(r, DataType::BF16), DataType::F32))
      .Backward();
  const Tensor got = p.Grad();
  Tensor(p).ZeroGrad();
  sum(to_dtype(to_dtype(p, DataType::BF16) * to_dtype(r, DataType::BF16), DataType::F32))
      .Backward();
  ASSERT_TRUE(got.defined());
  EXPECT_EQ(got.dtype(), DataType::F32);
  EXPECT_EQ(floats(got), floats(p.Grad()));
}

// Two parameters, one of each kind AdamW treats differently (decayed or not).
std::vector<std::pair<std::string, Tensor>> two_params(Device device) {
  return {{"w", randn_leaf({4, 8}, device, 7)}, {"b", randn_leaf({8}, device, 8)}};
}

void give_gradients(const std::vector<std::pair<std::string, Tensor>>& params) {
  for (const auto& [name, p] : params) Tensor(p).SetGrad(Tensor::Ones(p.sizes()).To(p.device()));
}

TEST_P(CastCacheTest, AdamWRewritesTheValuesInPlace) {
  const auto params = two_params(device());
  optim::AdamW adamw(params, optim::AdamWOptions{0.1f});
  std::vector<const void*> buffers;
  for (const auto& [name, p] : params) buffers.push_back(cached_cast(p, DataType::BF16).data());
  for (int step = 0; step < 2; ++step) {
    give_gradients(params);
    adamw.Step();
    for (size_t i = 0; i < params.size(); ++i) {
      SCOPED_TRACE(params[i].first + ", step " + std::to_string(step));
      const Tensor cast = cached_cast(params[i].second, DataType::BF16);
      EXPECT_EQ(cast.data(), buffers[i]) << "the cast converted again after the step";
      expect_fresh_cast(cast, params[i].second);
    }
  }
}

TEST_P(CastCacheTest, AGraphThatSavedTheValuesRefusesItsBackwardAfterAStep) {
  const auto params = two_params(device());
  optim::AdamW adamw(params, optim::AdamWOptions{0.1f});
  const Tensor& w = params[0].second;
  const Tensor x = randn_leaf({3, 8}, device(), 9).Detach();
  const Tensor loss = sum(to_dtype(linear(to_dtype(x, DataType::BF16),
                                          cached_cast(w, DataType::BF16)),
                                   DataType::F32));
  give_gradients(params);
  adamw.Step();
  expect_error_mentions([&] { loss.Backward(); }, {"OpLinear", "modified in place"});
}

ZERO_INSTANTIATE_DEVICE_TEST(CastCacheTest);

}  // namespace
}  // namespace zero

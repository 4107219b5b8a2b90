// The precision switch (zero/kernels/precision.h): the values MX_FAST_MATMUL accepts,
// the canonical names, and the scoped guard restoring what was in force. Runs on any
// machine; what each mode computes is tested on CUDA by matmul_modes_test.cpp,
// split_tf32_test.cpp and attention_test.cpp.
#include <gtest/gtest.h>

#include <cstdlib>

#include "zero/core/error.h"
#include "zero/kernels/precision.h"

namespace zero {
namespace {

TEST(PrecisionTest, ParsesEveryValueOfTheEnvironmentVariable) {
  EXPECT_EQ(parse_matmul_precision(""), MatmulPrecision::kIeee);
  EXPECT_EQ(parse_matmul_precision("0"), MatmulPrecision::kIeee);
  EXPECT_EQ(parse_matmul_precision("ieee"), MatmulPrecision::kIeee);
  EXPECT_EQ(parse_matmul_precision("3xtf32"), MatmulPrecision::kSplitTf32);
  EXPECT_EQ(parse_matmul_precision("tf32"), MatmulPrecision::kTf32);
  EXPECT_EQ(parse_matmul_precision("1"), MatmulPrecision::kFp16);
  EXPECT_EQ(parse_matmul_precision("fp16"), MatmulPrecision::kFp16);
}

TEST(PrecisionTest, RejectsOtherValuesNamingTheAcceptedOnes) {
  try {
    parse_matmul_precision("bf16");
    FAIL() << "bf16 is not a GEMM mode for FP32 tensors";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("\"bf16\""), std::string::npos) << what;
    EXPECT_NE(what.find("3xtf32"), std::string::npos) << what;
  }
}

TEST(PrecisionTest, TheDefaultIsIeeeFp32) {
  if (std::getenv("MX_FAST_MATMUL") != nullptr) GTEST_SKIP() << "MX_FAST_MATMUL is set";
  EXPECT_EQ(matmul_precision(), MatmulPrecision::kIeee);
}

TEST(PrecisionTest, NamesRoundTripThroughTheParser) {
  for (const MatmulPrecision p : {MatmulPrecision::kIeee, MatmulPrecision::kSplitTf32,
                                  MatmulPrecision::kTf32, MatmulPrecision::kFp16}) {
    EXPECT_EQ(parse_matmul_precision(matmul_precision_name(p)), p) << matmul_precision_name(p);
  }
}

TEST(PrecisionTest, GuardsNestAndRestoreTheEnvironmentsChoice) {
  const MatmulPrecision from_env = matmul_precision();
  {
    const ScopedMatmulPrecision outer(MatmulPrecision::kTf32);
    EXPECT_EQ(matmul_precision(), MatmulPrecision::kTf32);
    {
      const ScopedMatmulPrecision inner(MatmulPrecision::kSplitTf32);
      EXPECT_EQ(matmul_precision(), MatmulPrecision::kSplitTf32);
    }
    EXPECT_EQ(matmul_precision(), MatmulPrecision::kTf32);
  }
  EXPECT_EQ(matmul_precision(), from_env);
  set_matmul_precision(MatmulPrecision::kFp16);
  EXPECT_EQ(matmul_precision(), MatmulPrecision::kFp16);
  clear_matmul_precision();
  EXPECT_EQ(matmul_precision(), from_env);
}

}  // namespace
}  // namespace zero

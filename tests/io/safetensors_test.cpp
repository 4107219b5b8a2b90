// Tests of safetensors reading and writing (io/safetensors.h): round trips of F32, I32,
// 0-d, empty and strided tensors with metadata, the exact bytes of a small file, and
// corrupt files (truncated anywhere, bad header length, bad JSON, bad offsets, bad
// shapes, unknown dtypes), each a zero::Error naming the file, never a crash.
#include "zero/io/safetensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "tests/data/test_files.h"
#include "tests/support/test_support.h"
#include "zero/kernels/tensor_ops.h"

namespace zero::io {
namespace {

using testing::expect_error;
using testing::TempDir;

class SafetensorsTest : public testing::DeviceTest {};

// The 8-byte little-endian header length `n`.
std::string length_prefix(uint64_t n) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out;
}

// A file with the given header text, padded with spaces to `padded` bytes, and data.
std::string make_file(const std::string& header, const std::string& data, size_t padded = 0) {
  const size_t n = std::max(padded, header.size());
  return length_prefix(n) + header + std::string(n - header.size(), ' ') + data;
}

TEST_P(SafetensorsTest, RoundTripKeepsNamesOrderValuesAndMetadata) {
  TempDir dir;
  const TensorOption on_device = TensorOption().OnDevice(device());
  const Tensor w = Tensor::Randn({3, 4}, on_device);
  const Tensor ids = Tensor::FromI32({7, -2, 2147483647, 0, 5, 6}, {2, 3}, on_device);
  const Tensor scalar = Tensor::Scalar(2.5f, on_device);
  const Tensor empty = Tensor::Zeros({0, 5}, on_device);
  const Tensor strided = w.Transpose(0, 1);  // (4, 3), not contiguous
  save_safetensors(
      dir / "m.safetensors",
      {{"z.weight", w}, {"a.ids", ids}, {"scalar", scalar}, {"empty", empty}, {"t", strided}},
      {{"step", "42"}, {"format", "pt"}});

  std::map<std::string, std::string> meta;
  const NamedTensors back = load_safetensors(dir / "m.safetensors", &meta);
  ASSERT_EQ(back.size(), 5u);
  EXPECT_EQ(back[0].first, "z.weight");
  EXPECT_EQ(back[1].first, "a.ids");
  EXPECT_EQ(back[4].first, "t");
  for (const auto& [name, t] : back) EXPECT_EQ(t.device(), Device::Cpu()) << name;
  testing::expect_close(back[0].second, w, 0.0f, 0.0f);
  EXPECT_EQ(back[1].second.dtype(), DataType::I32);
  EXPECT_EQ(back[1].second.ToVector<int32_t>(), ids.ToVector<int32_t>());
  EXPECT_EQ(back[2].second.dim(), 0);
  EXPECT_EQ(back[2].second.Item(), 2.5f);
  EXPECT_EQ(back[3].second.sizes(), (Shape{0, 5}));
  EXPECT_EQ(back[4].second.sizes(), (Shape{4, 3}));
  testing::expect_close(back[4].second, strided, 0.0f, 0.0f);
  EXPECT_EQ(meta, (std::map<std::string, std::string>{{"step", "42"}, {"format", "pt"}}));
}

ZERO_INSTANTIATE_DEVICE_TEST(SafetensorsTest);

TEST(SafetensorsFormatTest, WritesTheDocumentedLayout) {
  TempDir dir;
  save_safetensors(dir / "x.safetensors", {{"x", Tensor::From({1.0f, -2.0f}, {2})}});
  const std::string bytes = testing::read_bytes(dir / "x.safetensors");
  const std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string data("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8);  // 1.0f, -2.0f little-endian
  EXPECT_EQ(bytes, make_file(header, data, 56));                  // 52 bytes padded to 56
  EXPECT_FALSE(std::ifstream(dir / "x.safetensors.tmp").good());  // renamed away
}

TEST(SafetensorsFormatTest, SixteenBitTensorsKeepTheirDtypeAndBits) {
  TempDir dir;
  const Tensor x = Tensor::From({1.0f, -2.5f, 1e-3f, 65504.0f}, {2, 2});
  NamedTensors out;
  for (DataType dtype : {DataType::BF16, DataType::F16}) {
    Tensor h = Tensor::Empty({2, 2}, TensorOption().WithDtype(dtype));
    ops::convert(x, h);
    out.push_back({to_string(dtype), h});
  }
  save_safetensors(dir / "h.safetensors", out);
  const NamedTensors back = load_safetensors(dir / "h.safetensors");
  ASSERT_EQ(back.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back[i].second.dtype(), out[i].second.dtype());
    EXPECT_EQ(std::memcmp(back[i].second.data(), out[i].second.data(), 8), 0) << back[i].first;
  }
}

TEST(SafetensorsFormatTest, SaveRejectsBadNames) {
  TempDir dir;
  const Tensor t = Tensor::Zeros({1});
  expect_error([&] { save_safetensors(dir / "a", {{"w", t}, {"w", t}}); }, {"\"w\" appears twice"});
  expect_error([&] { save_safetensors(dir / "a", {{"__metadata__", t}}); }, {"__metadata__"});
  expect_error([&] { save_safetensors(dir / "a", {{"u", Tensor()}}); }, {"\"u\"", "undefined"});
  EXPECT_FALSE(std::ifstream(dir / "a").good());
}

TEST(SafetensorsFormatTest, EveryTruncationIsAnError) {
  TempDir dir;
  save_safetensors(dir / "good", {{"a", Tensor::Ones({3, 3})}, {"b", Tensor::FromI32({1, 2}, {2})}},
                   {{"k", "v"}});
  const std::string good = testing::read_bytes(dir / "good");
  const std::string path = dir / "cut";
  for (size_t size = 0; size < good.size(); ++size) {
    testing::write_bytes(path, good.substr(0, size));
    expect_error([&] { load_safetensors(path); }, {path});
  }
  testing::write_bytes(path, good + "junk");  // and bytes beyond the last tensor
  expect_error([&] { load_safetensors(path); }, {path, "4 bytes of unexpected data"});
}

// Writes `file` to `path` and expects load_safetensors to refuse it with a message naming
// the path and every one of `parts`.
void expect_file_refused(const std::string& path, const std::string& file,
                         const std::vector<std::string>& parts) {
  testing::write_bytes(path, file);
  std::vector<std::string> all = parts;
  all.push_back(path);
  expect_error([&] { load_safetensors(path); }, all);
}

TEST(SafetensorsFormatTest, CorruptHeadersAreClearErrors) {
  TempDir dir;
  const std::string path = dir / "bad";
  auto expect_bad = [&](const std::string& file, const std::vector<std::string>& parts) {
    expect_file_refused(path, file, parts);
  };
  const std::string four_floats(16, '\0');
  expect_bad("short", {"too short"});
  expect_bad(length_prefix(1ull << 62) + "{}",
             {"header length 4611686018427387904", "past the end"});
  expect_bad(length_prefix(1) + "{}", {"not valid JSON"});  // "{" then one byte of data
  expect_bad(make_file("{\"a\": ", ""), {"not valid JSON"});
  expect_bad(make_file("[1, 2]", ""), {"does not start with '{'"});
  expect_bad(make_file("{} trailing", ""), {"not valid JSON"});
  expect_bad(make_file(R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", four_floats),
             {"tensor 'a'", "\"F64\"", "BF16 and F16"});
  expect_bad(make_file(R"({"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}})", "1234"),
             {"shape [3]", "6 bytes", "span 4"});
  expect_bad(make_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", four_floats),
             {"shape [3]", "12 bytes", "span 16"});
  expect_bad(make_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", "12345678"),
             {"tensor 'a'", "beyond the data section (8 bytes)"});
  expect_bad(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                       four_floats),
             {"tensor 'b'", "overlap"});
  expect_bad(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", four_floats),
             {"gap of 8 bytes"});
  expect_bad(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", four_floats),
             {"end before they begin"});
  expect_bad(make_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", four_floats),
             {"non-negative"});
  expect_bad(make_file(R"({"a":{"dtype":"F32","shape":[2]}})", four_floats), {"data_offsets"});
  expect_bad(make_file(R"({"__metadata__":{"k":1}})", ""), {"metadata \"k\" must be a string"});
  expect_bad(make_file(R"({"a":{"dtype":"F32","shape":[1099511627776,1099511627776],)"
                       R"("data_offsets":[0,8]}})",
                       four_floats),
             {"implausibly large"});
  // No elements, but strides of 2^120: refused before contiguous_strides would overflow.
  expect_bad(make_file(R"({"a":{"dtype":"F32","shape":[0,1099511627776,1099511627776,)"
                       R"(1099511627776],"data_offsets":[0,0]}})", ""),
             {"tensor 'a'", "implausibly large"});
  expect_error([&] { load_safetensors(dir / "missing"); }, {dir / "missing", "cannot read"});
}

TEST(SafetensorsFormatTest, HeaderRulesAreTheReferenceLibrarys) {
  TempDir dir;
  const std::string path = dir / "bad";
  auto expect_bad = [&](const std::string& file, const std::vector<std::string>& parts) {
    expect_file_refused(path, file, parts);
  };
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string two_floats(8, '\0');
  // Bytes after a NUL were ignored: the NUL ended nlohmann-json's input.
  expect_bad(make_file("{" + a + std::string(1, '\0') + "junk}", two_floats),
             {"NUL byte at offset 53"});
  expect_bad(make_file("{" + a + "}\n", two_floats, 64), {"byte 10 at offset 54", "only spaces"});
  expect_bad(make_file("{" + a + "}\t", two_floats), {"byte 9", "only spaces"});
  // The last of two equal names won; the first tensor's bytes then counted as a gap.
  expect_bad(make_file("{" + a + "," + a + "}", two_floats + two_floats),
             {"\"a\" appears twice"});
  expect_bad(make_file(R"({"a":{"dtype":"F32","dtype":"I32","shape":[2],"data_offsets":[0,8]}})",
                       two_floats),
             {"\"dtype\" appears twice"});
  expect_bad(make_file(R"({"__metadata__":{"k":"1","k":"2"}})", ""), {"\"k\" appears twice"});
  expect_bad(make_file(R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", two_floats),
             {"empty name"});
  expect_bad(make_file("{\"\xff\"" + a.substr(3) + "}", two_floats),
             {"not valid JSON"});  // a name that is not UTF-8
  expect_bad(make_file(" {" + a + "}", two_floats), {"does not start with '{'"});
  // The reference library refuses a header above 100,000,000 bytes (not 100 MiB). The file
  // is sparse: it is refused before its header would be read.
  testing::write_bytes(path, length_prefix(100'000'001) + "{");
  std::filesystem::resize_file(path, 8 + 100'000'001);
  expect_error([&] { load_safetensors(path); }, {path, "header length 100000001", "100000000"});
  // Equal keys in different objects are fine, and so is padding with spaces.
  testing::write_bytes(path, make_file(R"({"__metadata__":{"a":"x"},)" + a + "}", two_floats, 80));
  std::map<std::string, std::string> meta;
  EXPECT_EQ(load_safetensors(path, &meta).size(), 1u);
  EXPECT_EQ(meta["a"], "x");
}

TEST(SafetensorsFormatTest, AcceptsHeaderPaddingAndEmptyFile) {
  TempDir dir;
  const std::string path = dir / "padded";
  testing::write_bytes(path, make_file(R"({"a":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})",
                                       std::string("\x05\x00\x00\x00", 4), 64));
  const NamedTensors t = load_safetensors(path);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].second.ToVector<int32_t>(), (std::vector<int32_t>{5}));
  save_safetensors(dir / "none", {});
  EXPECT_TRUE(load_safetensors(dir / "none").empty());
}

}  // namespace
}  // namespace zero::io

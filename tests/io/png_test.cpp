// Tests of the PNG writer (zero/io/png.h): what it encodes decodes (with stb_image, see
// tests/support/png_decode.h) to exactly the pixels given, the file is replaced
// atomically, and sizes that do not match the pixels are refused.
#include "zero/io/png.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/data/test_files.h"
#include "tests/support/png_decode.h"

namespace zero::io {
namespace {

using testing::expect_error;
using testing::read_bytes;
using testing::TempDir;

// A width x height image with many colours and sharp edges: every row different.
std::vector<uint8_t> test_pattern(int width, int height) {
  std::vector<uint8_t> rgb;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const bool stripe = (x / 7 + y / 5) % 2 == 0;
      rgb.push_back(static_cast<uint8_t>(x * 255 / width));
      rgb.push_back(static_cast<uint8_t>(stripe ? 255 : y * 255 / height));
      rgb.push_back(static_cast<uint8_t>((x * 31 + y * 17) % 256));
    }
  }
  return rgb;
}

TEST(PngTest, DecodesToThePixelsGiven) {
  for (const auto& [w, h] :
       {std::pair{300, 250}, std::pair{1, 1}, std::pair{7, 1}, std::pair{1, 9}}) {
    const std::vector<uint8_t> rgb = test_pattern(w, h);
    const std::string png = encode_png(w, h, rgb);
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    const testing::DecodedPng d = testing::decode_png(png);
    EXPECT_EQ(d.width, w);
    EXPECT_EQ(d.height, h);
    EXPECT_EQ(d.channels, 3) << "8-bit RGB";
    EXPECT_EQ(d.rgb, rgb) << w << " x " << h;
  }
}

TEST(PngTest, WritePngReplacesTheFileAtomically) {
  const TempDir dir;
  const std::string path = dir / "plot.png";
  write_png(path, 4, 3, std::vector<uint8_t>(4 * 3 * 3, 10));
  const std::vector<uint8_t> rgb = test_pattern(40, 30);
  write_png(path, 40, 30, rgb);  // over the first one
  EXPECT_EQ(read_bytes(path), encode_png(40, 30, rgb));
  EXPECT_EQ(testing::decode_png(read_bytes(path)).rgb, rgb);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.str())) {
    ++files;
    EXPECT_EQ(entry.path().filename().string(), "plot.png") << "a temporary file was left behind";
  }
  EXPECT_EQ(files, 1);
  expect_error([&] { write_png(dir / "no-such-folder/plot.png", 40, 30, rgb); },
               {"no-such-folder/plot.png"});
}

TEST(PngTest, SizesThatDoNotMatchThePixelsAreRefused) {
  expect_error([] { encode_png(0, 5, {}); }, {"positive sizes", "0 x 5"});
  expect_error([] { encode_png(2, 2, std::vector<uint8_t>(11)); }, {"expected 12 bytes", "got 11"});
  expect_error([] { encode_png(1 << 15, 1 << 15, {}); }, {"at most"});
}

}  // namespace
}  // namespace zero::io

// Tests of the PNG writer (zero/train/png.h): the file is read back with a decoder
// written here from the PNG and zlib specifications (bitwise CRC, stored blocks,
// Adler-32), and the decoded pixels must be the canvas's.
#include "zero/train/png.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace zero::train {
namespace {

uint32_t be32(const std::string& s, size_t pos) {
  return (uint32_t{static_cast<uint8_t>(s[pos])} << 24) |
         (uint32_t{static_cast<uint8_t>(s[pos + 1])} << 16) |
         (uint32_t{static_cast<uint8_t>(s[pos + 2])} << 8) | static_cast<uint8_t>(s[pos + 3]);
}

// CRC-32 one bit at a time (no table): an independent check of the library's.
uint32_t crc_bitwise(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (char ch : bytes) {
    crc ^= static_cast<uint8_t>(ch);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

struct Decoded {
  uint32_t width = 0, height = 0;
  int color_type = -1;
  std::vector<uint8_t> palette;  // 3 bytes an entry
  std::vector<uint8_t> raw;      // the inflated IDAT data
};

// Parses a PNG made of stored deflate blocks, checking every CRC, length and checksum.
Decoded decode(const std::string& png) {
  Decoded d;
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::string idat;
  std::vector<std::string> types;
  size_t pos = 8;
  while (pos + 12 <= png.size()) {
    const uint32_t len = be32(png, pos);
    const std::string type = png.substr(pos + 4, 4);
    const std::string data = png.substr(pos + 8, len);
    EXPECT_EQ(be32(png, pos + 8 + len), crc_bitwise(type + data)) << "CRC of chunk " << type;
    types.push_back(type);
    if (type == "IHDR") {
      EXPECT_EQ(len, 13u);
      d.width = be32(data, 0);
      d.height = be32(data, 4);
      EXPECT_EQ(data[8], 8) << "bit depth";
      d.color_type = data[9];
      EXPECT_EQ(data.substr(10), std::string(3, '\0'));
    } else if (type == "PLTE") {
      d.palette.assign(data.begin(), data.end());
    } else if (type == "IDAT") {
      idat += data;
    }
    pos += 12 + len;
  }
  EXPECT_EQ(pos, png.size()) << "bytes after the last chunk";
  EXPECT_FALSE(types.empty());
  EXPECT_EQ(types.front(), "IHDR");
  EXPECT_EQ(types.back(), "IEND");
  // zlib: CMF/FLG with (CMF * 256 + FLG) % 31 == 0, stored blocks, Adler-32.
  EXPECT_GE(idat.size(), 6u);
  EXPECT_EQ((static_cast<uint8_t>(idat[0]) * 256 + static_cast<uint8_t>(idat[1])) % 31, 0);
  EXPECT_EQ(static_cast<uint8_t>(idat[0]) & 0x0F, 8) << "deflate";
  size_t p = 2;
  bool final_block = false;
  while (!final_block && p + 5 <= idat.size()) {
    const uint8_t header = static_cast<uint8_t>(idat[p]);
    final_block = header & 1;
    EXPECT_EQ((header >> 1) & 3, 0) << "only stored blocks are expected";
    const uint16_t len = static_cast<uint8_t>(idat[p + 1]) | static_cast<uint8_t>(idat[p + 2]) << 8;
    const uint16_t nlen = static_cast<uint8_t>(idat[p + 3]) | static_cast<uint8_t>(idat[p + 4])
                                                                  << 8;
    EXPECT_EQ(static_cast<uint16_t>(~len), nlen);
    d.raw.insert(d.raw.end(), idat.begin() + p + 5, idat.begin() + p + 5 + len);
    p += 5 + len;
  }
  EXPECT_TRUE(final_block);
  EXPECT_EQ(p + 4, idat.size());
  uint32_t a = 1, b = 0;
  for (uint8_t byte : d.raw) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  EXPECT_EQ(be32(idat, p), (b << 16) | a) << "Adler-32";
  return d;
}

// The colour of pixel (x, y) of a decoded image.
Rgb pixel(const Decoded& d, uint32_t x, uint32_t y) {
  const size_t bpp = d.color_type == 3 ? 1 : 3;
  const size_t row = y * (1 + d.width * bpp);
  EXPECT_EQ(d.raw[row], 0) << "filter type of row " << y;
  const uint8_t* p = &d.raw[row + 1 + x * bpp];
  if (d.color_type == 3) p = &d.palette[3 * p[0]];
  return {p[0], p[1], p[2]};
}

TEST(PngTest, ChecksumsMatchKnownValues) {
  const char* text = "123456789";
  EXPECT_EQ(crc32(reinterpret_cast<const uint8_t*>(text), 9), 0xCBF43926u);
  EXPECT_EQ(adler32(reinterpret_cast<const uint8_t*>("Wikipedia"), 9), 0x11E60398u);
  // Continuing a checksum over a second piece gives the checksum of the whole.
  EXPECT_EQ(crc32(reinterpret_cast<const uint8_t*>(text) + 4, 5,
                  crc32(reinterpret_cast<const uint8_t*>(text), 4)),
            0xCBF43926u);
}

TEST(PngTest, PaletteImageDecodesToTheCanvas) {
  Canvas c(300, 250, {255, 255, 255});  // 250 rows of 301 bytes: several stored blocks
  c.FillRect(10, 20, 30, 40, {200, 0, 0});
  c.Line(0, 249, 299, 0, {0, 0, 255});
  c.Text(100, 100, "Loss 1.5", {0, 0, 0}, 2);
  const Decoded d = decode(encode_png(c));
  EXPECT_EQ(d.width, 300u);
  EXPECT_EQ(d.height, 250u);
  EXPECT_EQ(d.color_type, 3);
  ASSERT_EQ(d.raw.size(), 250u * 301u);
  for (uint32_t y = 0; y < 250; ++y) {
    for (uint32_t x = 0; x < 300; ++x) {
      ASSERT_EQ(pixel(d, x, y), c.At(x, y)) << "(" << x << ", " << y << ")";
    }
  }
  EXPECT_EQ(c.At(20, 30), (Rgb{200, 0, 0}));
  EXPECT_EQ(c.At(0, 249), (Rgb{0, 0, 255}));
  EXPECT_EQ(c.At(299, 0), (Rgb{0, 0, 255}));
}

TEST(PngTest, ManyColoursGiveAnRgbImage) {
  Canvas c(40, 10);
  for (int x = 0; x < 40; ++x) {
    for (int y = 0; y < 10; ++y)
      c.Set(x, y, {static_cast<uint8_t>(x * 6), static_cast<uint8_t>(y * 20), 7});
  }
  const Decoded d = decode(encode_png(c));  // 400 colours: more than a palette holds
  EXPECT_EQ(d.color_type, 2);
  ASSERT_EQ(d.raw.size(), 10u * (1 + 40u * 3));
  EXPECT_EQ(pixel(d, 39, 9), (Rgb{234, 180, 7}));
}

TEST(PngTest, TextUsesTheFont) {
  Canvas c(40, 20);
  c.Text(1, 1, "1", {0, 0, 0});  // '1': the middle column is set on rows 0..6
  for (int row = 0; row < 7; ++row) EXPECT_EQ(c.At(3, 1 + row), (Rgb{0, 0, 0})) << row;
  EXPECT_EQ(c.At(1, 1), (Rgb{255, 255, 255}));
  EXPECT_EQ(Canvas::TextWidth("ab", 2), 22);
  Canvas lower(40, 20), upper(40, 20);
  lower.Text(0, 0, "step", {0, 0, 0});
  upper.Text(0, 0, "STEP", {0, 0, 0});
  EXPECT_EQ(lower.pixels(), upper.pixels());
}

}  // namespace
}  // namespace zero::train

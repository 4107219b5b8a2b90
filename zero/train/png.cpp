// The raster, its 5x7 bitmap font, and the PNG encoder behind loss_curve.cpp.
//
// Note [A PNG in 100 lines]
// A PNG file is an 8-byte signature and a list of chunks; each chunk is its length
// (4 bytes, big-endian), a 4-letter type, the data, and a CRC-32 of type + data.
// Three or four chunks make an image: IHDR (width, height, bit depth, colour type),
// PLTE (the palette, for a palette image), IDAT (the pixels) and IEND. The pixels are
// rows, each prefixed by a filter byte (0: none), packed into a zlib stream: a 2-byte
// header, deflate data, and an Adler-32 of the uncompressed bytes. Deflate has a mode
// that does not compress at all, "stored" blocks of up to 65535 bytes copied verbatim
// after a 5-byte header, and that is the only mode used here. A palette image keeps the
// file at one byte a pixel (800 x 500 -> ~400 kB) instead of three; a real encoder
// would also run the rows through Huffman coding, which is where zlib's size comes from.
#include "zero/train/png.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "zero/core/error.h"
#include "zero/io/atomic_file.h"

namespace zero::train {

namespace {

// ---------------------------------------------------------------- the font

// Each glyph is 7 rows of 5 pixels; bit 4 of a row is the leftmost pixel.
struct Glyph {
  char c;
  std::array<uint8_t, 7> rows;
};

constexpr Glyph kFont[] = {
    {'0', {0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110}},
    {'1', {0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110}},
    {'2', {0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111}},
    {'3', {0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110}},
    {'4', {0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010}},
    {'5', {0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110}},
    {'6', {0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110}},
    {'7', {0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000}},
    {'8', {0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110}},
    {'9', {0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100}},
    {'A', {0b01110, 0b10001, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001}},
    {'B', {0b11110, 0b10001, 0b10001, 0b11110, 0b10001, 0b10001, 0b11110}},
    {'C', {0b01110, 0b10001, 0b10000, 0b10000, 0b10000, 0b10001, 0b01110}},
    {'D', {0b11100, 0b10010, 0b10001, 0b10001, 0b10001, 0b10010, 0b11100}},
    {'E', {0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b11111}},
    {'F', {0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b10000}},
    {'G', {0b01110, 0b10001, 0b10000, 0b10111, 0b10001, 0b10001, 0b01111}},
    {'H', {0b10001, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001}},
    {'I', {0b01110, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110}},
    {'J', {0b00111, 0b00010, 0b00010, 0b00010, 0b00010, 0b10010, 0b01100}},
    {'K', {0b10001, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010, 0b10001}},
    {'L', {0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b11111}},
    {'M', {0b10001, 0b11011, 0b10101, 0b10101, 0b10001, 0b10001, 0b10001}},
    {'N', {0b10001, 0b10001, 0b11001, 0b10101, 0b10011, 0b10001, 0b10001}},
    {'O', {0b01110, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110}},
    {'P', {0b11110, 0b10001, 0b10001, 0b11110, 0b10000, 0b10000, 0b10000}},
    {'Q', {0b01110, 0b10001, 0b10001, 0b10001, 0b10101, 0b10010, 0b01101}},
    {'R', {0b11110, 0b10001, 0b10001, 0b11110, 0b10100, 0b10010, 0b10001}},
    {'S', {0b01111, 0b10000, 0b10000, 0b01110, 0b00001, 0b00001, 0b11110}},
    {'T', {0b11111, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100}},
    {'U', {0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110}},
    {'V', {0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100}},
    {'W', {0b10001, 0b10001, 0b10001, 0b10101, 0b10101, 0b10101, 0b01010}},
    {'X', {0b10001, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001, 0b10001}},
    {'Y', {0b10001, 0b10001, 0b10001, 0b01010, 0b00100, 0b00100, 0b00100}},
    {'Z', {0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b11111}},
    {'.', {0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b01100}},
    {',', {0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b00100, 0b01000}},
    {':', {0b00000, 0b01100, 0b01100, 0b00000, 0b01100, 0b01100, 0b00000}},
    {'-', {0b00000, 0b00000, 0b00000, 0b11111, 0b00000, 0b00000, 0b00000}},
    {'+', {0b00000, 0b00100, 0b00100, 0b11111, 0b00100, 0b00100, 0b00000}},
    {'=', {0b00000, 0b00000, 0b11111, 0b00000, 0b11111, 0b00000, 0b00000}},
    {'/', {0b00000, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b00000}},
    {'(', {0b00010, 0b00100, 0b01000, 0b01000, 0b01000, 0b00100, 0b00010}},
    {')', {0b01000, 0b00100, 0b00010, 0b00010, 0b00010, 0b00100, 0b01000}},
    {'%', {0b11000, 0b11001, 0b00010, 0b00100, 0b01000, 0b10011, 0b00011}},
    {'_', {0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b11111}},
    {'?', {0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b00000, 0b00100}},
    {' ', {0, 0, 0, 0, 0, 0, 0}},
};

const Glyph& glyph(char c) {
  if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  for (const Glyph& g : kFont) {
    if (g.c == c) return g;
  }
  return glyph('?');
}

// Glyphs are 5 pixels wide with 1 pixel of space after each.
constexpr int kAdvance = 6;

// ---------------------------------------------------------------- PNG bytes

void put_u32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xFF));
}

// length, type, data, CRC-32(type + data)
void put_chunk(std::string& out, const char* type, const std::string& data) {
  put_u32(out, static_cast<uint32_t>(data.size()));
  const std::string body = std::string(type, 4) + data;
  out += body;
  put_u32(out, crc32(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
}

// A zlib stream holding `raw` in stored (uncompressed) deflate blocks.
std::string zlib_stored(const std::vector<uint8_t>& raw) {
  std::string out;
  out.push_back(0x78);  // CMF: deflate, 32 KiB window
  out.push_back(0x01);  // FLG: no dictionary, check bits make 0x7801 a multiple of 31
  constexpr size_t kMaxBlock = 65535;
  size_t pos = 0;
  do {
    const size_t n = std::min(kMaxBlock, raw.size() - pos);
    const bool last = pos + n == raw.size();
    out.push_back(last ? 0x01 : 0x00);  // BFINAL bit, BTYPE = 00 (stored)
    const uint16_t len = static_cast<uint16_t>(n), nlen = static_cast<uint16_t>(~len);
    out.push_back(static_cast<char>(len & 0xFF));  // LEN and NLEN are little-endian
    out.push_back(static_cast<char>(len >> 8));
    out.push_back(static_cast<char>(nlen & 0xFF));
    out.push_back(static_cast<char>(nlen >> 8));
    out.append(reinterpret_cast<const char*>(raw.data()) + pos, n);
    pos += n;
  } while (pos < raw.size());
  put_u32(out, adler32(raw.data(), raw.size()));
  return out;
}

}  // namespace

// ---------------------------------------------------------------- checksums

uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t adler32(const uint8_t* data, size_t size, uint32_t adler) {
  constexpr uint32_t kMod = 65521;  // the largest prime below 2^16
  uint32_t a = adler & 0xFFFF, b = adler >> 16;
  for (size_t i = 0; i < size; ++i) {
    a = (a + data[i]) % kMod;
    b = (b + a) % kMod;
  }
  return (b << 16) | a;
}

// ---------------------------------------------------------------- Canvas

Canvas::Canvas(int width, int height, Rgb background) : width_(width), height_(height) {
  ZERO_CHECK(width > 0 && height > 0, "Canvas: expected positive sizes, got ", width, " x ",
             height);
  pixels_.resize(static_cast<size_t>(width) * height * 3);
  FillRect(0, 0, width - 1, height - 1, background);
}

Rgb Canvas::At(int x, int y) const {
  ZERO_CHECK(x >= 0 && x < width_ && y >= 0 && y < height_, "Canvas::At: (", x, ", ", y,
             ") is outside the ", width_, " x ", height_, " canvas");
  const uint8_t* p = &pixels_[(static_cast<size_t>(y) * width_ + x) * 3];
  return {p[0], p[1], p[2]};
}

void Canvas::Set(int x, int y, Rgb color) {
  if (x < 0 || x >= width_ || y < 0 || y >= height_) return;
  uint8_t* p = &pixels_[(static_cast<size_t>(y) * width_ + x) * 3];
  p[0] = color.r;
  p[1] = color.g;
  p[2] = color.b;
}

void Canvas::FillRect(int x0, int y0, int x1, int y1, Rgb color) {
  for (int y = std::min(y0, y1); y <= std::max(y0, y1); ++y) {
    for (int x = std::min(x0, x1); x <= std::max(x0, x1); ++x) Set(x, y, color);
  }
}

void Canvas::Line(int x0, int y0, int x1, int y1, Rgb color, int thickness) {
  // Bresenham: step along the major axis, carry the error of the minor one.
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  const int lo = -(thickness - 1) / 2, hi = thickness / 2;
  int err = dx + dy;
  while (true) {
    FillRect(x0 + lo, y0 + lo, x0 + hi, y0 + hi, color);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
  }
}

void Canvas::Text(int x, int y, const std::string& text, Rgb color, int scale) {
  for (char c : text) {
    const Glyph& g = glyph(c);
    for (int row = 0; row < 7; ++row) {
      for (int col = 0; col < 5; ++col) {
        if (g.rows[row] & (0x10 >> col)) {
          FillRect(x + col * scale, y + row * scale, x + (col + 1) * scale - 1,
                   y + (row + 1) * scale - 1, color);
        }
      }
    }
    x += kAdvance * scale;
  }
}

int Canvas::TextWidth(const std::string& text, int scale) {
  return text.empty() ? 0 : (static_cast<int>(text.size()) * kAdvance - 1) * scale;
}

// ---------------------------------------------------------------- encoding

std::string encode_png(const Canvas& canvas) {
  const int w = canvas.width(), h = canvas.height();
  const std::vector<uint8_t>& rgb = canvas.pixels();

  // Palette of the colours used, in order of first appearance, if there are <= 256.
  std::map<uint32_t, uint8_t> index_of;
  std::string palette;
  bool indexed = true;
  for (size_t i = 0; i < rgb.size() && indexed; i += 3) {
    const uint32_t key = (uint32_t{rgb[i]} << 16) | (uint32_t{rgb[i + 1]} << 8) | rgb[i + 2];
    if (index_of.count(key) != 0) continue;
    indexed = index_of.size() < 256;  // a 257th colour: write RGB instead
    index_of.emplace(key, static_cast<uint8_t>(index_of.size()));
    palette.append(reinterpret_cast<const char*>(&rgb[i]), 3);
  }
  const int bytes_per_pixel = indexed ? 1 : 3;

  // Rows of filter byte 0 ("None") followed by the pixels.
  std::vector<uint8_t> raw;
  raw.reserve(static_cast<size_t>(h) * (1 + static_cast<size_t>(w) * bytes_per_pixel));
  for (int y = 0; y < h; ++y) {
    raw.push_back(0);
    const uint8_t* row = &rgb[static_cast<size_t>(y) * w * 3];
    for (int x = 0; x < w; ++x) {
      const uint8_t* p = row + 3 * x;
      if (indexed) {
        raw.push_back(index_of.at((uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2]));
      } else {
        raw.insert(raw.end(), p, p + 3);
      }
    }
  }

  std::string ihdr;
  put_u32(ihdr, static_cast<uint32_t>(w));
  put_u32(ihdr, static_cast<uint32_t>(h));
  ihdr.push_back(8);                // bit depth
  ihdr.push_back(indexed ? 3 : 2);  // colour type: 3 palette, 2 RGB
  ihdr.append({'\0', '\0', '\0'});  // deflate, adaptive filtering, no interlace

  std::string png = "\x89PNG\r\n\x1a\n";
  put_chunk(png, "IHDR", ihdr);
  if (indexed) put_chunk(png, "PLTE", palette);
  put_chunk(png, "IDAT", zlib_stored(raw));
  put_chunk(png, "IEND", "");
  return png;
}

void write_png(const std::string& path, const Canvas& canvas) {
  io::write_file_atomically(path, encode_png(canvas));
}

}  // namespace zero::train

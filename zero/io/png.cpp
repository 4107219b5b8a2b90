// encode_png and write_png (png.h): stb_image_write encodes into memory, the one atomic
// writer saves the bytes.
//
// This is the only file that compiles stb_image_write's implementation. STATIC keeps its
// functions private to this file, so they cannot clash with another copy of stb in a
// program that links Zero; NO_STDIO leaves out the functions that would write a file
// themselves, past write_file_atomically.
#include "zero/io/png.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STBI_WRITE_NO_STDIO
#include <stb_image_write.h>

#include "zero/core/error.h"
#include "zero/io/atomic_file.h"

namespace zero::io {
namespace {

// stb counts bytes in `int`; a plot is a few MB, so anything near 2^31 is a mistake.
constexpr size_t kMaxPixelBytes = size_t{1} << 28;

// stb hands the encoded file over through a callback; it lands in a std::string.
void append_to(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data),
                                             static_cast<size_t>(size));
}

}  // namespace

std::string encode_png(int width, int height, const std::vector<uint8_t>& rgb) {
  ZERO_CHECK(width > 0 && height > 0, "encode_png: expected positive sizes, got ", width, " x ",
             height);
  const size_t bytes = static_cast<size_t>(width) * static_cast<size_t>(height) * 3;
  ZERO_CHECK(bytes <= kMaxPixelBytes, "encode_png: expected at most ", kMaxPixelBytes,
             " bytes of pixels, got ", width, " x ", height, " x 3 = ", bytes);
  ZERO_CHECK(rgb.size() == bytes, "encode_png: expected ", bytes, " bytes for ", width, " x ",
             height, " RGB pixels, got ", rgb.size());
  std::string png;
  const int ok = stbi_write_png_to_func(append_to, &png, width, height, 3, rgb.data(), width * 3);
  ZERO_CHECK(ok != 0 && !png.empty(), "encode_png: stb_image_write could not encode the ", width,
             " x ", height, " image (out of memory?)");
  return png;
}

void write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgb) {
  write_file_atomically(path, encode_png(width, height, rgb));
}

}  // namespace zero::io

// Reading a PNG file back, for the tests of what Zero writes as PNG
// (tests/io/png_test.cpp, tests/train/loss_curve_test.cpp): decoded by stb_image, the
// decoder that ships beside the encoder Zero uses (Debian's libstb-dev).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zero::testing {

struct DecodedPng {
  int width = 0, height = 0;
  int channels = 0;          // as stored in the file (3: RGB)
  std::vector<uint8_t> rgb;  // width * height * 3 bytes, rows from the top
};

// Decodes the bytes of a PNG file. Throws zero::Error if stb_image cannot.
DecodedPng decode_png(const std::string& bytes);

}  // namespace zero::testing

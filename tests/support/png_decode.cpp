// decode_png (png_decode.h): stb_image's implementation, compiled here for the tests only.
// STATIC keeps it private to this file; only PNG decoding is compiled in.
#include "tests/support/png_decode.h"

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#include <stb_image.h>

#include "zero/core/error.h"

namespace zero::testing {

DecodedPng decode_png(const std::string& bytes) {
  DecodedPng out;
  stbi_uc* pixels =
      stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                            static_cast<int>(bytes.size()), &out.width, &out.height, &out.channels,
                            3);  // ask for RGB, whatever the file stores
  ZERO_CHECK(pixels != nullptr, "stb_image cannot decode the PNG: ", stbi_failure_reason());
  out.rgb.assign(pixels, pixels + static_cast<size_t>(out.width) * out.height * 3);
  stbi_image_free(pixels);
  return out;
}

}  // namespace zero::testing

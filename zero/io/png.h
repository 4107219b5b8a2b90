/// @file
/// PNG files from RGB pixels, through stb_image_write (Debian's libstb-dev).
///
/// Zero draws one picture, the loss curve (train/loss_curve.h, on a train::Canvas), and
/// needs only this: pixels in, file out. The encoding (deflate, the chunks and their
/// checksums) is stb_image_write's; the file is written like every file Zero saves,
/// through `write_file_atomically` (atomic_file.h). Read next: train/canvas.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zero::io {

/// The bytes of a PNG file showing a `width` x `height` image: 8-bit RGB, `rgb` holding
/// the rows from the top, 3 bytes (R, G, B) a pixel.
/// @throws zero::Error unless both sizes are positive and `rgb` holds width * height * 3
/// bytes, or if the encoder fails.
std::string encode_png(int width, int height, const std::vector<uint8_t>& rgb);

/// Writes `encode_png(width, height, rgb)` to `path` with `write_file_atomically`.
/// @throws zero::Error as `encode_png` does, or if the file cannot be written.
void write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgb);

}  // namespace zero::io

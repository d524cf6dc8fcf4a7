// gui/png_writer.h — a minimal PNG encoder (8-bit RGB or RGBA, zlib-compressed).
//
// Used for the viewer's --screenshot; no OpenGL here, so it is unit-tested.
// Errors: false + one line in *error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringside::gui {

// `pixels`: rows top to bottom, `channels` (3 or 4) bytes per pixel.
bool encodePng(const std::vector<uint8_t>& pixels, int width, int height, int channels,
               std::vector<uint8_t>* out, std::string* error);
bool writePng(const std::string& path, const std::vector<uint8_t>& pixels, int width, int height,
              int channels, std::string* error);

uint32_t crc32Png(const uint8_t* data, size_t size, uint32_t crc = 0);

}  // namespace ringside::gui

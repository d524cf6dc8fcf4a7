#include "ringside/storage/privacy.h"
#include "ringside/gui/png_writer.h"

#include <zlib.h>

#include <array>
#include <string_view>

#include "ringside/fileio/output_file.h"

namespace ringside::gui {
namespace {

const std::array<uint32_t, 256>& crcTable() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  return table;
}

void putU32(std::vector<uint8_t>* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<uint8_t>(v >> shift));
}

void chunk(std::vector<uint8_t>* out, const char type[4], const std::vector<uint8_t>& data) {
  putU32(out, static_cast<uint32_t>(data.size()));
  size_t type_at = out->size();
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(type[i]));
  for (uint8_t b : data) out->push_back(b);
  putU32(out, crc32Png(out->data() + type_at, 4 + data.size()));
}

}  // namespace

uint32_t crc32Png(const uint8_t* data, size_t size, uint32_t crc) {
  const auto& table = crcTable();
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) c = table[(c ^ data[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

bool encodePng(const std::vector<uint8_t>& pixels, int width, int height, int channels,
               std::vector<uint8_t>* out, std::string* error) {
  if (width <= 0 || height <= 0 || (channels != 3 && channels != 4)) {
    *error = "png: bad image shape";
    return false;
  }
  const size_t stride = static_cast<size_t>(width) * static_cast<size_t>(channels);
  if (pixels.size() != stride * static_cast<size_t>(height)) {
    *error = "png: pixel buffer does not match the image size";
    return false;
  }
  // Each scanline: filter byte 0 (none), then the row.
  std::vector<uint8_t> raw;
  raw.reserve((stride + 1) * static_cast<size_t>(height));
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);
    auto row = pixels.begin() + static_cast<std::ptrdiff_t>(stride * static_cast<size_t>(y));
    raw.insert(raw.end(), row, row + static_cast<std::ptrdiff_t>(stride));
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::vector<uint8_t> packed(packed_size);
  if (compress2(packed.data(), &packed_size, raw.data(), static_cast<uLong>(raw.size()), 6) != Z_OK) {
    *error = "png: zlib compression failed";
    return false;
  }
  packed.resize(packed_size);

  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  out->assign(kSignature, kSignature + 8);
  out->reserve(8 + 25 + 12 + packed.size() + 12);
  std::vector<uint8_t> ihdr;
  putU32(&ihdr, static_cast<uint32_t>(width));
  putU32(&ihdr, static_cast<uint32_t>(height));
  ihdr.push_back(8);                        // bit depth
  ihdr.push_back(channels == 4 ? 6 : 2);    // colour type: RGBA / RGB
  ihdr.push_back(0);                        // deflate
  ihdr.push_back(0);                        // adaptive filtering
  ihdr.push_back(0);                        // no interlace
  chunk(out, "IHDR", ihdr);
  chunk(out, "IDAT", packed);
  chunk(out, "IEND", {});
  return true;
}

bool writePng(const std::string& path, const std::vector<uint8_t>& pixels, int width, int height,
              int channels, std::string* error) {
  std::vector<uint8_t> bytes;
  if (!encodePng(pixels, width, height, channels, &bytes, error)) return false;
  // Replaces an earlier screenshot, but only a regular file, never through a link.
  return fileio::writeOutputFile(
      path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
      /*overwrite=*/true, error, /*sync=*/true, storage::outputFileMode());
}

}  // namespace ringside::gui

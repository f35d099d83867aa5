// Small JPEG and PNG files for the tests of the image readers (data/image_file.hpp, image_folder.hpp,
// tar_shards.hpp), written with libpng and TurboJPEG.
#pragma once

#include <gtest/gtest.h>
#include <png.h>
#include <turbojpeg.h>

#include <cstdint>
#include <vector>

namespace sinew::test {

using Bytes = std::vector<std::uint8_t>;

// An h x w RGB image, interleaved (HWC) as the encoders take it; `tag` makes images differ.
inline Bytes rgb_image(int h, int w, int tag) {
  Bytes out;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) out.push_back(static_cast<std::uint8_t>((tag * 50 + c * 80 + y * 9 + x * 5) % 256));
  return out;
}

inline Bytes png_bytes(const Bytes& pixels, int h, int w, bool grey = false) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(w);
  png.height = static_cast<png_uint_32>(h);
  png.format = grey ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  EXPECT_NE(png_image_write_to_memory(&png, nullptr, &size, 0, pixels.data(), 0, nullptr), 0);
  Bytes out(size);
  EXPECT_NE(png_image_write_to_memory(&png, out.data(), &size, 0, pixels.data(), 0, nullptr), 0) << png.message;
  out.resize(size);
  return out;
}

inline Bytes jpeg_bytes(const Bytes& pixels, int h, int w) {
  tjhandle handle = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(handle, pixels.data(), w, 0, h, TJPF_RGB, &jpeg, &size, TJSAMP_444, 100, TJFLAG_ACCURATEDCT),
            0);
  Bytes out(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(handle);
  return out;
}

// Interleaved (HWC) -> CHW, the layout sinew returns.
inline Bytes planes(const Bytes& hwc, int h, int w) {
  Bytes out(hwc.size());
  for (int p = 0; p < h * w; ++p)
    for (int c = 0; c < 3; ++c) out[std::size_t(c * h * w + p)] = hwc[std::size_t(3 * p + c)];
  return out;
}

}  // namespace sinew::test

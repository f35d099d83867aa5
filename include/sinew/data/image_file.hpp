// sinew/data/image_file.hpp: one JPEG or PNG file decoded to 8-bit RGB, CHW (libjpeg-turbo, libpng).
//
// A file's type is told by its first bytes, not its name: FF D8 FF is JPEG (decoded by TurboJPEG, accurate DCT,
// stopping at the first warning, so a truncated file is an error rather than a grey bottom), 89 'PNG' is PNG
// (libpng's simplified API, which converts any colour type and bit depth to 8-bit RGB and drops alpha against
// black, as torchvision's PIL loader does with .convert("RGB") for the colour types CIFAR-like data uses).
// Grey images become three equal planes. Every failure is a data_error naming the file and the fix.
#pragma once

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "sinew/core/error.hpp"

namespace sinew::data {

/// A decoded image: channels x height x width bytes, CHW.
struct Image {
  /// the shape: channels (3: every image is decoded as RGB), height, width
  /// @{
  int channels = 0, height = 0, width = 0;
  /// @}
  /// channels x height x width bytes, CHW
  std::vector<std::uint8_t> pixels;
};

namespace detail {

enum class image_kind { jpeg, png, other };

inline image_kind sniff_image(std::span<const std::uint8_t> bytes) {
  if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) return image_kind::jpeg;
  static constexpr std::uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  if (bytes.size() >= 8 && std::equal(kPng, kPng + 8, bytes.begin())) return image_kind::png;
  return image_kind::other;
}

inline std::vector<std::uint8_t> read_whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw data_error("image: " + path.string() + ": cannot open (missing, or no permission to read it)");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw data_error("image: " + path.string() + ": read failed");
  return bytes;
}

/// HWC RGB -> CHW.
inline void interleaved_to_planes(const std::uint8_t* hwc, int height, int width, std::uint8_t* chw) {
  const std::size_t plane = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  for (std::size_t p = 0; p < plane; ++p)
    for (std::size_t c = 0; c < 3; ++c) chw[c * plane + p] = hwc[3 * p + c];
}

inline void check_dimensions(const std::string& name, int width, int height) {
  if (width <= 0 || height <= 0 || width > 16384 || height > 16384)
    throw data_error("image: " + name + " is " + std::to_string(width) + "x" + std::to_string(height) +
                     ", expected 1..16384 pixels on each side (corrupt header?)");
}

inline Image decode_jpeg(std::span<const std::uint8_t> bytes, const std::string& name) {
  tjhandle handle = tjInitDecompress();
  if (handle == nullptr) throw data_error("image: " + name + ": cannot start TurboJPEG (" + tjGetErrorStr2(nullptr) + ")");
  struct closer {
    tjhandle h;
    ~closer() { tjDestroy(h); }
  } close_at_exit{handle};
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  auto* data = const_cast<unsigned char*>(bytes.data());  // TurboJPEG 2.1 takes const buffers as const
  if (tjDecompressHeader3(handle, data, static_cast<unsigned long>(bytes.size()), &width, &height, &subsampling,
                          &colorspace) != 0)
    throw data_error("image: " + name + ": corrupt JPEG header (" + tjGetErrorStr2(handle) +
                     "; re-encode or remove the file)");
  check_dimensions(name, width, height);
  std::vector<std::uint8_t> rgb(static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 3);
  if (tjDecompress2(handle, data, static_cast<unsigned long>(bytes.size()), rgb.data(), width, 0, height, TJPF_RGB,
                    TJFLAG_ACCURATEDCT | TJFLAG_STOPONWARNING) != 0)
    throw data_error("image: " + name + ": corrupt or truncated JPEG data (" + tjGetErrorStr2(handle) +
                     "; re-encode or remove the file)");
  Image image{3, height, width, std::vector<std::uint8_t>(rgb.size())};
  interleaved_to_planes(rgb.data(), height, width, image.pixels.data());
  return image;
}

inline Image decode_png(std::span<const std::uint8_t> bytes, const std::string& name) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()) == 0)
    throw data_error("image: " + name + ": corrupt PNG header (" + png.message + "; re-encode or remove the file)");
  struct closer {
    png_image* p;
    ~closer() { png_image_free(p); }
  } close_at_exit{&png};
  check_dimensions(name, static_cast<int>(png.width), static_cast<int>(png.height));
  png.format = PNG_FORMAT_RGB;
  std::vector<std::uint8_t> rgb(PNG_IMAGE_SIZE(png));
  png_color black{0, 0, 0};
  if (png_image_finish_read(&png, &black, rgb.data(), 0, nullptr) == 0)
    throw data_error("image: " + name + ": corrupt or truncated PNG data (" + png.message +
                     "; re-encode or remove the file)");
  const int width = static_cast<int>(png.width), height = static_cast<int>(png.height);
  Image image{3, height, width, std::vector<std::uint8_t>(rgb.size())};
  interleaved_to_planes(rgb.data(), height, width, image.pixels.data());
  return image;
}

}  // namespace detail

/// Decodes a JPEG or PNG file's bytes held in memory (a tar shard's member) to 3-channel RGB. `name` is how
/// messages call the image ("shard-000003.tar: 000042.jpg").
inline Image decode_image(std::span<const std::uint8_t> bytes, const std::string& name) {
  if (bytes.empty()) throw data_error("image: " + name + " is empty (0 bytes; an interrupted copy? remove it)");
  switch (detail::sniff_image(bytes)) {
    case detail::image_kind::jpeg:
      return detail::decode_jpeg(bytes, name);
    case detail::image_kind::png:
      return detail::decode_png(bytes, name);
    case detail::image_kind::other:
      break;
  }
  throw data_error("image: " + name + " is neither JPEG nor PNG (its first bytes say otherwise; remove it, " +
                   "or convert it)");
}

/// Decodes the JPEG or PNG file at `path` to 3-channel RGB. `name` is how messages call the file
/// (default: the path as given).
inline Image read_image(const std::filesystem::path& path, const std::string& name = {}) {
  return decode_image(detail::read_whole_file(path), name.empty() ? path.string() : name);
}

}  // namespace sinew::data

// Tests of resize_bilinear (resize.hpp) against torchvision's outputs, and of LoaderOptions::resize_to_*.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sinew/data/cached_loader.hpp"
#include "sinew/data/resize.hpp"
#include "../support/data_files.hpp"

namespace {

using namespace sinew::test;

// The formula tests/reference/make_resize_golden.py generates its inputs with.
std::uint8_t pixel(int c, int y, int x) { return static_cast<std::uint8_t>((37 * c + 11 * y * y + 7 * x + 13 * x * y) % 256); }

std::vector<std::uint8_t> formula_image(int c, int h, int w) {
  std::vector<std::uint8_t> image;
  for (int k = 0; k < c; ++k)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) image.push_back(pixel(k, y, x));
  return image;
}

// PyTorch's kernel orders its float operations its own way: the floats agree to 1e-4 (a few ulps at 255), the
// bytes exactly wherever torchvision's float is not within 1e-3 of a rounding tie (x.5).
TEST(ResizeBilinear, equals_torchvisions_resize_without_antialias) {
  std::ifstream golden(SINEW_GOLDEN_DIR "/resize_bilinear.txt");
  ASSERT_TRUE(golden.good()) << "missing " SINEW_GOLDEN_DIR "/resize_bilinear.txt";
  std::string line;
  std::getline(golden, line);  // the comment naming the versions
  int cases = 0;
  std::size_t bytes_compared = 0, total = 0;
  while (std::getline(golden, line)) {
    std::istringstream shape(line);
    int c = 0, h = 0, w = 0, oh = 0, ow = 0;
    shape >> c >> h >> w >> oh >> ow;
    std::vector<float> floats;
    std::vector<int> bytes;
    std::getline(golden, line);
    std::istringstream float_values(line);
    for (float v = 0; float_values >> v;) floats.push_back(v);
    std::getline(golden, line);
    std::istringstream byte_values(line);
    for (int v = 0; byte_values >> v;) bytes.push_back(v);
    const std::size_t n = std::size_t(c * oh * ow);
    ASSERT_EQ(floats.size(), n);
    ASSERT_EQ(bytes.size(), n);
    const auto in = formula_image(c, h, w);
    std::vector<float> out_floats(n);
    std::vector<std::uint8_t> out_bytes(n);
    sinew::data::resize_bilinear(in.data(), c, h, w, out_floats.data(), oh, ow);
    sinew::data::resize_bilinear(in.data(), c, h, w, out_bytes.data(), oh, ow);
    const std::string where = std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w) + " -> " +
                              std::to_string(oh) + "x" + std::to_string(ow) + ", element ";
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_NEAR(out_floats[i], floats[i], 1e-4f) << where << i;
      const float fraction = floats[i] - std::floor(floats[i]);
      if (std::abs(fraction - 0.5f) > 1e-3f) {
        ASSERT_EQ(int(out_bytes[i]), bytes[i]) << where << i;
        ++bytes_compared;
      }
      ++total;
    }
    ++cases;
  }
  EXPECT_EQ(cases, 6);
  EXPECT_GT(bytes_compared, total * 9 / 10) << "nearly every byte lies away from a tie";
}

TEST(ResizeBilinear, doubling_by_hand) {
  // 1x2 -> 1x4: sources at -0.25 (clamped to 0), 0.25, 0.75, 1.25 (far neighbour clamped): 10, 12.5, 17.5, 20.
  const std::uint8_t in[] = {10, 20};
  std::uint8_t out[4];
  sinew::data::resize_bilinear(in, 1, 1, 2, out, 1, 4);
  EXPECT_EQ(out[0], 10);
  EXPECT_EQ(out[1], 12);  // 12.5 rounds half to even, as torch.round
  EXPECT_EQ(out[2], 18);  // 17.5 too
  EXPECT_EQ(out[3], 20);
}

TEST(ResizeBilinear, loader_resizes_before_padding_and_normalizing) {
  sinew::data::Dataset d;
  d.channels = 2, d.height = 5, d.width = 7, d.num_classes = 1;
  d.pixels = formula_image(2, 5, 7);
  d.labels = {0};
  sinew::data::LoaderOptions o;
  o.batch_size = 1;
  o.resize_to_height = 11, o.resize_to_width = 9;
  o.pad_to_height = 13, o.pad_to_width = 9;
  sinew::data::CachedLoader loader(d, o);
  ASSERT_EQ(loader.height(), 13);
  ASSERT_EQ(loader.width(), 9);
  std::vector<std::uint8_t> resized(2 * 11 * 9);
  sinew::data::resize_bilinear(d.pixels.data(), 2, 5, 7, resized.data(), 11, 9);
  std::vector<float> images(2 * 13 * 9);
  std::vector<std::int32_t> labels(1);
  ASSERT_EQ(loader.next(images, labels), 1u);
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 13; ++y)
      for (int x = 0; x < 9; ++x) {
        const int ry = y - 1;  // one row of padding above and below
        const float expect = ry < 0 || ry >= 11 ? 0.0f : static_cast<float>(resized[std::size_t((c * 11 + ry) * 9 + x)]) / 255.0f;
        ASSERT_EQ(images[std::size_t((c * 13 + y) * 9 + x)], expect) << c << " " << y << " " << x;
      }
}

TEST(ResizeBilinear, half_given_or_negative_sizes_are_errors_naming_the_option) {
  sinew::data::Dataset d;
  d.channels = 1, d.height = 4, d.width = 4, d.num_classes = 1;
  d.pixels.assign(16, 0);
  d.labels = {0};
  sinew::data::LoaderOptions o;
  o.resize_to_height = 8;
  EXPECT_TRUE(contains(data_error_message([&] { sinew::data::CachedLoader l(d, o); }),
                       "resize_to is 8x0; give both sides"));
  o.resize_to_width = 8, o.pad_to_height = 6;
  EXPECT_TRUE(contains(data_error_message([&] { sinew::data::CachedLoader l(d, o); }),
                       "pad_to_height 6 is smaller than the images' height 8"));
}

}  // namespace

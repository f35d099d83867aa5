// Tests of read_image (image_file.hpp) and ImageFolder (image_folder.hpp) on small JPEG and PNG files each test
// writes with libpng and TurboJPEG: decoding, torchvision's layout and class order, bad files named or skipped,
// random resized crops, and StreamingLoader over a folder equal to CachedLoader over its decoded Dataset.
#include <gtest/gtest.h>
#include <png.h>
#include <turbojpeg.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "sinew/data/cached_loader.hpp"
#include "sinew/data/image_file.hpp"
#include "sinew/data/image_folder.hpp"
#include "sinew/data/streaming_loader.hpp"
#include "../support/data_files.hpp"
#include "../support/image_files.hpp"

namespace {

namespace fs = std::filesystem;
using sinew::data::ImageFolder;
using sinew::data::ImageFolderOptions;
using namespace sinew::test;

TEST(ReadImage, png_decodes_exactly_to_rgb_planes_and_grey_to_three_equal_planes) {
  TempDir dir;
  const Bytes rgb = rgb_image(5, 7, 1);
  write_plain(dir / "a.png", png_bytes(rgb, 5, 7));
  const auto image = sinew::data::read_image(dir / "a.png");
  ASSERT_EQ(image.channels, 3);
  ASSERT_EQ(image.height, 5);
  ASSERT_EQ(image.width, 7);
  EXPECT_EQ(image.pixels, planes(rgb, 5, 7));
  Bytes grey(4 * 3);
  for (std::size_t i = 0; i < grey.size(); ++i) grey[i] = static_cast<std::uint8_t>(20 * i);
  write_plain(dir / "g.png", png_bytes(grey, 4, 3, true));
  const auto g = sinew::data::read_image(dir / "g.png");
  ASSERT_EQ(g.pixels.size(), 36u);
  for (int c = 0; c < 3; ++c)
    EXPECT_TRUE(std::equal(grey.begin(), grey.end(), g.pixels.begin() + c * 12)) << "channel " << c;
}

TEST(ReadImage, jpeg_at_quality_100_decodes_close_to_its_source) {
  TempDir dir;
  const Bytes rgb = rgb_image(16, 24, 2);
  write_plain(dir / "a.jpg", jpeg_bytes(rgb, 16, 24));
  const auto image = sinew::data::read_image(dir / "a.jpg");
  ASSERT_EQ(image.height, 16);
  ASSERT_EQ(image.width, 24);
  const Bytes expected = planes(rgb, 16, 24);
  int worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, std::abs(int(image.pixels[i]) - int(expected[i])));
  EXPECT_LE(worst, 4) << "JPEG is lossy, but at quality 100 without subsampling only by a few levels";
}

TEST(ReadImage, empty_truncated_corrupt_and_non_image_files_are_named) {
  TempDir dir;
  write_plain(dir / "empty.png", {});
  Bytes png = png_bytes(rgb_image(32, 32, 3), 32, 32);
  png.resize(png.size() / 2);
  write_plain(dir / "half.png", png);
  Bytes jpeg = jpeg_bytes(rgb_image(32, 32, 4), 32, 32);
  write_plain(dir / "half.jpg", Bytes(jpeg.begin(), jpeg.begin() + std::ptrdiff_t(jpeg.size() / 2)));
  Bytes corrupt = jpeg;
  for (std::size_t i = 4; i < 60; ++i) corrupt[i] = 0x55;  // after SOI, the header's segments overwritten
  write_plain(dir / "corrupt.jpg", corrupt);
  const std::string text = "not an image\n";
  write_plain(dir / "notes.jpg", Bytes(text.begin(), text.end()));
  const auto message = [&](const char* name) { return data_error_message([&] { sinew::data::read_image(dir / name, name); }); };
  EXPECT_TRUE(contains(message("empty.png"), "image: empty.png is empty (0 bytes"));
  EXPECT_TRUE(contains(message("half.png"), "image: half.png: corrupt or truncated PNG data"));
  EXPECT_TRUE(contains(message("half.jpg"), "image: half.jpg: corrupt or truncated JPEG data"));
  const std::string corrupt_message = message("corrupt.jpg");  // TurboJPEG may fail, or read a 0x0 size
  EXPECT_TRUE(contains(corrupt_message, "image: corrupt.jpg"));
  EXPECT_TRUE(contains(corrupt_message, "corrupt"));
  EXPECT_TRUE(contains(message("notes.jpg"), "image: notes.jpg is neither JPEG nor PNG"));
}

// root/b_dog/{1.png, sub/2.jpg}, root/a_cat/{3.png, .DS_Store}, root/c_empty/: classes in sorted order.
void write_folder(const TempDir& dir) {
  fs::create_directories(dir / "root/b_dog/sub");
  fs::create_directories(dir / "root/a_cat");
  fs::create_directories(dir / "root/c_empty");
  write_plain(dir / "root/b_dog/1.png", png_bytes(rgb_image(8, 8, 1), 8, 8));
  write_plain(dir / "root/b_dog/sub/2.jpg", jpeg_bytes(rgb_image(12, 10, 2), 12, 10));
  write_plain(dir / "root/a_cat/3.png", png_bytes(rgb_image(8, 8, 3), 8, 8));
  write_plain(dir / "root/a_cat/.DS_Store", Bytes{1, 2, 3});
}

TEST(ImageFolder, classes_are_sorted_folder_names_and_files_are_found_recursively) {
  TempDir dir;
  write_folder(dir);
  ImageFolder folder(dir / "root", {.height = 8, .width = 8});
  ASSERT_EQ(folder.num_classes(), 3);
  EXPECT_EQ(folder.class_name(0), "a_cat");
  EXPECT_EQ(folder.class_name(1), "b_dog");
  EXPECT_EQ(folder.class_name(2), "c_empty");
  ASSERT_EQ(folder.size(), 3u);
  Bytes pixels(3 * 8 * 8);
  EXPECT_EQ(folder.read(0, pixels), 0);
  EXPECT_EQ(pixels, planes(rgb_image(8, 8, 3), 8, 8)) << "an image of the folder's size is not resized";
  EXPECT_EQ(folder.read(1, pixels), 1);
  EXPECT_EQ(pixels, planes(rgb_image(8, 8, 1), 8, 8));
  EXPECT_EQ(folder.read(2, pixels), 1);
  EXPECT_EQ(folder.path(2).filename(), "2.jpg");
  const auto decoded = sinew::data::read_image(folder.path(2));
  Bytes resized(3 * 8 * 8);
  sinew::data::resize_bilinear(decoded.pixels.data(), 3, 12, 10, resized.data(), 8, 8);
  EXPECT_EQ(pixels, resized) << "a 12x10 image is resized bilinearly to 8x8";
}

TEST(ImageFolder, a_bad_file_fails_its_read_with_the_name_or_is_skipped_and_counted) {
  TempDir dir;
  write_folder(dir);
  write_plain(dir / "root/a_cat/zero.png", {});
  const std::string text = "hello";
  write_plain(dir / "root/b_dog/readme.txt", Bytes(text.begin(), text.end()));
  ImageFolder strict(dir / "root", {.height = 8, .width = 8});
  ASSERT_EQ(strict.size(), 5u);
  Bytes pixels(3 * 8 * 8);
  EXPECT_TRUE(contains(data_error_message([&] { strict.read(1, pixels); }), "image: a_cat/zero.png is empty"));
  sinew::data::LoaderOptions o;
  o.batch_size = 5;
  o.shuffle = false;
  sinew::data::StreamingLoader loader(ImageFolder(dir / "root", {.height = 8, .width = 8}), o, {.workers = 2});
  std::vector<float> images(5 * 3 * 8 * 8);
  std::vector<std::int32_t> labels(5);
  EXPECT_TRUE(contains(data_error_message([&] { loader.next(images, labels); }), "a_cat/zero.png is empty"))
      << "a worker's failure reaches next() with the file named";

  ImageFolder lenient(dir / "root", {.height = 8, .width = 8, .skip_bad_files = true});
  EXPECT_EQ(lenient.size(), 3u);
  EXPECT_EQ(lenient.skipped(), 2u);
  ASSERT_EQ(lenient.skipped_messages().size(), 2u);
  EXPECT_TRUE(contains(lenient.skipped_messages()[1], "b_dog/readme.txt is neither JPEG nor PNG"));
}

TEST(ImageFolder, missing_or_empty_roots_say_what_to_give) {
  TempDir dir;
  EXPECT_TRUE(contains(data_error_message([&] { ImageFolder f(dir / "nowhere"); }), "is not a directory"));
  EXPECT_TRUE(contains(data_error_message([&] { ImageFolder f(dir.path()); }), "holds no sub-folders"));
  fs::create_directories(dir / "cls");
  EXPECT_TRUE(contains(data_error_message([&] { ImageFolder f(dir.path()); }), "holds no image files"));
}

TEST(RandomResizedCrop, windows_fit_respect_scale_and_ratio_and_change_per_epoch_only) {
  const float scale[2] = {0.25f, 1.0f}, ratio[2] = {0.75f, 4.0f / 3.0f};
  std::set<std::pair<int, int>> sizes;
  for (std::size_t i = 0; i < 200; ++i) {
    const auto w = sinew::data::random_resized_crop_window(60, 80, scale, ratio, 7, 0, i);
    ASSERT_GE(w.top, 0);
    ASSERT_GE(w.left, 0);
    ASSERT_LE(w.top + w.height, 60);
    ASSERT_LE(w.left + w.width, 80);
    const double area = double(w.height) * w.width / (60.0 * 80.0);
    EXPECT_GE(area, 0.2) << i;  // 0.25 less rounding
    const double aspect = double(w.width) / w.height;
    EXPECT_GE(aspect, 0.7) << i;
    EXPECT_LE(aspect, 1.4) << i;
    sizes.insert({w.height, w.width});
    const auto again = sinew::data::random_resized_crop_window(60, 80, scale, ratio, 7, 0, i);
    EXPECT_EQ(again.top, w.top);
    EXPECT_EQ(again.width, w.width);
  }
  EXPECT_GT(sizes.size(), 50u);
  int changed = 0;
  for (std::size_t i = 0; i < 20; ++i) {
    const auto a = sinew::data::random_resized_crop_window(60, 80, scale, ratio, 7, 0, i);
    const auto b = sinew::data::random_resized_crop_window(60, 80, scale, ratio, 7, 1, i);
    changed += a.top != b.top || a.left != b.left || a.height != b.height;
  }
  EXPECT_GT(changed, 15);
}

TEST(ImageFolder, streaming_with_random_resized_crops_equals_the_cached_loader_over_the_same_epochs_crops) {
  TempDir dir;
  fs::create_directories(dir / "root/x");
  fs::create_directories(dir / "root/y");
  for (int i = 0; i < 9; ++i)
    write_plain(dir / "root" / (i % 2 ? "x" : "y") / (std::to_string(i) + (i % 3 ? ".png" : ".jpg")),
                i % 3 ? png_bytes(rgb_image(20 + i, 30 - i, i), 20 + i, 30 - i)
                      : jpeg_bytes(rgb_image(20 + i, 30 - i, i), 20 + i, 30 - i));
  const ImageFolderOptions fo{.height = 16, .width = 16, .random_resized_crop = true, .seed = 3};
  sinew::data::LoaderOptions o;
  o.batch_size = 4;
  o.mean = {0.5f, 0.5f, 0.5f};
  sinew::data::StreamingLoader streaming(ImageFolder(dir / "root", fo), o, {.workers = 2});
  const ImageFolder folder(dir / "root", fo);
  std::vector<float> a(4 * 3 * 16 * 16), b(a.size());
  std::vector<std::int32_t> la(4), lb(4);
  for (int epoch : {0, 1}) {
    sinew::data::CachedLoader cached(sinew::data::read_image_folder(folder, epoch), o);
    cached.start_epoch(epoch);
    streaming.start_epoch(epoch);
    for (std::size_t n = 0; (n = cached.next(a, la)) != 0;) {
      ASSERT_EQ(streaming.next(b, lb), n);
      EXPECT_EQ(la, lb);
      EXPECT_EQ(std::memcmp(a.data(), b.data(), n * 3 * 16 * 16 * sizeof(float)), 0) << "epoch " << epoch;
    }
  }
}

}  // namespace

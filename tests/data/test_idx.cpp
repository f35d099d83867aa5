// Tests of sinew/data/idx.hpp on small IDX files each test writes, raw and gzip-compressed.
#include "sinew/data/idx.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../support/address_space.hpp"
#include "../support/data_files.hpp"

namespace {

using sinew::data::Dataset;
using sinew::data::read_idx;
using sinew::data::Split;
using namespace sinew::test;
using Bytes = std::vector<std::uint8_t>;


Bytes idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols, const Bytes& pixels) {
  Bytes out;
  append_big_endian(out, 0x00000803);
  append_big_endian(out, count);
  append_big_endian(out, rows);
  append_big_endian(out, cols);
  out.insert(out.end(), pixels.begin(), pixels.end());
  return out;
}

Bytes idx_labels(const Bytes& labels) {
  Bytes out;
  append_big_endian(out, 0x00000801);
  append_big_endian(out, static_cast<std::uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

// Three 2x3 images: image i holds 10*i + (0..5); labels 7, 0, 9.
const Bytes kPixels{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 255};
const Bytes kLabels{7, 0, 9};

void expect_the_three_known_images(const Dataset& d) {
  EXPECT_EQ(d.channels, 1);
  EXPECT_EQ(d.height, 2);
  EXPECT_EQ(d.width, 3);
  EXPECT_EQ(d.num_classes, 10);
  EXPECT_EQ(d.size(), 3u);
  EXPECT_EQ(d.pixels, kPixels);
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{7, 0, 9}));
}

TEST(ReadIdx, raw_files_decode_to_the_known_pixels_and_labels) {
  TempDir dir;
  write_plain(dir / "images", idx_images(3, 2, 3, kPixels));
  write_plain(dir / "labels", idx_labels(kLabels));
  expect_the_three_known_images(read_idx(dir / "images", dir / "labels"));
}

TEST(ReadIdx, gzip_files_decode_to_the_known_pixels_and_labels) {
  TempDir dir;
  write_gzip(dir / "images.gz", idx_images(3, 2, 3, kPixels));
  write_gzip(dir / "labels.gz", idx_labels(kLabels));
  expect_the_three_known_images(read_idx(dir / "images.gz", dir / "labels.gz"));
}

TEST(ReadIdx, gzip_is_told_by_magic_bytes_not_extension) {
  TempDir dir;
  write_gzip(dir / "images-no-extension", idx_images(3, 2, 3, kPixels));
  write_plain(dir / "labels-plain.gz", idx_labels(kLabels));  // a plain file named .gz
  expect_the_three_known_images(read_idx(dir / "images-no-extension", dir / "labels-plain.gz"));
}

TEST(ReadIdx, num_classes_is_recorded_and_bounds_labels) {
  TempDir dir;
  write_plain(dir / "images", idx_images(3, 2, 3, kPixels));
  write_plain(dir / "labels", idx_labels(kLabels));
  EXPECT_EQ(read_idx(dir / "images", dir / "labels", 12).num_classes, 12);
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "images", dir / "labels", 9); }),
                       "label 9 at index 2 is out of range [0, 9)"));
}

TEST(ReadIdx, swapped_images_and_labels_give_wrong_magic_with_swap_hint) {
  TempDir dir;
  write_gzip(dir / "t10k-images-idx3-ubyte.gz", idx_images(3, 2, 3, kPixels));
  write_gzip(dir / "t10k-labels-idx1-ubyte.gz", idx_labels(kLabels));
  const auto message =
      data_error_message([&] { read_idx(dir / "t10k-labels-idx1-ubyte.gz", dir / "t10k-images-idx3-ubyte.gz"); });
  EXPECT_TRUE(contains(message, "idx: t10k-labels-idx1-ubyte.gz: wrong magic 0x00000801, expected 0x00000803"));
  EXPECT_TRUE(contains(message, "did you swap images and labels?"));
}

TEST(ReadIdx, unknown_magic_names_file_and_value) {
  TempDir dir;
  Bytes images = idx_images(3, 2, 3, kPixels);
  images[2] = 0x0D;  // IDX float elements, which sinew does not read
  write_plain(dir / "float-images", images);
  write_plain(dir / "labels", idx_labels(kLabels));
  const auto message = data_error_message([&] { read_idx(dir / "float-images", dir / "labels"); });
  EXPECT_TRUE(contains(message, "float-images: wrong magic 0x00000D03, expected 0x00000803"));
}

TEST(ReadIdx, truncated_pixel_data_reports_bytes_held_and_promised) {
  TempDir dir;
  Bytes images = idx_images(3, 2, 3, kPixels);
  images.resize(images.size() - 4);
  write_gzip(dir / "cut-images.gz", images);
  write_plain(dir / "labels", idx_labels(kLabels));
  const auto message = data_error_message([&] { read_idx(dir / "cut-images.gz", dir / "labels"); });
  EXPECT_TRUE(contains(message, "cut-images.gz holds 14 bytes of pixel data, header promises 18 (truncated download?)"));
}

TEST(ReadIdx, truncated_label_data_reports_bytes_held_and_promised) {
  TempDir dir;
  write_plain(dir / "images", idx_images(3, 2, 3, kPixels));
  Bytes labels = idx_labels(kLabels);
  labels.pop_back();
  write_plain(dir / "cut-labels", labels);
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "images", dir / "cut-labels"); }),
                       "cut-labels holds 2 bytes of label data, header promises 3"));
}

TEST(ReadIdx, truncated_header_says_too_short) {
  TempDir dir;
  Bytes images = idx_images(3, 2, 3, kPixels);
  images.resize(10);
  write_plain(dir / "stub-images", images);
  write_plain(dir / "labels", idx_labels(kLabels));
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "stub-images", dir / "labels"); }),
                       "stub-images is 10 bytes, too short for the 16-byte header"));
}

TEST(ReadIdx, empty_file_says_empty) {
  TempDir dir;
  write_plain(dir / "images", idx_images(3, 2, 3, kPixels));
  write_plain(dir / "empty-labels", Bytes{});
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "images", dir / "empty-labels"); }),
                       "empty-labels is empty"));
}

TEST(ReadIdx, extra_bytes_after_the_data_are_an_error) {
  TempDir dir;
  Bytes images = idx_images(3, 2, 3, kPixels);
  images.insert(images.end(), {1, 2, 3, 4, 5});
  write_plain(dir / "long-images", images);
  write_gzip(dir / "long-images.gz", images);
  write_plain(dir / "labels", idx_labels(kLabels));
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "long-images", dir / "labels"); }),
                       "long-images has 5 extra bytes after the 18 bytes of pixel data"));
  // A gzip file is inflated only one byte past the promise, so the excess is not counted.
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "long-images.gz", dir / "labels"); }),
                       "long-images.gz inflates to more than the 18 bytes of pixel data the header promises"));
}

// Hostile files: each would cost gigabytes of memory, or end in a bare std::bad_alloc, if the reader trusted it.

/// `member` (a whole gzip file) repeated `times`: one valid multi-member gzip stream, as `cat a.gz b.gz` makes.
Bytes repeated_member(const Bytes& member, int times) {
  Bytes out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), member.begin(), member.end());
  return out;
}

/// The peak resident memory of this process so far, in bytes.
std::uint64_t peak_rss() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return std::uint64_t(usage.ru_maxrss) * 1024;
}

TEST(ReadIdx, a_small_gzip_that_inflates_to_far_more_than_declared_is_read_only_one_byte_past_the_promise) {
  TempDir dir;
  // 512 members of 1 MiB of zeros each: a 0.5 MB file that inflates to 512 MiB after its 18 declared bytes.
  write_gzip(dir / "zeros.gz", Bytes(1u << 20));
  Bytes bomb = sinew::test::read_plain(dir / "zeros.gz");
  write_gzip(dir / "head.gz", idx_images(3, 2, 3, kPixels));
  Bytes file = sinew::test::read_plain(dir / "head.gz");
  const Bytes tail = repeated_member(bomb, 512);
  file.insert(file.end(), tail.begin(), tail.end());
  write_plain(dir / "bomb-images.gz", file);
  write_plain(dir / "labels", idx_labels(kLabels));
  const std::uint64_t before = peak_rss();
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "bomb-images.gz", dir / "labels"); }),
                       "bomb-images.gz inflates to more than the 18 bytes of pixel data"));
  EXPECT_LT(peak_rss() - before, std::uint64_t(64) << 20) << "the reader held far more than the header promises";
}

TEST(ReadIdx, concatenated_gzip_members_are_one_stream) {
  TempDir dir;
  const Bytes images = idx_images(3, 2, 3, kPixels);
  write_gzip(dir / "a.gz", Bytes(images.begin(), images.begin() + 10));
  write_gzip(dir / "b.gz", Bytes(images.begin() + 10, images.end()));
  Bytes joined = sinew::test::read_plain(dir / "a.gz");
  const Bytes b = sinew::test::read_plain(dir / "b.gz");
  joined.insert(joined.end(), b.begin(), b.end());
  write_plain(dir / "images.gz", joined);
  write_plain(dir / "labels", idx_labels(kLabels));
  expect_the_three_known_images(read_idx(dir / "images.gz", dir / "labels"));
}

TEST(ReadIdx, trailing_garbage_after_the_gzip_stream_is_an_error) {
  TempDir dir;
  write_gzip(dir / "images.gz", idx_images(3, 2, 3, kPixels));
  Bytes bytes = sinew::test::read_plain(dir / "images.gz");
  const std::size_t end = bytes.size();
  bytes.insert(bytes.end(), {'j', 'u', 'n', 'k'});
  write_plain(dir / "junk-images.gz", bytes);
  write_plain(dir / "labels", idx_labels(kLabels));
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "junk-images.gz", dir / "labels"); }),
                       "junk-images.gz: bytes after the end of the gzip stream (at byte " + std::to_string(end) +
                           " of the file) are not gzip data"));
}

TEST(ReadIdx, headers_declaring_absurd_sizes_are_refused_before_any_allocation) {
  TempDir dir;
  write_plain(dir / "labels", idx_labels(kLabels));
  // 2^20 x 2^20 x 2^20 = 2^60 bytes of pixels, in a 16-byte file, plain and gzip.
  write_plain(dir / "huge-images", idx_images(1u << 20, 1u << 20, 1u << 20, {}));
  write_gzip(dir / "huge-images.gz", idx_images(1u << 20, 1u << 20, 1u << 20, {}));
  for (const char* f : {"huge-images", "huge-images.gz"})
    EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / f, dir / "labels"); }),
                         std::string(f) + " declares more than 4294967296 bytes of pixel data"));
  // 2^31 labels.
  Bytes labels;
  append_big_endian(labels, 0x00000801);
  append_big_endian(labels, 1u << 31);
  write_plain(dir / "many-labels", labels);
  write_plain(dir / "images", idx_images(3, 2, 3, kPixels));
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "images", dir / "many-labels"); }),
                       "many-labels declares 2147483648 labels"));
  // 60000 images of 28x28 (47 MB) from a .gz of a few dozen bytes: more than deflate can inflate it to.
  write_gzip(dir / "small-images.gz", idx_images(60000, 28, 28, {}));
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "small-images.gz", dir / "labels"); }),
                       "which cannot inflate to the 47040000 bytes of pixel data its header promises"));
  // The same as a plain file: its size tells before reading.
  write_plain(dir / "small-images", idx_images(60000, 28, 28, {}));
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "small-images", dir / "labels"); }),
                       "small-images holds 0 bytes of pixel data, header promises 47040000"));
}

TEST(ReadIdx, allocation_failure_is_a_data_error_naming_the_file) {
  // A sparse 3 GiB file that is exactly what its header promises, read with the address space capped at
  // 1 GiB more than in use: the allocation fails, and the error names the file. In a child process, so the
  // cap stays there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer reserves terabytes of address space, so a cap on it fails the sanitizer first";
#endif
  TempDir dir;
  const auto path = dir / "sparse-images";
  write_plain(path, idx_images(3, 1u << 15, 1u << 15, {}));
  std::filesystem::resize_file(path, 16 + (std::uintmax_t(3) << 30));
  Bytes labels;
  append_big_endian(labels, 0x00000801);
  append_big_endian(labels, 3);
  labels.insert(labels.end(), {0, 1, 2});
  write_plain(dir / "labels", labels);
  sinew::test::expect_data_error_under_address_cap([&] { read_idx(path, dir / "labels"); }, std::uint64_t(1) << 30,
                                                   "sparse-images: cannot allocate 3221225472 bytes");
}

TEST(ReadIdx, label_out_of_range_names_file_value_and_index) {
  TempDir dir;
  write_plain(dir / "images", idx_images(3, 2, 3, kPixels));
  write_plain(dir / "bad-labels", idx_labels({1, 10, 2}));
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "images", dir / "bad-labels"); }),
                       "bad-labels: label 10 at index 1 is out of range [0, 10)"));
}

TEST(ReadIdx, image_and_label_count_mismatch_names_both_files) {
  TempDir dir;
  write_plain(dir / "train-images", idx_images(3, 2, 3, kPixels));
  write_plain(dir / "t10k-labels", idx_labels({1, 2}));
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "train-images", dir / "t10k-labels"); }),
                       "train-images holds 3 images but t10k-labels holds 2 labels"));
}

TEST(ReadIdx, missing_file_says_no_such_file_with_its_path) {
  TempDir dir;
  write_plain(dir / "labels", idx_labels(kLabels));
  const auto message = data_error_message([&] { read_idx(dir / "absent-images.gz", dir / "labels"); });
  EXPECT_TRUE(contains(message, (dir / "absent-images.gz").string() + ": no such file"));
}

TEST(ReadIdx, truncated_gzip_stream_is_an_error) {
  TempDir dir;
  Bytes pixels(5000);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 7919 % 251);
  write_gzip(dir / "whole.gz", idx_images(5, 20, 50, pixels));
  Bytes compressed = sinew::test::read_plain(dir / "whole.gz");
  compressed.resize(compressed.size() / 2);
  write_plain(dir / "half.gz", compressed);
  write_plain(dir / "labels", idx_labels({0, 1, 2, 3, 4}));
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "half.gz", dir / "labels"); }),
                       "idx: half.gz: gzip stream ends early"));
}

TEST(ReadIdx, corrupt_gzip_data_is_an_error) {
  TempDir dir;
  write_plain(dir / "corrupt.gz", Bytes{0x1f, 0x8b, 0x08, 0x00, 'n', 'o', 't', ' ', 'd', 'e', 'f', 'l', 'a', 't', 'e'});
  write_plain(dir / "labels", idx_labels(kLabels));
  EXPECT_TRUE(contains(data_error_message([&] { read_idx(dir / "corrupt.gz", dir / "labels"); }),
                       "idx: corrupt.gz: corrupt gzip data"));
}

TEST(ReadIdx, num_classes_beyond_a_byte_is_rejected) {
  EXPECT_TRUE(contains(data_error_message([] { read_idx("images", "labels", 300); }), "num_classes is 300"));
}

TEST(LoadFashionMnist, finds_the_split_files_by_their_standard_names) {
  TempDir dir;
  write_gzip(dir / "t10k-images-idx3-ubyte.gz", idx_images(3, 2, 3, kPixels));
  write_plain(dir / "t10k-labels-idx1-ubyte", idx_labels(kLabels));  // plain works too
  expect_the_three_known_images(sinew::data::load_fashion_mnist(Split::test, dir.path()));
  EXPECT_TRUE(contains(data_error_message([&] { sinew::data::load_fashion_mnist(Split::train, dir.path()); }),
                       "holds neither train-images-idx3-ubyte.gz nor train-images-idx3-ubyte"));
}

TEST(LoadFashionMnist, missing_directory_names_it_and_the_package) {
  TempDir dir;
  const auto message =
      data_error_message([&] { sinew::data::load_fashion_mnist(Split::train, dir / "not-there"); });
  EXPECT_TRUE(contains(message, (dir / "not-there").string() + " does not exist"));
  EXPECT_TRUE(contains(message, "dataset-fashion-mnist"));
}

}  // namespace

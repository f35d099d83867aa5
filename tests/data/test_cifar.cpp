// Tests of sinew/data/cifar.hpp on small CIFAR-10 and CIFAR-100 binary files each test writes.
#include "sinew/data/cifar.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../support/address_space.hpp"
#include "../support/data_files.hpp"

namespace {

using sinew::data::Cifar100Label;
using sinew::data::Dataset;
using sinew::data::read_cifar10;
using sinew::data::read_cifar100;
using namespace sinew::test;
using Bytes = std::vector<std::uint8_t>;

constexpr std::size_t kImage = 3072;

// The pixel a test record `tag` holds at channel c, row y, column x: every position distinct mod 251.
std::uint8_t pixel(int tag, int c, int y, int x) { return static_cast<std::uint8_t>((tag * 37 + c * 101 + y * 32 + x) % 251); }

void append_record(Bytes& out, const Bytes& label_bytes, int tag) {
  out.insert(out.end(), label_bytes.begin(), label_bytes.end());
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) out.push_back(pixel(tag, c, y, x));
}

Bytes cifar10_file(const std::vector<std::uint8_t>& labels, int first_tag = 0) {
  Bytes out;
  for (std::size_t i = 0; i < labels.size(); ++i) append_record(out, {labels[i]}, first_tag + static_cast<int>(i));
  return out;
}

TEST(ReadCifar10, records_decode_to_rgb_planes_and_labels) {
  TempDir dir;
  write_plain(dir / "data_batch_1.bin", cifar10_file({3, 9, 0}));
  const Dataset d = read_cifar10(dir / "data_batch_1.bin");
  EXPECT_EQ(d.channels, 3);
  EXPECT_EQ(d.height, 32);
  EXPECT_EQ(d.width, 32);
  EXPECT_EQ(d.num_classes, 10);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{3, 9, 0}));
  ASSERT_EQ(d.pixels.size(), 3 * kImage);
  // NCHW: image 1, green plane (c = 1), row 2, column 5.
  EXPECT_EQ(d.pixels[1 * kImage + 1 * 1024 + 2 * 32 + 5], pixel(1, 1, 2, 5));
  EXPECT_EQ(d.pixels[2 * kImage + 2 * 1024 + 31 * 32 + 31], pixel(2, 2, 31, 31));
  EXPECT_EQ(d.pixels[0], pixel(0, 0, 0, 0));
}

TEST(ReadCifar10, several_files_are_joined_in_order_gzip_or_not) {
  TempDir dir;
  write_plain(dir / "data_batch_1.bin", cifar10_file({1, 2}, 0));
  write_gzip(dir / "data_batch_2.bin.gz", cifar10_file({8}, 2));
  const Dataset d = sinew::data::load_cifar10(dir.path(), {"data_batch_1.bin", "data_batch_2.bin.gz"});
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{1, 2, 8}));
  EXPECT_EQ(d.pixels[2 * kImage + 7], pixel(2, 0, 0, 7));
}

TEST(ReadCifar10, size_not_a_multiple_of_the_record_says_truncated) {
  TempDir dir;
  Bytes bytes = cifar10_file({1, 2});
  bytes.pop_back();
  write_plain(dir / "data_batch_3.bin", bytes);
  EXPECT_TRUE(contains(data_error_message([&] { read_cifar10(dir / "data_batch_3.bin"); }),
                       "cifar: data_batch_3.bin is 6145 bytes, expected a multiple of 3073 (truncated download?)"));
}

TEST(ReadCifar10, a_cifar100_file_is_recognised_by_its_record_size) {
  TempDir dir;
  Bytes bytes;
  append_record(bytes, {1, 2}, 0);
  write_plain(dir / "train.bin", bytes);
  EXPECT_TRUE(contains(data_error_message([&] { read_cifar10(dir / "train.bin"); }), "use read_cifar100"));
}

TEST(ReadCifar10, empty_file_says_empty) {
  TempDir dir;
  write_plain(dir / "data_batch_4.bin", Bytes{});
  EXPECT_TRUE(contains(data_error_message([&] { read_cifar10(dir / "data_batch_4.bin"); }),
                       "data_batch_4.bin is empty"));
}

TEST(ReadCifar10, label_out_of_range_names_file_and_record) {
  TempDir dir;
  write_plain(dir / "data_batch_5.bin", cifar10_file({1, 2, 10}));
  EXPECT_TRUE(contains(data_error_message([&] { read_cifar10(dir / "data_batch_5.bin"); }),
                       "data_batch_5.bin: record 2 has label 10, expected 0..9"));
}

TEST(ReadCifar10, missing_file_says_no_such_file) {
  TempDir dir;
  EXPECT_TRUE(contains(data_error_message([&] { read_cifar10(dir / "data_batch_9.bin"); }),
                       "data_batch_9.bin: no such file"));
}

TEST(ReadCifar10, no_files_is_an_error) {
  EXPECT_TRUE(contains(data_error_message([] { read_cifar10(std::span<const std::filesystem::path>{}); }),
                       "no files given"));
}

TEST(ReadCifar100, fine_and_coarse_pick_the_second_and_first_label_byte) {
  TempDir dir;
  Bytes bytes;
  append_record(bytes, {3, 77}, 0);
  append_record(bytes, {19, 99}, 1);
  write_plain(dir / "train.bin", bytes);
  const Dataset fine = read_cifar100(dir / "train.bin", Cifar100Label::fine);
  const Dataset coarse = read_cifar100(dir / "train.bin", Cifar100Label::coarse);
  EXPECT_EQ(fine.num_classes, 100);
  EXPECT_EQ(fine.labels, (std::vector<std::int32_t>{77, 99}));
  EXPECT_EQ(coarse.num_classes, 20);
  EXPECT_EQ(coarse.labels, (std::vector<std::int32_t>{3, 19}));
  EXPECT_EQ(fine.pixels, coarse.pixels);
  EXPECT_EQ(fine.pixels[kImage + 1024 + 3], pixel(1, 1, 0, 3));  // pixels start after both label bytes
}

TEST(ReadCifar100, coarse_label_out_of_range_is_an_error_even_when_reading_fine) {
  TempDir dir;
  Bytes bytes;
  append_record(bytes, {3, 77}, 0);
  append_record(bytes, {20, 5}, 1);
  write_plain(dir / "test.bin", bytes);
  EXPECT_TRUE(contains(data_error_message([&] { read_cifar100(dir / "test.bin", Cifar100Label::fine); }),
                       "test.bin: record 1 has coarse label 20, expected 0..19"));
}

TEST(ReadCifar100, fine_label_out_of_range_is_an_error) {
  TempDir dir;
  Bytes bytes;
  append_record(bytes, {3, 100}, 0);
  write_plain(dir / "test.bin", bytes);
  EXPECT_TRUE(contains(data_error_message([&] { read_cifar100(dir / "test.bin"); }),
                       "record 0 has fine label 100, expected 0..99"));
}

TEST(ReadCifar100, size_not_a_multiple_of_3074_is_an_error) {
  TempDir dir;
  Bytes bytes;
  append_record(bytes, {3, 7}, 0);
  bytes.resize(bytes.size() + 100);
  write_plain(dir / "train.bin", bytes);
  EXPECT_TRUE(contains(data_error_message([&] { read_cifar100(dir / "train.bin"); }),
                       "train.bin is 3174 bytes, expected a multiple of 3074"));
}

// Hostile files: a CIFAR file has no header, so only a bound on its size keeps them from filling the memory.

TEST(ReadCifar10, a_device_such_as_dev_zero_is_refused_before_reading) {
  EXPECT_TRUE(contains(data_error_message([] { read_cifar10("/dev/zero"); }),
                       "cifar: /dev/zero is not a regular file"));
}

TEST(ReadCifar10, a_file_larger_than_the_bound_is_refused_before_reading) {
  TempDir dir;
  const auto path = dir / "huge.bin";
  write_plain(path, cifar10_file({1}));
  std::filesystem::resize_file(path, std::uintmax_t(1) << 40);  // sparse: 1 TiB that takes no disk
  EXPECT_TRUE(contains(data_error_message([&] { read_cifar10(path); }),
                       "huge.bin is 1099511627776 bytes, more than the 131072 records of 3073 bytes"));
}

TEST(ReadCifar10, a_gzip_file_is_read_record_by_record_and_checked_like_a_plain_one) {
  TempDir dir;
  Bytes bytes = cifar10_file({1, 2, 3});
  write_gzip(dir / "three.bin.gz", bytes);
  EXPECT_EQ(read_cifar10(dir / "three.bin.gz").labels, (std::vector<std::int32_t>{1, 2, 3}));
  bytes.pop_back();
  write_gzip(dir / "cut.bin.gz", bytes);
  EXPECT_TRUE(contains(data_error_message([&] { read_cifar10(dir / "cut.bin.gz"); }),
                       "cut.bin.gz is 9218 bytes, expected a multiple of 3073"));
  Bytes junk = sinew::test::read_plain(dir / "three.bin.gz");
  junk.push_back(0);
  write_plain(dir / "junk.bin.gz", junk);
  EXPECT_TRUE(contains(data_error_message([&] { read_cifar10(dir / "junk.bin.gz"); }),
                       "bytes after the end of the gzip stream"));
}

TEST(ReadCifar10, allocation_failure_is_a_data_error_naming_the_file) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer reserves terabytes of address space, so a cap on it fails the sanitizer first";
#endif
  // A sparse file of 100000 records (307 MB, within the bound) read with the address space capped at 64 MiB
  // more than in use. In a child process, so the cap stays there.
  TempDir dir;
  const auto path = dir / "sparse.bin";
  write_plain(path, cifar10_file({1}));
  std::filesystem::resize_file(path, std::uintmax_t(100000) * 3073);
  sinew::test::expect_data_error_under_address_cap([&] { read_cifar10(path); }, std::uint64_t(64) << 20,
                                                   "sparse.bin: cannot allocate memory for its 100000 images");
}

}  // namespace

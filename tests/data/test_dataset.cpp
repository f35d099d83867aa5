// Tests of sinew/data/dataset.hpp: take and concat.
#include "sinew/data/dataset.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "../support/data_files.hpp"

namespace {

using sinew::data::Dataset;
using namespace sinew::test;

// n 1x1x2 images; image i holds bytes {2i, 2i+1} and label i % classes.
Dataset counting_dataset(int n, int classes = 10) {
  Dataset d;
  d.channels = 1;
  d.height = 1;
  d.width = 2;
  d.num_classes = classes;
  for (int i = 0; i < n; ++i) {
    d.pixels.push_back(static_cast<std::uint8_t>(2 * i));
    d.pixels.push_back(static_cast<std::uint8_t>(2 * i + 1));
    d.labels.push_back(i % classes);
  }
  return d;
}

TEST(Dataset, size_and_image_size_follow_labels_and_shape) {
  const Dataset d = counting_dataset(5);
  EXPECT_EQ(d.size(), 5u);
  EXPECT_EQ(d.image_size(), 2u);
}

TEST(Dataset, take_copies_the_middle_samples_and_keeps_the_shape) {
  const Dataset part = sinew::data::take(counting_dataset(5), 1, 3);
  EXPECT_EQ(part.labels, (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(part.pixels, (std::vector<std::uint8_t>{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(part.width, 2);
  EXPECT_EQ(part.num_classes, 10);
}

TEST(Dataset, take_past_the_end_throws_naming_the_range) {
  const auto message = data_error_message([] { sinew::data::take(counting_dataset(5), 3, 3); });
  EXPECT_TRUE(contains(message, "[3, 6)"));
  EXPECT_TRUE(contains(message, "dataset of 5"));
}

TEST(Dataset, concat_joins_samples_in_order) {
  const std::array parts{counting_dataset(2), sinew::data::take(counting_dataset(5), 4, 1)};
  const Dataset joined = sinew::data::concat(parts);
  EXPECT_EQ(joined.labels, (std::vector<std::int32_t>{0, 1, 4}));
  EXPECT_EQ(joined.pixels, (std::vector<std::uint8_t>{0, 1, 2, 3, 8, 9}));
}

TEST(Dataset, concat_of_different_class_counts_throws) {
  const std::array parts{counting_dataset(2, 10), counting_dataset(2, 100)};
  const auto message = data_error_message([&] { sinew::data::concat(parts); });
  EXPECT_TRUE(contains(message, "dataset 1 is 1x1x2 with 100 classes"));
}

TEST(Dataset, concat_of_different_image_shapes_throws) {
  Dataset wider = counting_dataset(1);
  wider.width = 1;
  wider.pixels.resize(1);
  const std::array parts{counting_dataset(2), wider};
  EXPECT_TRUE(contains(data_error_message([&] { sinew::data::concat(parts); }), "all parts must match"));
}

}  // namespace

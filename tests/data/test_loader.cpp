// Tests of the in-memory loaders (cached_loader.hpp, byte_loader.hpp), their options, the epoch order
// (shuffle.hpp) and the Loader concept (loader_spec.hpp), on small in-memory datasets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "sinew/data/cached_loader.hpp"
#include "sinew/data/loader_spec.hpp"
#include "sinew/data/shuffle.hpp"
#include "sinew/data/byte_loader.hpp"
#include "../support/data_files.hpp"
#include "../support/loader_epochs.hpp"

namespace {

using sinew::data::CachedLoader;
using sinew::data::Dataset;
using sinew::data::LoaderOptions;
using sinew::data::ByteLoader;
using namespace sinew::test;

static_assert(sinew::data::LoaderPolicy<sinew::data::example_loader>);
static_assert(sinew::data::LoaderPolicy<CachedLoader>);
static_assert(sinew::data::LoaderPolicy<ByteLoader>);

struct no_next {
  int channels() const { return 1; }
  int height() const { return 1; }
  int width() const { return 1; }
  std::size_t size() const { return 1; }
  int batch_size() const { return 1; }
  std::size_t batches_per_epoch() const { return 1; }
  void start_epoch(int) {}
};
static_assert(sinew::data::req::has_image_shape<no_next> && !sinew::data::req::has_next<no_next>);
static_assert(!sinew::data::LoaderPolicy<no_next>);

// n images of c x h x w; sample i is labelled i (so labels name samples) and byte k of it is (7i + k) % 256.
Dataset indexed_dataset(int n, int c = 1, int h = 2, int w = 3) {
  Dataset d;
  d.channels = c;
  d.height = h;
  d.width = w;
  d.num_classes = n;
  for (int i = 0; i < n; ++i) {
    d.labels.push_back(i);
    for (std::size_t k = 0; k < d.image_size(); ++k) d.pixels.push_back(static_cast<std::uint8_t>((7 * i + k) % 256));
  }
  return d;
}


std::vector<std::int32_t> labels_of(const std::vector<Batch>& batches) {
  std::vector<std::int32_t> labels;
  for (const Batch& b : batches) labels.insert(labels.end(), b.labels.begin(), b.labels.end());
  return labels;
}

std::vector<std::size_t> batch_sizes(const std::vector<Batch>& batches) {
  std::vector<std::size_t> sizes;
  for (const Batch& b : batches) sizes.push_back(b.labels.size());
  return sizes;
}

float normalized(int byte, float mean, float std) { return (static_cast<float>(byte) / 255.0f - mean) / std; }

template <class L>
class AnyLoader : public ::testing::Test {};
using LoaderTypes = ::testing::Types<CachedLoader, ByteLoader>;
struct LoaderName {
  template <class L>
  static std::string GetName(int) {
    return std::is_same_v<L, CachedLoader> ? "Cached" : "Byte";
  }
};
TYPED_TEST_SUITE(AnyLoader, LoaderTypes, LoaderName);

TYPED_TEST(AnyLoader, padding_puts_normalized_zero_in_the_border_and_the_image_centred) {
  const Dataset data = indexed_dataset(1, 1, 2, 3);
  LoaderOptions options;
  options.batch_size = 1;
  options.pad_to_height = 6;  // 2 rows above, 2 below
  options.pad_to_width = 5;   // 1 column each side
  options.mean = {0.5f};
  options.std = {0.25f};
  TypeParam loader(data, options);
  ASSERT_EQ(loader.height(), 6);
  ASSERT_EQ(loader.width(), 5);
  const auto batches = run_epoch(loader, 0);
  ASSERT_EQ(batches.size(), 1u);
  const std::vector<float>& image = batches[0].images;
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 5; ++x) {
      const bool inside = y >= 2 && y < 4 && x >= 1 && x < 4;
      const int byte = inside ? data.pixels[static_cast<std::size_t>((y - 2) * 3 + (x - 1))] : 0;
      EXPECT_FLOAT_EQ(image[static_cast<std::size_t>(y * 5 + x)], normalized(byte, 0.5f, 0.25f))
          << "at y " << y << ", x " << x;
    }
  EXPECT_FLOAT_EQ(image[0], -2.0f);  // raw 0 -> (0 - 0.5) / 0.25
}

TYPED_TEST(AnyLoader, odd_padding_margin_puts_the_extra_pixel_bottom_right) {
  Dataset data = indexed_dataset(1, 1, 1, 1);
  data.pixels = {255};
  LoaderOptions options;
  options.batch_size = 1;
  options.pad_to_height = 2;
  options.pad_to_width = 2;
  TypeParam loader(data, options);
  EXPECT_EQ(run_epoch(loader, 0)[0].images, (std::vector<float>{1.0f, 0.0f, 0.0f, 0.0f}));
}

TYPED_TEST(AnyLoader, normalization_applies_each_channels_mean_and_std_to_x_over_255) {
  const Dataset data = indexed_dataset(3, 2, 2, 2);
  LoaderOptions options;
  options.shuffle = false;
  options.mean = {0.25f, 0.75f};
  options.std = {0.5f, 2.0f};
  TypeParam loader(data, options);
  const auto batches = run_epoch(loader, 0);
  ASSERT_EQ(batches.size(), 1u);
  ASSERT_EQ(batches[0].images.size(), data.pixels.size());
  for (std::size_t k = 0; k < data.pixels.size(); ++k) {
    const std::size_t channel = (k / 4) % 2;
    EXPECT_FLOAT_EQ(batches[0].images[k], normalized(data.pixels[k], options.mean[channel], options.std[channel]))
        << "at float " << k;
  }
}

TYPED_TEST(AnyLoader, without_mean_and_std_pixels_are_x_over_255) {
  Dataset data = indexed_dataset(1, 1, 1, 3);
  data.pixels = {0, 51, 255};
  TypeParam loader(data, LoaderOptions{});
  EXPECT_EQ(run_epoch(loader, 0)[0].images, (std::vector<float>{0.0f, 51.0f / 255.0f, 1.0f}));
}

TYPED_TEST(AnyLoader, images_travel_with_their_labels) {
  const Dataset data = indexed_dataset(20, 1, 2, 3);
  LoaderOptions options;
  options.batch_size = 6;
  TypeParam loader(data, options);
  for (const Batch& b : run_epoch(loader, 2))
    for (std::size_t i = 0; i < b.labels.size(); ++i)
      for (std::size_t k = 0; k < 6; ++k)
        ASSERT_EQ(b.images[i * 6 + k], normalized(data.pixels[static_cast<std::size_t>(b.labels[i]) * 6 + k], 0, 1));
}

TYPED_TEST(AnyLoader, shuffle_is_the_same_for_the_same_seed_and_epoch) {
  const Dataset data = indexed_dataset(50);
  LoaderOptions options;
  options.batch_size = 8;
  options.seed = 42;
  TypeParam first(data, options), second(data, options);
  const auto order = labels_of(run_epoch(first, 3));
  EXPECT_EQ(order, labels_of(run_epoch(second, 3)));
  EXPECT_EQ(order, labels_of(run_epoch(first, 3)));  // and again on the same loader
}

TYPED_TEST(AnyLoader, shuffle_differs_between_epochs_and_between_seeds) {
  const Dataset data = indexed_dataset(50);
  LoaderOptions options;
  options.seed = 42;
  TypeParam loader(data, options);
  options.seed = 43;
  TypeParam other_seed(data, options);
  const auto epoch0 = labels_of(run_epoch(loader, 0));
  EXPECT_NE(epoch0, labels_of(run_epoch(loader, 1)));
  EXPECT_NE(epoch0, labels_of(run_epoch(other_seed, 0)));
}

TYPED_TEST(AnyLoader, each_epoch_visits_every_sample_exactly_once) {
  const Dataset data = indexed_dataset(37);
  LoaderOptions options;
  options.batch_size = 5;
  TypeParam loader(data, options);
  std::vector<std::int32_t> all(37);
  for (int i = 0; i < 37; ++i) all[static_cast<std::size_t>(i)] = i;
  for (int epoch = 0; epoch < 4; ++epoch) {
    auto order = labels_of(run_epoch(loader, epoch));
    EXPECT_NE(order, all) << "epoch " << epoch << " is not shuffled";
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, all) << "epoch " << epoch;
  }
}

TYPED_TEST(AnyLoader, without_shuffle_samples_come_in_dataset_order) {
  const Dataset data = indexed_dataset(7);
  LoaderOptions options;
  options.shuffle = false;
  options.batch_size = 3;
  TypeParam loader(data, options);
  EXPECT_EQ(labels_of(run_epoch(loader, 5)), (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6}));
}

TYPED_TEST(AnyLoader, shards_are_disjoint_cover_the_dataset_and_change_every_epoch) {
  const Dataset data = indexed_dataset(10);
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::multiset<std::int32_t> seen;
    std::vector<std::int32_t> rank0;
    for (int rank = 0; rank < 3; ++rank) {
      LoaderOptions options;
      options.batch_size = 2;
      options.seed = 7;
      options.rank = rank;
      options.world_size = 3;
      TypeParam loader(data, options);
      const auto share = labels_of(run_epoch(loader, epoch));
      EXPECT_EQ(share.size(), rank == 0 ? 4u : 3u) << "rank " << rank;
      EXPECT_EQ(loader.size(), share.size());
      seen.insert(share.begin(), share.end());
      if (rank == 0) rank0 = share;
    }
    std::set<std::int32_t> distinct(seen.begin(), seen.end());
    EXPECT_EQ(seen.size(), 10u) << "epoch " << epoch;
    EXPECT_EQ(distinct.size(), 10u) << "epoch " << epoch << ": shares overlap";
    if (epoch > 0) {
      LoaderOptions options;
      options.seed = 7;
      options.world_size = 3;
      TypeParam loader(data, options);
      EXPECT_NE(labels_of(run_epoch(loader, 0)), rank0) << "rank 0's share did not change in epoch " << epoch;
    }
  }
}

TYPED_TEST(AnyLoader, every_worker_reads_all_gives_each_worker_the_whole_dataset_in_its_own_order) {
  const Dataset data = indexed_dataset(10);
  std::vector<std::int32_t> all(10);
  for (int i = 0; i < 10; ++i) all[static_cast<std::size_t>(i)] = i;
  const auto order = [&](int rank, int epoch, sinew::data::Sharding sharding, int world_size) {
    LoaderOptions options;
    options.batch_size = 3;
    options.seed = 7;
    options.rank = rank;
    options.world_size = world_size;
    options.sharding = sharding;
    TypeParam loader(data, options);
    EXPECT_EQ(loader.size(), 10u);
    EXPECT_EQ(loader.batches_per_epoch(), 4u);
    return labels_of(run_epoch(loader, epoch));
  };
  using sinew::data::Sharding;
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::vector<std::int32_t>> orders;
    for (int rank = 0; rank < 3; ++rank) {
      orders.push_back(order(rank, epoch, Sharding::every_worker_reads_all, 3));
      auto sorted = orders.back();
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(sorted, all) << "rank " << rank << " did not read every sample once in epoch " << epoch;
    }
    EXPECT_NE(orders[0], orders[1]) << "ranks 0 and 1 read in the same order in epoch " << epoch;
    EXPECT_NE(orders[1], orders[2]) << "ranks 1 and 2 read in the same order in epoch " << epoch;
    EXPECT_EQ(orders[1], order(1, epoch, Sharding::every_worker_reads_all, 3)) << "the order must be repeatable";
    // Worker 0 reads in the one-worker order, so one worker gives the same run with either sharding.
    EXPECT_EQ(orders[0], order(0, epoch, Sharding::disjoint, 1));
  }
  EXPECT_NE(order(1, 0, Sharding::every_worker_reads_all, 3), order(1, 1, Sharding::every_worker_reads_all, 3))
      << "rank 1's order did not change between epochs";
}

TYPED_TEST(AnyLoader, every_worker_reads_all_with_drop_last_takes_whole_batches_of_the_whole_dataset) {
  LoaderOptions options;
  options.batch_size = 4;
  options.drop_last = true;
  options.rank = 4, options.world_size = 20;  // more workers than samples: fine when each reads everything
  options.sharding = sinew::data::Sharding::every_worker_reads_all;
  TypeParam loader(indexed_dataset(10), options);
  EXPECT_EQ(loader.size(), 8u);
  EXPECT_EQ(batch_sizes(run_epoch(loader, 0)), (std::vector<std::size_t>{4, 4}));
  const auto labels = labels_of(run_epoch(loader, 0));
  EXPECT_EQ(std::set<std::int32_t>(labels.begin(), labels.end()).size(), 8u) << "a sample came twice";
}

TYPED_TEST(AnyLoader, without_drop_last_the_last_batch_is_short) {
  LoaderOptions options;
  options.batch_size = 4;
  TypeParam loader(indexed_dataset(10), options);
  EXPECT_EQ(loader.size(), 10u);
  EXPECT_EQ(loader.batches_per_epoch(), 3u);
  EXPECT_EQ(batch_sizes(run_epoch(loader, 0)), (std::vector<std::size_t>{4, 4, 2}));
}

TYPED_TEST(AnyLoader, drop_last_drops_the_short_batch) {
  LoaderOptions options;
  options.batch_size = 4;
  options.drop_last = true;
  TypeParam loader(indexed_dataset(10), options);
  EXPECT_EQ(loader.size(), 8u);
  EXPECT_EQ(loader.batches_per_epoch(), 2u);
  EXPECT_EQ(batch_sizes(run_epoch(loader, 0)), (std::vector<std::size_t>{4, 4}));
}

TYPED_TEST(AnyLoader, drop_last_gives_every_rank_as_many_full_batches) {
  const Dataset data = indexed_dataset(11);
  std::set<std::int32_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    LoaderOptions options;
    options.batch_size = 2;
    options.drop_last = true;
    options.rank = rank;
    options.world_size = 3;
    TypeParam loader(data, options);  // 11 / 3 = 3 samples each, one full batch of 2
    EXPECT_EQ(loader.batches_per_epoch(), 1u);
    const auto share = labels_of(run_epoch(loader, 1));
    EXPECT_EQ(share.size(), 2u) << "rank " << rank;
    seen.insert(share.begin(), share.end());
  }
  EXPECT_EQ(seen.size(), 6u) << "shares overlap";
}

TYPED_TEST(AnyLoader, next_returns_zero_after_the_epoch_until_start_epoch) {
  LoaderOptions options;
  options.batch_size = 4;
  TypeParam loader(indexed_dataset(6), options);
  std::vector<float> images(4 * 6);
  std::vector<std::int32_t> labels(4);
  EXPECT_EQ(loader.next(images, labels), 4u);  // a new loader is at the start of epoch 0
  EXPECT_EQ(loader.next(images, labels), 2u);
  EXPECT_EQ(loader.next(images, labels), 0u);
  EXPECT_EQ(loader.next(images, labels), 0u);
  loader.start_epoch(1);
  EXPECT_EQ(loader.next(images, labels), 4u);
}

TYPED_TEST(AnyLoader, start_epoch_mid_epoch_restarts_from_the_first_batch) {
  const Dataset data = indexed_dataset(30);
  LoaderOptions options;
  options.batch_size = 4;
  TypeParam interrupted(data, options), fresh(data, options);
  std::vector<float> images(4 * 6);
  std::vector<std::int32_t> labels(4);
  ASSERT_EQ(interrupted.next(images, labels), 4u);
  ASSERT_EQ(interrupted.next(images, labels), 4u);
  EXPECT_EQ(labels_of(run_epoch(interrupted, 1)), labels_of(run_epoch(fresh, 1)));
}

TYPED_TEST(AnyLoader, a_loader_left_mid_epoch_is_destroyed_cleanly) {
  LoaderOptions options;
  options.batch_size = 2;
  std::vector<float> images(2 * 6);
  std::vector<std::int32_t> labels(2);
  for (int i = 0; i < 20; ++i) {
    TypeParam loader(indexed_dataset(9), options);
    ASSERT_EQ(loader.next(images, labels), 2u);
  }
}

TYPED_TEST(AnyLoader, buffers_smaller_than_a_batch_throw_shape_error) {
  LoaderOptions options;
  options.batch_size = 4;
  TypeParam loader(indexed_dataset(6), options);
  std::vector<float> images(4 * 6 - 1);
  std::vector<std::int32_t> labels(4);
  EXPECT_THROW(loader.next(images, labels), sinew::shape_error);
}

TEST(Loaders, cached_and_byte_batches_are_bit_identical) {
  const Dataset data = indexed_dataset(101, 3, 5, 4);
  for (const bool drop_last : {false, true})
    for (int rank = 0; rank < 2; ++rank) {
      LoaderOptions options;
      options.batch_size = 7;
      options.seed = 1234;
      options.drop_last = drop_last;
      options.pad_to_height = 8;
      options.pad_to_width = 7;
      options.mean = {0.49f, 0.48f, 0.45f};
      options.std = {0.25f, 0.24f, 0.26f};
      options.rank = rank;
      options.world_size = 2;
      CachedLoader cached(data, options);
      ByteLoader streaming(data, options);
      EXPECT_EQ(cached.size(), streaming.size());
      EXPECT_EQ(cached.batches_per_epoch(), streaming.batches_per_epoch());
      for (int epoch : {0, 1, 2, 1}) {
        const auto a = run_epoch(cached, epoch), b = run_epoch(streaming, epoch);
        ASSERT_EQ(a.size(), cached.batches_per_epoch());
        ASSERT_EQ(a.size(), b.size());
        for (std::size_t i = 0; i < a.size(); ++i) {
          EXPECT_EQ(a[i].labels, b[i].labels) << "epoch " << epoch << ", batch " << i;
          ASSERT_EQ(a[i].images.size(), b[i].images.size());
          EXPECT_EQ(std::memcmp(a[i].images.data(), b[i].images.data(), a[i].images.size() * sizeof(float)), 0)
              << "epoch " << epoch << ", batch " << i;
        }
      }
    }
}

TEST(Loaders, byte_loader_matches_cached_when_epochs_restart_at_random_points) {
  const Dataset data = indexed_dataset(200, 1, 3, 3);
  LoaderOptions options;
  options.batch_size = 3;
  CachedLoader cached(data, options);
  ByteLoader streaming(data, options);
  std::vector<float> a_images(27), b_images(27);
  std::vector<std::int32_t> a_labels(3), b_labels(3);
  std::mt19937_64 rng(5);
  for (int epoch = 0; epoch < 40; ++epoch) {
    cached.start_epoch(epoch);
    streaming.start_epoch(epoch);
    const std::uint64_t batches = sinew::data::bounded_uniform(rng, cached.batches_per_epoch() + 2);
    for (std::uint64_t i = 0; i < batches; ++i) {
      const std::size_t n = cached.next(a_images, a_labels);
      ASSERT_EQ(streaming.next(b_images, b_labels), n);
      ASSERT_EQ(a_labels, b_labels) << "epoch " << epoch << ", batch " << i;
      ASSERT_EQ(a_images, b_images) << "epoch " << epoch << ", batch " << i;
    }
  }
}

// Each invalid option: the phrase its error must contain.
// Augmentation. Images whose every pixel differs (byte k of sample i is (7i + k) % 256 with fewer than 256 bytes)
// let a test find the offset and flip each output image was cut with.
struct Cut {
  int dy = 0, dx = 0;
  bool flip = false;
};

// The (dy, dx, flip) whose shifted, maybe mirrored, zero-filled copy of `in` equals `out` exactly; none: nullopt.
std::optional<Cut> find_cut(const std::vector<float>& in, const float* out, int c, int h, int w, int pad,
                            float fill) {
  for (int dy = -pad; dy <= pad; ++dy)
    for (int dx = -pad; dx <= pad; ++dx)
      for (const bool flip : {false, true}) {
        bool same = true;
        for (int ch = 0; ch < c && same; ++ch)
          for (int y = 0; y < h && same; ++y)
            for (int x = 0; x < w && same; ++x) {
              const int sy = y + dy, sx = x + dx;
              const float expect = sy < 0 || sy >= h || sx < 0 || sx >= w ? fill : in[(ch * h + sy) * w + sx];
              same = out[(ch * h + y) * w + (flip ? w - 1 - x : x)] == expect;
            }
        if (same) return Cut{dy, dx, flip};
      }
  return std::nullopt;
}

TYPED_TEST(AnyLoader, random_crop_and_flip_cut_every_image_from_its_padded_original) {
  const int c = 2, h = 5, w = 6, pad = 2;
  const Dataset data = indexed_dataset(60, c, h, w);
  LoaderOptions plain;
  plain.batch_size = 8;
  plain.seed = 5;
  plain.mean = {0.5f, 0.25f};
  LoaderOptions augmented = plain;
  augmented.random_crop_padding = pad;
  augmented.random_horizontal_flip = true;
  CachedLoader originals(data, plain);
  TypeParam loader(data, augmented);
  const auto reference = run_epoch(originals, 0);
  const std::size_t image = std::size_t(c * h * w);
  std::set<std::pair<int, int>> offsets;
  int flips = 0, samples = 0;
  for (int epoch : {0, 1}) {
    const auto batches = run_epoch(loader, epoch);
    for (const Batch& b : batches)
      for (std::size_t i = 0; i < b.labels.size(); ++i) {
        // The original of this sample, found by its label in the plain loader's epoch 0.
        std::vector<float> original;
        for (const Batch& r : reference)
          for (std::size_t j = 0; j < r.labels.size(); ++j)
            if (r.labels[j] == b.labels[i])
              original.assign(r.images.begin() + std::ptrdiff_t(j * image),
                              r.images.begin() + std::ptrdiff_t((j + 1) * image));
        ASSERT_EQ(original.size(), image);
        // Each channel is padded with its own normalized zero; both channels must be cut alike.
        const float* out = b.images.data() + i * image;
        const auto cut0 = find_cut({original.begin(), original.begin() + std::ptrdiff_t(h * w)}, out, 1, h, w, pad,
                                   normalized(0, 0.5f, 1.0f));
        const auto cut1 = find_cut({original.begin() + std::ptrdiff_t(h * w), original.end()},
                                   out + std::size_t(h * w), 1, h, w, pad, normalized(0, 0.25f, 1.0f));
        ASSERT_TRUE(cut0.has_value()) << "epoch " << epoch << ", label " << b.labels[i];
        ASSERT_TRUE(cut1.has_value()) << "epoch " << epoch << ", label " << b.labels[i];
        EXPECT_EQ(cut0->dy, cut1->dy);
        EXPECT_EQ(cut0->dx, cut1->dx);
        EXPECT_EQ(cut0->flip, cut1->flip);
        offsets.insert({cut0->dy, cut0->dx});
        flips += cut0->flip;
        ++samples;
      }
  }
  EXPECT_EQ(samples, 120);
  EXPECT_GE(offsets.size(), 15u) << "120 draws should reach most of the 25 offsets";
  EXPECT_GT(flips, 30) << "about half of 120 images should be mirrored";
  EXPECT_LT(flips, 90);
}

TYPED_TEST(AnyLoader, augmentation_repeats_for_the_same_seed_and_epoch_and_changes_between_epochs) {
  const Dataset data = indexed_dataset(40, 1, 4, 4);
  LoaderOptions options;
  options.batch_size = 40;
  options.shuffle = false;
  options.random_crop_padding = 1;
  options.random_horizontal_flip = true;
  TypeParam a(data, options), b(data, options);
  const auto a0 = run_epoch(a, 0), a1 = run_epoch(a, 1), b0 = run_epoch(b, 0);
  EXPECT_EQ(a0[0].images, b0[0].images);
  EXPECT_NE(a0[0].images, a1[0].images);
  options.seed = 9;
  TypeParam c(data, options);
  EXPECT_NE(run_epoch(c, 0)[0].images, a0[0].images);
}

TEST(Loaders, cached_and_byte_augment_bit_identically) {
  const Dataset data = indexed_dataset(53, 3, 6, 5);
  LoaderOptions options;
  options.batch_size = 6;
  options.seed = 77;
  options.pad_to_height = 8;
  options.mean = {0.49f, 0.48f, 0.45f};
  options.random_crop_padding = 3;
  options.random_horizontal_flip = true;
  CachedLoader cached(data, options);
  ByteLoader streaming(data, options);
  for (int epoch : {0, 3, 1}) {
    const auto a = run_epoch(cached, epoch), b = run_epoch(streaming, epoch);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].labels, b[i].labels);
      EXPECT_EQ(std::memcmp(a[i].images.data(), b[i].images.data(), a[i].images.size() * sizeof(float)), 0)
          << "epoch " << epoch << ", batch " << i;
    }
  }
}

TEST(LoaderOptions, invalid_options_throw_data_error_naming_the_option) {
  const Dataset data = indexed_dataset(10, 3, 4, 4);
  const auto message = [&](auto change) {
    LoaderOptions options;
    change(options);
    return data_error_message([&] { CachedLoader loader(data, options); });
  };
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.batch_size = 0; }), "batch_size is 0"));
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.pad_to_height = 3; }),
                       "pad_to_height 3 is smaller than the images' height 4"));
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.pad_to_width = 2; }), "pad_to_width 2 is smaller"));
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.mean = {0.5f}; }),
                       "mean has 1 values but the images have 3 channels"));
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.std = {1, 1}; }), "std has 2 values"));
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.std = {1, 0, 1}; }), "std[1] is 0"));
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.std = {1, 1, -2}; }), "every std must be positive"));
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.rank = 4, o.world_size = 4; }),
                       "rank 4 is out of range for world_size 4"));
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.rank = -1; }), "rank -1 is out of range"));
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.world_size = 0; }), "world_size is 0"));
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.world_size = 11; }), "10 samples cannot be shared by 11"));
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.batch_size = 6, o.drop_last = true, o.world_size = 2; }),
                       "no full batch of 6"));
  EXPECT_TRUE(contains(message([](LoaderOptions& o) { o.random_crop_padding = -1; }), "random_crop_padding is -1"));
}

TEST(LoaderOptions, inconsistent_datasets_are_rejected) {
  Dataset empty = indexed_dataset(0);
  EXPECT_TRUE(contains(data_error_message([&] { ByteLoader loader(empty, {}); }), "dataset is empty"));
  Dataset short_pixels = indexed_dataset(4);
  short_pixels.pixels.pop_back();
  EXPECT_TRUE(contains(data_error_message([&] { CachedLoader loader(short_pixels, {}); }), "expected 24"));
  Dataset bad_label = indexed_dataset(4);
  bad_label.labels[2] = 4;
  EXPECT_TRUE(contains(data_error_message([&] { ByteLoader loader(bad_label, {}); }),
                       "label 4 of sample 2 is out of range [0, 4)"));
}

TEST(EpochPermutation, is_a_permutation_for_every_small_size) {
  for (std::size_t n = 0; n < 40; ++n) {
    auto order = sinew::data::epoch_permutation(n, 9, 1);
    std::sort(order.begin(), order.end());
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(order[i], i) << "n " << n;
  }
}

// The order depends only on std::mt19937_64, which the standard fixes: these values must hold on every
// platform and standard library (an independent Python MT19937-64 gives the same). If they change, every saved run's data order changes with them.
TEST(EpochPermutation, seed_0_epoch_0_of_10_is_fixed_across_platforms) {
  EXPECT_EQ(sinew::data::epoch_permutation(10, 0, 0), (std::vector<std::size_t>{6, 1, 2, 4, 7, 5, 3, 0, 9, 8}));
}

TEST(BoundedUniform, stays_below_the_bound_and_reaches_every_value) {
  std::mt19937_64 rng(3);
  std::vector<int> hits(7);
  for (int i = 0; i < 7000; ++i) {
    const std::uint64_t x = sinew::data::bounded_uniform(rng, 7);
    ASSERT_LT(x, 7u);
    ++hits[x];
  }
  for (int h : hits) EXPECT_GT(h, 850);  // 1000 expected; 850 is over 4 standard deviations below
  EXPECT_EQ(sinew::data::bounded_uniform(rng, 1), 0u);
}

TEST(ExampleLoader, yields_batches_of_two_then_the_remainder) {
  sinew::data::example_loader loader(5);
  EXPECT_EQ(batch_sizes(run_epoch(loader, 0)), (std::vector<std::size_t>{2, 2, 1}));
  EXPECT_EQ(loader.batches_per_epoch(), 3u);
}

}  // namespace

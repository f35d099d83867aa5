// Tests of TarShards (tar_shards.hpp, its tar reader detail/tar_reader.hpp) and StreamingLoader over shards
// (shard_views.hpp), on small shards each test writes: ustar, GNU long names and pax headers; samples grouped by
// key; bad shards and members named or skipped and counted; shards dealt to ranks, a seeded shuffle buffer, the
// same batches for any number of workers and loader; and scripts/pack-shards (Python's tarfile) read
// back equal to ImageFolder over the same folder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sinew/data/image_folder.hpp"
#include "sinew/data/streaming_loader.hpp"
#include "sinew/data/tar_shards.hpp"
#include "../support/data_files.hpp"
#include "../support/image_files.hpp"
#include "../support/loader_epochs.hpp"
#include "../support/tar_files.hpp"

namespace {

namespace fs = std::filesystem;
using sinew::data::LoaderOptions;
using sinew::data::ShardSample;
using sinew::data::StreamingLoader;
using sinew::data::StreamingOptions;
using sinew::data::TarShards;
using sinew::data::TarShardsOptions;
using namespace sinew::test;

TarShardsOptions four_by_four(int classes = 3) {
  TarShardsOptions o;
  o.num_classes = classes;
  o.image.height = o.image.width = 4;
  return o;
}

std::vector<ShardSample> read_all(const TarShards& shards, std::size_t shard) {
  std::vector<ShardSample> out;
  auto cursor = shards.open(shard);
  for (ShardSample s; cursor.next(s);) out.push_back(s);
  return out;
}

TEST(TarShards, members_sharing_a_key_are_one_sample_in_ustar_gnu_long_names_and_pax) {
  TempDir dir;
  const std::string long_key = "train/" + std::string(120, 'n') + "/0";
  TarWriter tar;
  tar.add("train/", {}, TarWriter::long_name::none, '5');  // a directory: passed over
  tar.add("a.png", sample_png(0));
  tar.add("a.cls", text("2\n"));
  tar.add("a.json", text("{}"));                               // another member of the sample: passed over
  tar.add("b.cls", text("1"));                                 // the class before the image
  tar.add("b.PNG", sample_png(1));
  tar.add(long_key + ".png", sample_png(2), TarWriter::long_name::gnu);
  tar.add(long_key + ".cls", text("0"), TarWriter::long_name::pax);
  write_plain(dir / "shard-000000.tar", tar.finish());

  const TarShards shards(dir.path(), four_by_four());
  ASSERT_EQ(shards.size(), 3u);
  ASSERT_EQ(shards.shards(), 1u);
  const auto samples = read_all(shards, 0);
  ASSERT_EQ(samples.size(), 3u);
  EXPECT_EQ(samples[0].label, 2);
  EXPECT_EQ(samples[1].label, 1);
  EXPECT_EQ(samples[2].label, 0);
  EXPECT_EQ(samples[2].name, "shard-000000.tar: " + long_key + ".png");
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(samples[i].index, i);
    Bytes pixels(3 * 4 * 4);
    EXPECT_EQ(shards.decode(samples[i], pixels, 0), samples[i].label);
    EXPECT_EQ(pixels, planes(rgb_image(4, 4, static_cast<int>(i)), 4, 4)) << i;
  }
}

TEST(TarShards, bad_shards_and_samples_are_named_or_skipped_and_counted) {
  TempDir dir;
  write_png_shards(dir.path(), 4, 1, 3);
  // shard 1: a sample without .cls, one without image, a class out of range, one that does not decode, one good.
  TarWriter tar;
  tar.add("x0.png", sample_png(10));
  tar.add("x1.cls", text("1"));
  tar.add("x2.png", sample_png(12));
  tar.add("x2.cls", text("7"));
  tar.add("x3.png", text("not an image"));
  tar.add("x3.cls", text("0"));
  tar.add("x4.png", sample_png(14));
  tar.add("x4.cls", text("2"));
  write_plain(dir / "shard-000001.tar", tar.finish());

  const auto refused = [&](const std::string& phrase) {
    try {
      TarShards shards(dir.path(), four_by_four());
      ADD_FAILURE() << "no error, expected one saying " << phrase;
    } catch (const sinew::data_error& e) {
      EXPECT_TRUE(contains(e.what(), phrase));
      EXPECT_TRUE(contains(e.what(), "shard-000001.tar"));
    }
  };
  refused("sample x0 has no x0.cls");

  auto options = four_by_four();
  options.image.skip_bad_files = true;
  const TarShards skipping(dir.path(), options);
  EXPECT_EQ(skipping.size(), 4u);  // shard 0's three and x4
  EXPECT_EQ(skipping.shard_size(1), 1u);
  ASSERT_EQ(skipping.skipped(), 4u);
  EXPECT_TRUE(contains(skipping.skipped_messages()[1], "sample x1 has no image"));
  EXPECT_TRUE(contains(skipping.skipped_messages()[2], "x2.cls says class 7, outside [0, 3)"));
  EXPECT_TRUE(contains(skipping.skipped_messages()[3], "shard-000001.tar: x3.png is neither JPEG nor PNG"));
  const auto kept = read_all(skipping, 1);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].name, "shard-000001.tar: x4.png");
  EXPECT_EQ(kept[0].index, 3u);

  // Without skipping, an image that does not decode fails decode() with shard and member.
  TarWriter undecodable;
  undecodable.add("y.png", text("not an image"));
  undecodable.add("y.cls", text("0"));
  write_plain(dir / "shard-000001.tar", undecodable.finish());
  const TarShards lazy(dir.path(), four_by_four());
  const auto y = read_all(lazy, 1);
  Bytes pixels(48);
  try {
    lazy.decode(y.at(0), pixels, 0);
    ADD_FAILURE() << "decoded text";
  } catch (const sinew::data_error& e) {
    EXPECT_TRUE(contains(e.what(), "shard-000001.tar: y.png"));
  }
}

TEST(TarShards, a_truncated_or_corrupt_shard_is_named_and_skipping_keeps_the_samples_before_the_cut) {
  TempDir dir;
  write_png_shards(dir.path(), 4, 1, 4);
  Bytes whole = read_plain(dir / "shard-000000.tar");
  // Cut inside the third sample's image: the first two are whole.
  std::size_t cut = 0;
  {
    TarWriter prefix;
    prefix.add("s0/0.png", sample_png(0));
    prefix.add("s0/0.cls", text("0"));
    prefix.add("s0/1.png", sample_png(1));
    prefix.add("s0/1.cls", text("1"));
    cut = prefix.bytes().size() + 512 + 10;  // the third image's header and 10 bytes of its data
  }
  write_plain(dir / "shard-000000.tar", Bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut)));
  try {
    TarShards shards(dir.path(), four_by_four());
    ADD_FAILURE() << "a truncated shard was read";
  } catch (const sinew::data_error& e) {
    EXPECT_TRUE(contains(e.what(), "shard-000000.tar is truncated"));
    EXPECT_TRUE(contains(e.what(), "s0/2.png"));
  }
  auto options = four_by_four();
  options.image.skip_bad_files = true;
  const TarShards kept(dir.path(), options);
  EXPECT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept.skipped(), 1u);
  EXPECT_EQ(read_all(kept, 0).size(), 2u);

  whole[148] ^= 1;  // the first header's checksum
  write_plain(dir / "shard-000000.tar", whole);
  try {
    TarShards shards(dir.path(), four_by_four());
    ADD_FAILURE() << "a corrupt header was read";
  } catch (const sinew::data_error& e) {
    EXPECT_TRUE(contains(e.what(), "shard-000000.tar: the header at byte 0 is corrupt"));
  }
  EXPECT_THROW(TarShards(dir / "none", four_by_four()), sinew::data_error);
  EXPECT_THROW(TarShards(dir.path(), TarShardsOptions{}), sinew::data_error);  // num_classes not given
}

// An epoch's batches, as run_epoch takes them.
using Epoch = std::vector<Batch>;

std::vector<std::vector<float>> images_of(const Epoch& e) {
  std::vector<std::vector<float>> out;
  for (const Batch& b : e) out.push_back(b.images);
  return out;
}

std::vector<std::int32_t> labels_of(const Epoch& e) {
  std::vector<std::int32_t> out;
  for (const Batch& b : e) out.insert(out.end(), b.labels.begin(), b.labels.end());
  return out;
}

// The sample numbers of an epoch in order: sample k's first pixel is rgb_image(.., k)'s first byte / 255, which
// differs for k < 128.
std::vector<int> sample_order(const Epoch& e, int samples) {
  std::map<float, int> which;
  for (int k = 0; k < samples; ++k) which[float(rgb_image(4, 4, k)[0]) / 255.0f] = k;
  std::vector<int> seen;
  for (const Batch& batch : e)
    for (std::size_t i = 0; i < batch.images.size(); i += 48) seen.push_back(which.at(batch.images[i]));
  return seen;
}

std::multiset<int> samples_seen(const Epoch& e, int samples) {
  const auto order = sample_order(e, samples);
  return {order.begin(), order.end()};
}

static_assert(sinew::data::LoaderPolicy<StreamingLoader<TarShards>>);  // a trainer takes it

TEST(StreamingLoaderOverShards, same_batches_for_any_workers_every_sample_once_and_a_new_order_each_epoch) {
  TempDir dir;
  write_png_shards(dir.path(), 4, 5, 4);
  LoaderOptions options;
  options.batch_size = 3;
  options.seed = 7;
  StreamingOptions streaming;
  streaming.shuffle_buffer = 6;
  std::vector<Epoch> runs;
  for (int workers : {0, 1, 3}) {
    streaming.workers = workers;
    StreamingLoader loader(TarShards(dir.path(), four_by_four()), options, streaming);
    EXPECT_EQ(loader.size(), 20u);
    EXPECT_EQ(loader.batches_per_epoch(), 7u);
    runs.push_back(run_epoch(loader, 1));
    if (workers == 3) {
      const Epoch again = run_epoch(loader, 1), next = run_epoch(loader, 2);
      EXPECT_EQ(images_of(again), images_of(runs.back()));
      EXPECT_NE(labels_of(next), labels_of(runs.back()));
    }
  }
  for (std::size_t r : {1, 2}) {
    EXPECT_EQ(images_of(runs[0]), images_of(runs[r]));
    EXPECT_EQ(labels_of(runs[0]), labels_of(runs[r]));
  }
  std::multiset<int> all;
  for (int k = 0; k < 20; ++k) all.insert(k);
  EXPECT_EQ(samples_seen(runs[0], 20), all);
  const auto order = sample_order(runs[0], 20);
  std::vector<std::int32_t> expected;
  for (int k : order) expected.push_back(k % 3);
  EXPECT_EQ(labels_of(runs[0]), expected);
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(order, sorted);  // shuffled
}

TEST(StreamingLoaderOverShards, ranks_take_dealt_shards_and_equally_many_samples_the_same_on_every_loader) {
  TempDir dir;
  write_png_shards(dir.path(), 4, 5, 4);
  LoaderOptions options;
  options.batch_size = 4;
  options.world_size = 2;
  std::set<int> shards_of[2];
  for (int rank : {0, 1}) {
    options.rank = rank;
    StreamingLoader loader(TarShards(dir.path(), four_by_four()), options,
                           {.workers = 2, .prefetch_batches = 2, .shuffle_buffer = 3});
    EXPECT_EQ(loader.size(), 10u);  // 20 samples / 2 ranks, though the 5 shards deal 3 to one rank and 2 to the other
    const Epoch whole = run_epoch(loader, 3);
    const auto seen = samples_seen(whole, 20);
    EXPECT_EQ(seen.size(), 10u);
    for (int k : seen) shards_of[rank].insert(k / 4);
    // Another loader of this rank, with other workers, reads the very same epoch (what a resumed trainer relies on:
    // io/test_checkpoint.cpp resumes one mid-epoch).
    StreamingLoader resumed(TarShards(dir.path(), four_by_four()), options,
                            {.workers = 1, .prefetch_batches = 1, .shuffle_buffer = 3});
    EXPECT_EQ(images_of(run_epoch(resumed, 3)), images_of(whole));
  }
  // Whole shards are dealt: the ranks' shards are disjoint and together all five.
  std::set<int> all_shards = shards_of[0];
  all_shards.insert(shards_of[1].begin(), shards_of[1].end());
  EXPECT_EQ(all_shards.size(), shards_of[0].size() + shards_of[1].size());
  EXPECT_EQ(all_shards.size(), 5u);
  // Without a shuffle, shards and samples come in order: rank 0 reads shards 0, 2, 4 and stops after 10 samples.
  options.rank = 0;
  options.shuffle = false;
  StreamingLoader ordered(TarShards(dir.path(), four_by_four()), options, {});
  const auto first = samples_seen(run_epoch(ordered, 0), 20);
  EXPECT_EQ(first, (std::multiset<int>{0, 1, 2, 3, 8, 9, 10, 11, 16, 17}));
  options.world_size = 6;
  EXPECT_THROW(StreamingLoader(TarShards(dir.path(), four_by_four()), options, {}), sinew::data_error);  // 5 shards
  // every_worker_reads_all: each rank reads every shard, in an order of its own.
  options.sharding = sinew::data::Sharding::every_worker_reads_all;
  options.shuffle = true;
  options.world_size = 2;
  std::vector<int> orders[2];
  for (int rank : {0, 1}) {
    options.rank = rank;
    StreamingLoader all(TarShards(dir.path(), four_by_four()), options,
                        {.workers = 1, .prefetch_batches = 1, .shuffle_buffer = 3});
    EXPECT_EQ(all.size(), 20u);
    orders[rank] = sample_order(run_epoch(all, 0), 20);
    std::vector<int> sorted = orders[rank];
    std::sort(sorted.begin(), sorted.end());
    for (int k = 0; k < 20; ++k) EXPECT_EQ(sorted[std::size_t(k)], k);
  }
  EXPECT_NE(orders[0], orders[1]);
}

// scripts/pack-shards (Python's tarfile, pax and GNU formats, long member names) read back: the same images and
// classes as ImageFolder over the folder it packed.
TEST(PackShards, packs_an_image_folder_that_tar_shards_read_back_as_image_folder_reads_it) {
  if (std::system("/usr/bin/python3 -c 'import tarfile' > /dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  TempDir dir;
  int k = 0;
  for (const char* cls : {"cat", "dog", "emu"})
    for (int i = 0; i < 3; ++i, ++k) {
      fs::create_directories(dir / "folder" / cls);
      write_plain(dir / "folder" / cls / (std::to_string(i) + ".png"), sample_png(k));
    }
  const sinew::data::ImageFolder folder(dir / "folder", {.height = 4, .width = 4});
  for (const char* format : {"pax", "gnu"}) {
    const fs::path out = dir / format;
    const std::string command = std::string("/usr/bin/python3 ") + SINEW_SOURCE_DIR + "/scripts/pack-shards " +
                                (dir / "folder").string() + " " + out.string() + " --per-shard 4 --format " +
                                format + " --key-prefix " + std::string(110, 'k') + "/ > /dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    const TarShards shards(out, four_by_four());
    ASSERT_EQ(shards.shards(), 3u);  // 4 + 4 + 1
    ASSERT_EQ(shards.size(), folder.size());
    // Each shard sample equals one folder image with its class; together they are the folder's images.
    std::vector<Bytes> from_shards, from_folder;  // each image's pixels, then its class
    for (std::size_t s = 0; s < shards.shards(); ++s)
      for (const auto& sample : read_all(shards, s)) {
        Bytes pixels(48);
        pixels.push_back(static_cast<std::uint8_t>(shards.decode(sample, std::span(pixels.data(), 48), 0)));
        from_shards.push_back(pixels);
      }
    for (std::size_t i = 0; i < folder.size(); ++i) {
      Bytes pixels(48);
      pixels.push_back(static_cast<std::uint8_t>(folder.read(i, std::span(pixels.data(), 48))));
      from_folder.push_back(pixels);
    }
    // In an order of their own (by FNV-1a: GCC 12 warns falsely on comparing byte vectors lexicographically).
    const auto by_hash = [](const Bytes& a, const Bytes& b) {
      const auto fnv = [](const Bytes& v) {
        std::uint64_t h = 14695981039346656037ull;
        for (std::uint8_t c : v) h = (h ^ c) * 1099511628211ull;
        return h;
      };
      return fnv(a) < fnv(b);
    };
    std::sort(from_shards.begin(), from_shards.end(), by_hash);
    std::sort(from_folder.begin(), from_folder.end(), by_hash);
    EXPECT_EQ(from_shards, from_folder) << format;
  }
}

}  // namespace

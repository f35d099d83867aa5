// Tests of StreamingLoader (streaming_loader.hpp) and its record sources (cifar_records.hpp, idx_records.hpp):
// on small CIFAR and IDX files each test writes, its batches equal CachedLoader's bit for bit over the same
// files, for every worker count, rank and sharding; a record that cannot be read reaches the caller with its
// file named; the destructor joins its workers mid-epoch.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "sinew/data/any_loader.hpp"
#include "sinew/data/cached_loader.hpp"
#include "sinew/data/cifar.hpp"
#include "sinew/data/cifar_records.hpp"
#include "sinew/data/idx.hpp"
#include "sinew/data/idx_records.hpp"
#include "sinew/data/record_source_spec.hpp"
#include "sinew/data/streaming_loader.hpp"
#include "../support/data_files.hpp"
#include "../support/loader_epochs.hpp"

namespace {

namespace fs = std::filesystem;
using sinew::data::CachedLoader;
using sinew::data::CifarRecords;
using sinew::data::IdxRecords;
using sinew::data::LoaderOptions;
using sinew::data::StreamingLoader;
using sinew::data::StreamingOptions;
using namespace sinew::test;
using Bytes = std::vector<std::uint8_t>;

static_assert(sinew::data::LoaderPolicy<StreamingLoader<CifarRecords>>);
static_assert(sinew::data::LoaderPolicy<StreamingLoader<IdxRecords>>);
static_assert(sinew::data::RecordSource<sinew::data::example_record_source>);

// `count` random CIFAR records with `label_bytes` label bytes each, labels below the given class counts.
Bytes cifar_file(std::size_t count, std::size_t label_bytes, std::uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes out;
  for (std::size_t r = 0; r < count; ++r) {
    if (label_bytes == 2) out.push_back(static_cast<std::uint8_t>(rng() % 20));
    out.push_back(static_cast<std::uint8_t>(rng() % (label_bytes == 2 ? 100 : 10)));
    for (int k = 0; k < 3 * 32 * 32; ++k) out.push_back(static_cast<std::uint8_t>(rng()));
  }
  return out;
}


// An IDX images/labels pair of `count` random rows x cols images.
void write_idx_pair(const fs::path& images, const fs::path& labels, std::uint32_t count, std::uint32_t rows,
                    std::uint32_t cols, bool gzip) {
  std::mt19937 rng(count);
  Bytes im, lb;
  append_big_endian(im, 0x803), append_big_endian(im, count), append_big_endian(im, rows), append_big_endian(im, cols);
  append_big_endian(lb, 0x801), append_big_endian(lb, count);
  for (std::uint32_t i = 0; i < count; ++i) {
    lb.push_back(static_cast<std::uint8_t>(rng() % 10));
    for (std::uint32_t k = 0; k < rows * cols; ++k) im.push_back(static_cast<std::uint8_t>(rng()));
  }
  if (gzip) {
    write_gzip(images, im), write_gzip(labels, lb);
  } else {
    write_plain(images, im), write_plain(labels, lb);
  }
}


void expect_same_epochs(CachedLoader& cached, auto& streaming, const std::string& what) {
  ASSERT_EQ(cached.size(), streaming.size()) << what;
  ASSERT_EQ(cached.batches_per_epoch(), streaming.batches_per_epoch()) << what;
  for (int epoch : {0, 2, 1}) {
    const auto a = run_epoch(cached, epoch), b = run_epoch(streaming, epoch);
    ASSERT_EQ(a.size(), cached.batches_per_epoch()) << what;
    ASSERT_EQ(a.size(), b.size()) << what;
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a[i].labels, b[i].labels) << what << ", epoch " << epoch << ", batch " << i;
      ASSERT_EQ(a[i].images.size(), b[i].images.size());
      ASSERT_EQ(std::memcmp(a[i].images.data(), b[i].images.data(), a[i].images.size() * sizeof(float)), 0)
          << what << ", epoch " << epoch << ", batch " << i;
    }
  }
}

LoaderOptions cifar_options() {
  LoaderOptions o;
  o.batch_size = 8;
  o.seed = 42;
  o.mean = {0.49f, 0.48f, 0.45f};
  o.std = {0.25f, 0.24f, 0.26f};
  return o;
}

TEST(StreamingLoader, cifar10_batches_equal_the_cached_loaders_for_every_worker_count_rank_and_sharding) {
  TempDir dir;
  const std::vector<fs::path> files{dir / "a.bin", dir / "b.bin"};
  write_plain(files[0], cifar_file(23, 1, 1));
  write_plain(files[1], cifar_file(30, 1, 2));
  const auto data = sinew::data::read_cifar10(files);
  for (const bool augment : {false, true})
    for (const auto sharding : {sinew::data::Sharding::disjoint, sinew::data::Sharding::every_worker_reads_all})
      for (const int world : {1, 3})
        for (int rank = 0; rank < world; ++rank)
          for (const int workers : {0, 1, 3}) {
            LoaderOptions o = cifar_options();
            o.rank = rank, o.world_size = world, o.sharding = sharding;
            o.drop_last = rank == 1;  // with and without a short last batch
            if (augment) o.random_crop_padding = 4, o.random_horizontal_flip = true;
            CachedLoader cached(data, o);
            StreamingLoader streaming(CifarRecords::cifar10(files), o, {.workers = workers, .prefetch_batches = 2});
            expect_same_epochs(cached, streaming,
                               std::string(augment ? "augmented" : "plain") + ", rank " + std::to_string(rank) +
                                   " of " + std::to_string(world) + ", sharding " +
                                   std::to_string(static_cast<int>(sharding)) + ", " + std::to_string(workers) +
                                   " workers");
          }
}

TEST(StreamingLoader, cifar100_fine_and_coarse_gzip_or_not_equal_the_cached_loaders) {
  TempDir dir;
  const Bytes bytes = cifar_file(19, 2, 3);
  write_plain(dir / "train.bin", bytes);
  write_gzip(dir / "train.bin.gz", bytes);
  for (const auto label : {sinew::data::Cifar100Label::fine, sinew::data::Cifar100Label::coarse})
    for (const char* name : {"train.bin", "train.bin.gz"}) {
      const std::vector<fs::path> files{dir / name};
      CachedLoader cached(sinew::data::read_cifar100(files, label), cifar_options());
      StreamingLoader streaming(CifarRecords::cifar100(files, label), cifar_options(), {.workers = 2});
      EXPECT_EQ(streaming.source().num_classes(), label == sinew::data::Cifar100Label::fine ? 100 : 20);
      expect_same_epochs(cached, streaming, name);
    }
}

TEST(StreamingLoader, idx_plain_and_gzip_batches_equal_the_cached_loaders_resized_and_padded) {
  TempDir dir;
  for (const bool gzip : {false, true}) {
    const fs::path images = dir / (gzip ? "i.gz" : "i"), labels = dir / (gzip ? "l.gz" : "l");
    write_idx_pair(images, labels, 45, 5, 6, gzip);
    LoaderOptions o;
    o.batch_size = 4;
    o.resize_to_height = 7, o.resize_to_width = 9;  // and resized on the workers
    o.pad_to_height = 8, o.pad_to_width = 9;
    o.mean = {0.3f};
    o.random_crop_padding = 2;
    CachedLoader cached(sinew::data::read_idx(images, labels), o);
    StreamingLoader streaming(IdxRecords(images, labels), o, {.workers = 2, .prefetch_batches = 3});
    expect_same_epochs(cached, streaming, gzip ? "gzip" : "plain");
  }
}

TEST(StreamingLoader, fashion_mnist_records_find_the_gzip_or_plain_split_as_load_fashion_mnist_does) {
  TempDir dir;
  write_idx_pair(dir / "t10k-images-idx3-ubyte.gz", dir / "t10k-labels-idx1-ubyte", 30, 4, 4, false);
  write_idx_pair(dir / "t10k-images-idx3-ubyte.gz", dir / "t10k-labels-idx1-ubyte.gz", 30, 4, 4, true);
  LoaderOptions o;
  o.batch_size = 7;
  CachedLoader cached(sinew::data::load_fashion_mnist(sinew::data::Split::test, dir.path()), o);
  StreamingLoader streaming(sinew::data::fashion_mnist_records(sinew::data::Split::test, dir.path()), o);
  expect_same_epochs(cached, streaming, "fashion-mnist t10k");
  EXPECT_TRUE(contains(
      data_error_message([&] { sinew::data::fashion_mnist_records(sinew::data::Split::train, dir.path()); }),
      "holds neither train-images-idx3-ubyte.gz nor train-images-idx3-ubyte"));
}

TEST(StreamingLoader, matches_the_cached_loader_when_epochs_restart_mid_epoch) {
  TempDir dir;
  const std::vector<fs::path> files{dir / "a.bin"};
  write_plain(files[0], cifar_file(41, 1, 5));
  LoaderOptions o = cifar_options();
  o.batch_size = 3;
  CachedLoader cached(sinew::data::read_cifar10(files), o);
  StreamingLoader streaming(CifarRecords::cifar10(files), o, {.workers = 3, .prefetch_batches = 4});
  const std::size_t image = 3 * 32 * 32;
  std::vector<float> a_images(3 * image), b_images(3 * image);
  std::vector<std::int32_t> a_labels(3), b_labels(3);
  std::mt19937_64 rng(7);
  for (int epoch = 0; epoch < 12; ++epoch) {
    cached.start_epoch(epoch);
    streaming.start_epoch(epoch);
    const std::uint64_t batches = rng() % (cached.batches_per_epoch() + 2);
    for (std::uint64_t i = 0; i < batches; ++i) {
      const std::size_t n = cached.next(a_images, a_labels);
      ASSERT_EQ(streaming.next(b_images, b_labels), n);
      ASSERT_EQ(a_labels, b_labels) << "epoch " << epoch << ", batch " << i;
      ASSERT_EQ(a_images, b_images) << "epoch " << epoch << ", batch " << i;
    }
  }
}

// Record 30 of b.bin carries label 12: the worker that reads it throws, and next() of its batch (not an
// earlier one) passes the error on with the file and record named, for every worker count.
TEST(StreamingLoader, a_record_that_fails_reaches_next_of_its_batch_with_the_file_named) {
  TempDir dir;
  const std::vector<fs::path> files{dir / "a.bin", dir / "b.bin"};
  write_plain(files[0], cifar_file(20, 1, 1));
  Bytes bad = cifar_file(40, 1, 2);
  bad[30 * 3073] = 12;
  write_plain(files[1], bad);
  for (const int workers : {0, 1, 3}) {
    LoaderOptions o;
    o.batch_size = 5;
    o.shuffle = false;  // record 50 of 60 is in batch 10
    StreamingLoader loader(CifarRecords::cifar10(files), o, {.workers = workers, .prefetch_batches = 4});
    std::vector<float> images(5 * 3 * 32 * 32);
    std::vector<std::int32_t> labels(5);
    for (int b = 0; b < 10; ++b) ASSERT_EQ(loader.next(images, labels), 5u) << workers << " workers, batch " << b;
    const std::string message = data_error_message([&] { loader.next(images, labels); });
    EXPECT_TRUE(contains(message, "cifar: b.bin: record 30 has label 12, expected 0..9")) << workers << " workers";
    EXPECT_TRUE(contains(data_error_message([&] { loader.next(images, labels); }), "b.bin"))
        << "the error stays until start_epoch";
    loader.start_epoch(0);
    EXPECT_EQ(loader.next(images, labels), 5u) << "start_epoch clears the error";
  }
}

TEST(StreamingLoader, bad_files_are_named_when_opened) {
  TempDir dir;
  Bytes short_file = cifar_file(3, 1, 1);
  short_file.pop_back();
  write_plain(dir / "short.bin", short_file);
  write_plain(dir / "empty.bin", {});
  write_plain(dir / "c100.bin", cifar_file(3, 2, 1));
  EXPECT_TRUE(contains(data_error_message([&] { CifarRecords::cifar10(std::vector<fs::path>{dir / "short.bin"}); }),
                       "cifar: short.bin is 9218 bytes, expected a multiple of 3073 (truncated download?)"));
  EXPECT_TRUE(contains(data_error_message([&] { CifarRecords::cifar10(std::vector<fs::path>{dir / "empty.bin"}); }),
                       "empty.bin is empty"));
  EXPECT_TRUE(contains(data_error_message([&] { CifarRecords::cifar10(std::vector<fs::path>{dir / "c100.bin"}); }),
                       "a CIFAR-100 file? use CifarRecords::cifar100"));
  EXPECT_TRUE(contains(data_error_message([&] { CifarRecords::cifar10(std::vector<fs::path>{dir / "none.bin"}); }),
                       "none.bin: no such file"));
  write_idx_pair(dir / "i", dir / "l", 4, 3, 3, false);
  write_idx_pair(dir / "i5", dir / "l5", 5, 3, 3, false);
  EXPECT_TRUE(contains(data_error_message([&] { IdxRecords(dir / "l", dir / "i"); }),
                       "did you swap images and labels?"));
  EXPECT_TRUE(contains(data_error_message([&] { IdxRecords(dir / "i", dir / "l5"); }),
                       "i holds 4 images but l5 holds 5 labels"));
  Bytes truncated = sinew::test::read_plain(dir / "i");
  truncated.pop_back();
  write_gzip(dir / "t.gz", truncated);
  EXPECT_TRUE(contains(data_error_message([&] { IdxRecords(dir / "t.gz", dir / "l"); }),
                       "idx: t.gz holds 35 bytes of pixel data, header promises 36 (truncated download?)"));
}

TEST(StreamingLoader, invalid_streaming_options_name_the_option) {
  TempDir dir;
  const std::vector<fs::path> files{dir / "a.bin"};
  write_plain(files[0], cifar_file(4, 1, 1));
  EXPECT_TRUE(contains(data_error_message([&] { StreamingLoader l(CifarRecords::cifar10(files), {}, {.workers = -1}); }),
                       "workers is -1"));
  EXPECT_TRUE(contains(
      data_error_message([&] { StreamingLoader l(CifarRecords::cifar10(files), {}, {.prefetch_batches = 0}); }),
      "prefetch_batches is 0"));
}

// Run under -fsanitize=thread once (see the report of the branch that added it): every thread is joined,
// also while workers are blocked on a full window or busy filling.
TEST(StreamingLoader, destructor_joins_the_workers_mid_epoch) {
  TempDir dir;
  const std::vector<fs::path> files{dir / "a.bin"};
  write_plain(files[0], cifar_file(64, 1, 9));
  LoaderOptions o;
  o.batch_size = 4;
  std::vector<float> images(4 * 3 * 32 * 32);
  std::vector<std::int32_t> labels(4);
  for (int taken = 0; taken < 6; ++taken) {
    StreamingLoader loader(CifarRecords::cifar10(files), o, {.workers = 3, .prefetch_batches = 2});
    for (int b = 0; b < taken; ++b) ASSERT_EQ(loader.next(images, labels), 4u);
    if (taken % 2 == 1) loader.start_epoch(1);  // and right after a restart
  }
}

TEST(StreamingLoader, times_split_waiting_from_hidden_work) {
  TempDir dir;
  const std::vector<fs::path> files{dir / "a.bin"};
  write_plain(files[0], cifar_file(32, 1, 9));
  LoaderOptions o;
  o.batch_size = 8;
  StreamingLoader inline_loader(CifarRecords::cifar10(files), o, {.workers = 0});
  run_epoch(inline_loader, 0);
  EXPECT_GT(inline_loader.times().waited, 0.0);
  EXPECT_EQ(inline_loader.times().prepared, 0.0) << "no workers: all of it is waiting";
  StreamingLoader threaded(CifarRecords::cifar10(files), o, {.workers = 2});
  run_epoch(threaded, 0);
  const auto t = threaded.times();
  EXPECT_GT(t.prepared, 0.0);
  EXPECT_GE(t.hidden(), 0.0);
  EXPECT_LE(t.hidden(), t.prepared);
  threaded.start_epoch(1);
  EXPECT_EQ(threaded.times().waited, 0.0) << "start_epoch starts a new split";
}

TEST(AnyLoader, forwards_to_the_loader_it_holds_and_its_times) {
  TempDir dir;
  const std::vector<fs::path> files{dir / "a.bin"};
  write_plain(files[0], cifar_file(21, 1, 4));
  LoaderOptions o = cifar_options();
  o.batch_size = 5;
  CachedLoader cached(sinew::data::read_cifar10(files), o);
  auto any = sinew::data::AnyLoader::make<StreamingLoader<CifarRecords>>("streaming", CifarRecords::cifar10(files), o,
                                                                         StreamingOptions{.workers = 0});
  EXPECT_EQ(any.name(), "streaming");
  EXPECT_EQ(any.batches_per_epoch(), 5u);
  expect_same_epochs(cached, any, "AnyLoader");
  EXPECT_GT(any.times().waited, 0.0);
  auto any_cached = sinew::data::AnyLoader::make<CachedLoader>("cached", sinew::data::read_cifar10(files), o);
  run_epoch(any_cached, 0);
  EXPECT_EQ(any_cached.times().waited, 0.0) << "CachedLoader keeps no times";
}

}  // namespace

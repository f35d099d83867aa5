// The presets are only names: each is the Trainer a program would write out, and swapping one of its policies
// gives the hand-written Trainer with that policy (static_assert). At run time: the options and loaders each
// preset hands out.
#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>

#include "sinew/nets/lenet5.hpp"
#include "sinew/presets.hpp"

namespace {

using sinew::Async;
using sinew::Sync;
using sinew::Trainer;
using Net = sinew::nets::LeNet5<>;
using Mpi = sinew::comm::Mpi;
namespace backend = sinew::backend;
namespace data = sinew::data;
namespace dist = sinew::dist;
namespace optim = sinew::optim;
namespace presets = sinew::presets;

// Each preset is the Trainer written out.
static_assert(
    std::is_same_v<presets::TensorFlow<Net, Sync>::trainer_type,
                   Trainer<Net, backend::Eigen, dist::RingAllReduce<Mpi>, Sync, optim::Sgd, data::CachedLoader>>);
static_assert(
    std::is_same_v<presets::TensorFlow<Net, Async>::trainer_type,
                   Trainer<Net, backend::Eigen, dist::ParameterServer<Mpi, 3>, Async, optim::Sgd, data::CachedLoader>>);
static_assert(std::is_same_v<presets::PyTorch<Net>::trainer_type,
                             Trainer<Net, backend::OneDnn, dist::RingAllReduce<Mpi>, Sync, optim::Sgd,
                                     data::StreamingLoader<data::CifarRecords>>>);
static_assert(std::is_same_v<presets::MXNet<Net, Sync>::trainer_type,
                             Trainer<Net, backend::OneDnn, dist::ParameterServer<Mpi, 3>, Sync, optim::Sgd,
                                     data::StreamingLoader<data::CifarRecords>>>);
static_assert(std::is_same_v<presets::MXNet<Net, Async, 2>::trainer_type,
                             Trainer<Net, backend::OneDnn, dist::ParameterServer<Mpi, 2>, Async, optim::Sgd,
                                     data::StreamingLoader<data::CifarRecords>>>);
static_assert(
    std::is_same_v<presets::ChainerMN<Net>::trainer_type,
                   Trainer<Net, backend::OneDnn, dist::MpiAllReduce<Mpi>, Sync, optim::Sgd, data::CachedLoader>>);
using OneBitMpi = dist::Compressed<dist::MpiAllReduce<Mpi>, sinew::compress::OneBit>;
static_assert(std::is_same_v<presets::CNTK<Net>::trainer_type,
                             Trainer<Net, backend::OneDnn, OneBitMpi, Sync, optim::Sgd, data::CachedLoader>>);
static_assert(std::is_same_v<presets::CNTK<Net>::without_one_bit,
                             presets::CNTK<Net>::with_strategy<dist::MpiAllReduce<Mpi>>>);
static_assert(std::is_same_v<presets::CNTK<Net>::without_one_bit::strategy, presets::ChainerMN<Net>::strategy_type>);

// Each is a Trainer that can be built: its class instantiates (the strategy accepts the mode, the loader is one).
static_assert(sizeof(presets::TensorFlow<Net, Sync>::trainer_type) > 0);
static_assert(sizeof(presets::TensorFlow<Net, Async>::trainer_type) > 0);
static_assert(sizeof(presets::PyTorch<Net>::trainer_type) > 0);
static_assert(sizeof(presets::MXNet<Net, Sync>::trainer_type) > 0);
static_assert(sizeof(presets::MXNet<Net, Async>::trainer_type) > 0);
static_assert(sizeof(presets::ChainerMN<Net>::trainer_type) > 0);
static_assert(sizeof(presets::CNTK<Net>::trainer_type) > 0);

// Swapping one policy gives the hand-written Trainer with that policy, and swapping it back the preset.
using TF = presets::TensorFlow<Net, Sync>;
static_assert(
    std::is_same_v<TF::with_backend<backend::OneDnn>,
                   Trainer<Net, backend::OneDnn, dist::RingAllReduce<Mpi>, Sync, optim::Sgd, data::CachedLoader>>);
static_assert(std::is_same_v<TF::with_backend<backend::Eigen>, TF::trainer_type>);
static_assert(
    std::is_same_v<TF::with_strategy<dist::MpiAllReduce<Mpi>>,
                   Trainer<Net, backend::Eigen, dist::MpiAllReduce<Mpi>, Sync, optim::Sgd, data::CachedLoader>>);
static_assert(
    std::is_same_v<presets::PyTorch<Net>::with_loader<data::CachedLoader>,
                   Trainer<Net, backend::OneDnn, dist::RingAllReduce<Mpi>, Sync, optim::Sgd, data::CachedLoader>>);
static_assert(std::is_same_v<presets::MXNet<Net, Sync>::with_mode<Async>, presets::MXNet<Net, Async>::trainer_type>);
static_assert(std::is_same_v<presets::MXNet<Net, Sync>::with_backend<backend::Eigen>,
                             Trainer<Net, backend::Eigen, dist::ParameterServer<Mpi, 3>, Sync, optim::Sgd,
                                     data::StreamingLoader<data::CifarRecords>>>);
static_assert(
    std::is_same_v<presets::ChainerMN<Net>::with_optimizer<optim::Sgd>, presets::ChainerMN<Net>::trainer_type>);
static_assert(std::is_same_v<TF::with_profile<sinew::metrics::OperatorProfile>,
                             Trainer<Net, backend::Eigen, dist::RingAllReduce<Mpi>, Sync, optim::Sgd,
                                     data::CachedLoader, sinew::metrics::OperatorProfile>>);
static_assert(presets::MXNet<Net, Async>::kRanks == 6);

// The second of three workers, as trainer.dist() would say.
struct SecondOfThree {
  int worker_index() const { return 1; }
  int workers() const { return 3; }
};

data::LoaderOptions batches_of(int batch_size) {
  data::LoaderOptions o;
  o.batch_size = batch_size;
  return o;
}

data::Dataset twelve_images() {
  data::Dataset d;
  d.channels = 1;
  d.height = d.width = 2;
  d.num_classes = 2;
  for (int i = 0; i < 12; ++i) {
    for (int p = 0; p < 4; ++p) d.pixels.push_back(std::uint8_t(i));
    d.labels.push_back(i % 2);
  }
  return d;
}

TEST(Presets, synchronous_tensorflow_reads_its_share_and_trains_all_of_it) {
  const data::Dataset d = twelve_images();
  data::CachedLoader loader = TF::loader(d, batches_of(2), SecondOfThree{});
  EXPECT_EQ(loader.size(), 4u);
  EXPECT_EQ(TF::steps_per_epoch(loader, 3), 2u);
  EXPECT_EQ(TF::loader_options({}, 1, 3).sharding, data::Sharding::disjoint);
}

TEST(Presets, asynchronous_tensorflow_reads_the_whole_dataset_and_trains_a_third_of_it) {
  using TFA = presets::TensorFlow<Net, Async>;
  const data::Dataset d = twelve_images();
  data::CachedLoader loader = TFA::loader(d, batches_of(2), SecondOfThree{});
  EXPECT_EQ(loader.size(), 12u);
  EXPECT_EQ(loader.batches_per_epoch(), 6u);
  EXPECT_EQ(TFA::steps_per_epoch(loader, 3), 2u);
  data::LoaderOptions base = batches_of(42);
  base.seed = 7;
  const data::LoaderOptions o = TFA::loader_options(base, 1, 3);
  EXPECT_EQ(o.sharding, data::Sharding::every_worker_reads_all);
  EXPECT_EQ(o.batch_size, 42);
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.rank, 1);
  EXPECT_EQ(o.world_size, 3);
}

TEST(Presets, strategy_options_are_each_systems) {
  const auto pytorch = presets::PyTorch<Net>::options();
  EXPECT_EQ(pytorch.bucket_bytes, std::size_t(25) * 1024 * 1024);
  EXPECT_TRUE(pytorch.overlap);
  const auto tensorflow = TF::options();
  EXPECT_EQ(tensorflow.bucket_bytes, 0u);
  EXPECT_FALSE(tensorflow.overlap);
  const auto chainer = presets::ChainerMN<Net>::options();
  EXPECT_EQ(chainer.bucket_bytes, 0u);
  EXPECT_FALSE(chainer.overlap);
  const auto cntk = presets::CNTK<Net>::options();
  EXPECT_EQ(cntk.bucket_bytes, 0u);
  EXPECT_FALSE(cntk.overlap);
  static_assert(presets::CNTK<Net>::strategy_type::kName == "mpi_allreduce+onebit");
  using MX = presets::MXNet<Net, Sync>;
  EXPECT_EQ(MX::loader_options({}, 2, 3).rank, 2);
}

}  // namespace

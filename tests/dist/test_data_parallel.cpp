// Synchronous data parallelism end to end, under mpiexec with 2 or 3 ranks: N ranks training with local
// batches of b must end where one process training on the same global batches of N x b ends.
//
// Why the batches are the same: with drop_last, the loaders permute the dataset with (seed, epoch), whatever
// the world size, and rank r takes positions r, r + N, r + 2N, ... of the permutation, b per step. Step k of
// rank r thus sees positions kNb + r + iN (i < b), and the union over the ranks is positions kNb ... (k+1)Nb - 1:
// exactly the k-th batch of a one-rank loader with batch N x b. The loss is a mean over the batch, so the mean
// of the N local gradients is the gradient of the global batch; only the summation order differs, hence the
// tolerance. The network has no batch normalisation (its statistics would be per local batch).
#include <gtest/gtest.h>

#include "../support/corners.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "sinew/comm/mpi.hpp"
#include "sinew/data.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;

constexpr int kLocalBatch = 8;
constexpr int kStepsPerEpoch = 10;
constexpr int kEpochs = 2;  // 20 steps; the second epoch checks that every rank reshuffles alike

/// Two classes of 1 x 12 x 12 images: a bright square in the top-left or the bottom-right corner, plus noise
/// (as tests/trainer/test_trainer.cpp).
using sinew::test::corners;

using SmallNet = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, ReLU, MaxPool<2>, Flatten, Dense<16>, Tanh, Dense<2>>;
const optim::Sgd::options kSgd{.lr = 0.05f, .momentum = 0.9f};

data::CachedLoader loader_for(const data::Dataset& d, int batch, int rank, int world_size) {
  data::LoaderOptions o;
  o.batch_size = batch;
  o.seed = 4;
  o.drop_last = true;
  o.mean = {0.3f};
  o.std = {0.25f};
  o.rank = rank, o.world_size = world_size;
  return data::CachedLoader(d, o);
}

struct comparison {
  double relative_l2 = 0, max_relative = 0;  // max_relative: max |a - b| / max |b|
};

comparison compare(std::span<const float> a, std::span<const float> b) {
  double diff2 = 0, norm2 = 0, max_diff = 0, max_b = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    diff2 += d * d, norm2 += double(b[i]) * double(b[i]);
    max_diff = std::max(max_diff, std::abs(d)), max_b = std::max(max_b, std::abs(double(b[i])));
  }
  return {std::sqrt(diff2 / norm2), max_diff / max_b};
}

template <class Strategy>
void expect_n_ranks_equal_one_rank_on_global_batches() {
  comm::Mpi world;
  const int p = world.size(), r = world.rank();
  const data::Dataset d = corners(std::size_t(kStepsPerEpoch * kLocalBatch * p), 11);

  // Every rank starts from other parameters (seed = rank): start() must replace them with rank 0's.
  auto local = loader_for(d, kLocalBatch, r, p);
  Trainer<SmallNet, backend::OneDnn, Strategy> parallel({.threads = 1, .seed = 100 + std::uint64_t(r)}, kSgd,
                                                        Strategy({.configuration = "smallnet batch=8"}, world));
  std::size_t steps = 0;
  for (int e = 0; e < kEpochs; ++e) steps += parallel.train_epoch(local).steps;
  const auto mine = parallel.model().parameters();
  std::vector<float> rank0(mine.begin(), mine.end());
  world.broadcast(rank0, 0);

  // The one-rank run, on this process alone.
  auto global = loader_for(d, kLocalBatch * p, 0, 1);
  Trainer<SmallNet, backend::OneDnn> serial({.threads = 1, .seed = 100}, kSgd);
  std::size_t serial_steps = 0;
  for (int e = 0; e < kEpochs; ++e) serial_steps += serial.train_epoch(global).steps;

  EXPECT_EQ(steps, std::size_t(kEpochs * kStepsPerEpoch));
  EXPECT_EQ(serial_steps, steps);
  EXPECT_EQ(std::memcmp(mine.data(), rank0.data(), mine.size() * sizeof(float)), 0)
      << "rank " << r << "'s parameters differ from rank 0's";
  const comparison c = compare(mine, serial.model().parameters());
  EXPECT_LT(c.relative_l2, 1e-5) << "rank " << r;
  EXPECT_LT(c.max_relative, 1e-5) << "rank " << r;
  if (r == 0) std::printf("[ compare  ] relative L2 %.3g, max |diff| / max |param| %.3g\n", c.relative_l2, c.max_relative);
  const comparison moved = compare(mine, Trainer<SmallNet, backend::OneDnn>({.seed = 100}).model().parameters());
  EXPECT_GT(moved.relative_l2, 1e-2) << "training must have moved the parameters for the comparison to mean much";
}

TEST(data_parallel, ring_allreduce_sync_20_steps_of_smallnet_equal_one_rank_on_global_batches) {
  expect_n_ranks_equal_one_rank_on_global_batches<dist::RingAllReduce<comm::Mpi>>();
}

TEST(data_parallel, mpi_allreduce_sync_20_steps_of_smallnet_equal_one_rank_on_global_batches) {
  expect_n_ranks_equal_one_rank_on_global_batches<dist::MpiAllReduce<comm::Mpi>>();
}

TEST(data_parallel, trainer_reports_exposed_communication) {
  comm::Mpi world;
  const data::Dataset d = corners(std::size_t(2 * kLocalBatch * world.size()), 3);
  auto local = loader_for(d, kLocalBatch, world.rank(), world.size());
  using Strategy = dist::RingAllReduce<comm::Mpi>;
  Trainer<SmallNet, backend::OneDnn, Strategy> trainer({.threads = 1}, kSgd, Strategy({}, world));
  const EpochStats stats = trainer.train_epoch(local);
  EXPECT_EQ(stats.steps, 2u);
  EXPECT_GT(stats.phases.comm, 0.0);
  EXPECT_GT(stats.phases.update, 0.0);
}

TEST(data_parallel, nan_loss_on_one_rank_stops_every_rank_without_hanging) {
  comm::Mpi world;
  if (world.size() < 2) GTEST_SKIP() << "needs two ranks";
  const data::Dataset d = corners(std::size_t(2 * kLocalBatch * world.size()), 5);
  auto local = loader_for(d, kLocalBatch, world.rank(), world.size());
  using Strategy = dist::RingAllReduce<comm::Mpi>;
  Trainer<SmallNet, backend::OneDnn, Strategy> trainer({.threads = 1}, kSgd, Strategy({}, world));
  if (world.rank() == 1) {
    // A NaN in the last layer's bias makes this rank's logits, and so its loss, NaN.
    using last = std::tuple_element_t<SmallNet::nodes<true>::kSize - 1, as_tuple_t<SmallNet::nodes<true>>>;
    trainer.model().parameters()[last::kParamOffset + last::kParams - 1] = std::nanf("");
  }
  try {
    trainer.train_epoch(local);
    FAIL() << "rank " << world.rank() << " went on training";
  } catch (const training_error& e) {
    const std::string expected = world.rank() == 1 ? "the loss is NaN at epoch 0, step 0"
                                                   : "another rank's loss is NaN or infinite at epoch 0, step 0";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

}  // namespace

// BatchNorm's running statistics across ranks, under mpiexec with 2 or 3 ranks, for every strategy: each
// worker trains on its own share of the data, so its running mean and variance differ from the others'; at the
// end of every epoch the strategy averages them (dist/strategy_spec.hpp's buffer hook), so that every worker
// evaluates to the same loss and accuracy, bit for bit, and holds the same statistics: the mean of the ones it
// would have held alone.
#include <gtest/gtest.h>

#include "../support/corners.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/data.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;
using sinew::test::corners;

using BnNet = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, BatchNorm2d, ReLU, MaxPool<2>, Flatten, Dense<2>>;
constexpr int kBatch = 8, kStepsPerEpoch = 3, kEpochs = 2;

data::CachedLoader loader_for(const data::Dataset& d, int worker, int workers, bool shuffle) {
  return test::corners_loader(d, {.batch_size = kBatch, .shuffle = shuffle, .seed = 6, .drop_last = true,
                                  .rank = worker, .world_size = workers});
}

/// How many ranks, of those `counted`, hold other floats than rank 0 (collective over every rank).
int differing_from_rank_0(comm::Mpi& world, std::span<const float> mine, bool counted = true) {
  std::vector<float> rank0(mine.begin(), mine.end());
  world.broadcast(rank0, 0);
  float differs = counted && std::memcmp(rank0.data(), mine.data(), mine.size_bytes()) != 0 ? 1.0f : 0.0f;
  world.allreduce_sum(std::span<float>(&differs, 1));
  return int(differs);
}

/// A double as two floats' bits, so that broadcast carries it exactly.
std::vector<float> bits_of(double x) {
  std::vector<float> f(2);
  std::memcpy(f.data(), &x, sizeof x);
  return f;
}

template <class Strategy, class Mode>
void expect_every_worker_to_evaluate_alike() {
  comm::Mpi world;
  Trainer<BnNet, backend::OneDnn, Strategy, Mode> trainer(
      {.threads = 1, .seed = 7 + std::uint64_t(world.rank())}, {.lr = 0.05f, .momentum = 0.9f},
      Strategy({.configuration = "bn test"}, world));
  const int workers = trainer.dist().workers();
  const bool worker = trainer.dist().is_worker();
  const data::Dataset train_set = corners(std::size_t(kStepsPerEpoch * kBatch * workers), 31);
  const data::Dataset test_set = corners(40, 32);
  auto train = loader_for(train_set, trainer.dist().worker_index(), workers, true);
  auto test = loader_for(test_set, 0, 1, false);

  // Each worker's own statistics just before the last epoch's end averages them (the last step's callback).
  std::vector<float> own(trainer.model().buffers().size(), 0.0f);
  trainer.set_step_callback([&](const StepInfo& s) {
    if (s.steps_done == kEpochs * kStepsPerEpoch) std::ranges::copy(trainer.model().buffers(), own.begin());
  });
  for (int e = 0; e < kEpochs; ++e) trainer.train_epoch(train);
  const EvalStats eval = trainer.evaluate(test);

  const std::span<const float> stats = trainer.model().buffers();
  // 4 channels: running mean then running variance (the flat array is padded to 16 floats).
  constexpr std::size_t kChannels = 4;
  ASSERT_GE(stats.size(), 2 * kChannels);
  // The workers' own statistics differ (else the test would show nothing), and the shared ones are their mean.
  std::vector<float> mean = own;
  world.allreduce_sum(mean);
  for (float& x : mean) x /= float(workers);
  const int own_differ = differing_from_rank_0(world, own, worker);
  if (workers > 1) {
    EXPECT_GT(own_differ, 0) << "the workers' own statistics are already equal: the test would show nothing";
  }
  for (std::size_t i = 0; i < stats.size(); ++i) {
    EXPECT_NEAR(stats[i], mean[i], 1e-6f * std::max(1.0f, std::abs(mean[i]))) << "rank " << world.rank() << ", " << i;
    if (i < 2 * kChannels) {
      EXPECT_NE(stats[i], i < kChannels ? 0.0f : 1.0f) << "training must have moved the running statistics";
    }
  }
  EXPECT_EQ(differing_from_rank_0(world, stats), 0) << "ranks whose running statistics differ from rank 0's";
  if (worker) {
    EXPECT_EQ(eval.samples, 40u);
  }
  // Rank 0 is a worker with every strategy: every worker's evaluation is rank 0's, bit for bit (a server
  // evaluates nothing and compares rank 0's with itself).
  const std::vector<float> loss = bits_of(worker ? eval.loss : 0), accuracy = bits_of(worker ? eval.accuracy : 0);
  std::vector<float> loss0 = loss, accuracy0 = accuracy;
  world.broadcast(loss0, 0);
  world.broadcast(accuracy0, 0);
  if (worker) {
    EXPECT_EQ(loss, loss0) << "rank " << world.rank() << " evaluates to another loss than rank 0";
    EXPECT_EQ(accuracy, accuracy0) << "rank " << world.rank() << " evaluates to another accuracy than rank 0";
  }
}

TEST(buffers, ring_allreduce_workers_share_batch_norm_statistics_and_evaluate_alike) {
  expect_every_worker_to_evaluate_alike<dist::RingAllReduce<comm::Mpi>, Sync>();
}

TEST(buffers, mpi_allreduce_workers_share_batch_norm_statistics_and_evaluate_alike) {
  expect_every_worker_to_evaluate_alike<dist::MpiAllReduce<comm::Mpi>, Sync>();
}

TEST(buffers, parameter_server_sync_workers_share_batch_norm_statistics_and_evaluate_alike) {
  expect_every_worker_to_evaluate_alike<dist::ParameterServer<comm::Mpi, 1>, Sync>();
}

TEST(buffers, parameter_server_async_workers_share_batch_norm_statistics_and_evaluate_alike) {
  expect_every_worker_to_evaluate_alike<dist::ParameterServer<comm::Mpi, 1>, Async>();
}

}  // namespace

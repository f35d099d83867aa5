// BatchNorm's running statistics across ranks, under mpiexec with 2 or 3 ranks, for every strategy: each
// worker trains on its own share of the data, so its running mean and variance differ from the others'; at the
// end of every epoch the strategy averages them (dist/strategy_spec.hpp's buffer hook), so that every worker
// evaluates to the same loss and accuracy, bit for bit, and holds the same statistics: the mean of the ones it
// would have held alone.
//
// SyncBatchNorm2d (layers/batch_norm.hpp) takes its statistics over every worker each step: W workers at a local
// batch of B compute what one process computes at W x B (losses, gradients, running statistics, parameters), on
// the ring and on MPI's all-reduce, with small gradient buckets so that its backward all-reduce runs while a
// bucket is in flight; under dist::Local it is BatchNorm2d.
#include <gtest/gtest.h>

#include "../support/corners.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/data.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/dist/local.hpp"
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

// SyncBatchNorm2d: a Conv2d, the layer, ReLU, Dense; and the same with BatchNorm2d.
using SyncBnNet = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, SyncBatchNorm2d, ReLU, Flatten, Dense<2>>;
static_assert(std::is_same_v<ConvertSyncBatchNorm<BnNet>,
                             Sequential<Input<1, 12, 12>, Conv2d<4, 3>, SyncBatchNorm2d, ReLU, MaxPool<2>, Flatten, Dense<2>>>);
using PlainBnNet = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, BatchNorm2d, ReLU, Flatten, Dense<2>>;
constexpr int kSyncBatch = 4, kSyncSteps = 3;

/// What a run of kSyncSteps steps leaves: each step's loss (the mean over the global batch) and mean gradient,
/// then the running statistics and parameters.
struct SyncRun {
  std::vector<double> losses;
  std::vector<std::vector<float>> gradients;
  std::vector<float> buffers, parameters;
};

/// kSyncSteps steps of Net under Strategy at `batch` per worker, on the samples the workers share: worker r of
/// W takes positions r, r + W, ... (data/loader_options.hpp), so step s of W workers at B covers the positions
/// [s W B, (s + 1) W B), the same samples as step s of one process at W x B.
// A learning rate low enough that the loss stays far from 0 over the steps: near it, softmax's 1 - p rounds away
// most of each gradient's bits in float, whatever the layers do.
template <class Net, class Strategy>
SyncRun run_sync(Strategy strategy, int batch, const data::Dataset& samples) {
  Trainer<Net, backend::OneDnn, Strategy> trainer({.threads = 1, .seed = 11}, {.lr = 0.01f, .momentum = 0.9f},
                                                  std::move(strategy));
  const int workers = trainer.dist().workers();
  auto loader = test::corners_loader(samples, {.batch_size = batch, .shuffle = false, .drop_last = true,
                                               .rank = trainer.dist().worker_index(), .world_size = workers});
  SyncRun run;
  trainer.set_step_callback([&](const StepInfo& s) {
    run.losses.push_back(s.loss);
    const auto g = trainer.model().gradients();
    run.gradients.emplace_back(g.begin(), g.end());
  });
  trainer.train_epoch(loader);
  // The step's loss is this worker's mean: the global batch's is their mean (as many samples each).
  if constexpr (req::has_communicator<Strategy>) {
    std::vector<float> losses(run.losses.begin(), run.losses.end());
    trainer.dist().communicator().allreduce_sum(losses);
    for (std::size_t i = 0; i < losses.size(); ++i) run.losses[i] = losses[i] / float(workers);
  }
  const auto b = trainer.model().buffers();
  const auto p = trainer.model().parameters();
  run.buffers.assign(b.begin(), b.end());
  run.parameters.assign(p.begin(), p.end());
  return run;
}

/// |a - b| within 1e-5 of the larger of |b| and the largest magnitude in `b` (floats summed in another order
/// differ in their last bits; relative to the largest entry, a gradient near 0 is held to the same absolute bound).
void expect_close(std::span<const float> a, std::span<const float> b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  float largest = 0;
  for (float x : b) largest = std::max(largest, std::abs(x));
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], 1e-5f * std::max(largest, std::abs(b[i]))) << what << " [" << i << "]";
}

void expect_same_run(const SyncRun& distributed, const SyncRun& one, const std::string& who) {
  ASSERT_EQ(distributed.losses.size(), std::size_t(kSyncSteps)) << who;
  ASSERT_EQ(one.losses.size(), std::size_t(kSyncSteps)) << who;
  for (int s = 0; s < kSyncSteps; ++s) {
    EXPECT_NEAR(distributed.losses[s], one.losses[s], 1e-5 * std::max(1.0, one.losses[s])) << who << ": step " << s;
    expect_close(distributed.gradients[s], one.gradients[s], who + ": gradients of step " + std::to_string(s));
  }
  expect_close(distributed.buffers, one.buffers, who + ": running statistics");
  expect_close(distributed.parameters, one.parameters, who + ": parameters");
}

template <class Strategy>
void expect_workers_to_equal_one_process_at_the_global_batch() {
  comm::Mpi world;
  const int workers = world.size();
  const data::Dataset samples = corners(std::size_t(kSyncSteps * kSyncBatch * workers), 41);
  // Buckets of 256 bytes: the Dense layer's gradient is in flight while the layer's backward all-reduces.
  const SyncRun distributed = run_sync<SyncBnNet>(Strategy({.configuration = "sync bn", .bucket_bytes = 256}, world),
                                                  kSyncBatch, samples);
  const SyncRun one = run_sync<SyncBnNet>(dist::Local(), kSyncBatch * workers, samples);
  expect_same_run(distributed, one, "rank " + std::to_string(world.rank()));
  // The test shows something: each worker's own batch statistics are not the global batch's, so workers that
  // normalised with their own (the layer in a Model of its own: one worker) would average to other gradients.
  backend::OneDnn::context ctx({.threads = 1});
  Model<SyncBnNet, backend::OneDnn> alone(ctx, {.seed = 11});
  std::vector<float> images(std::size_t(kSyncBatch) * 144);
  std::vector<std::int32_t> labels(kSyncBatch);
  auto loader = test::corners_loader(samples, {.batch_size = kSyncBatch, .shuffle = false, .drop_last = true,
                                               .rank = world.rank(), .world_size = workers});
  loader.start_epoch(0);
  ASSERT_EQ(loader.next(images, labels), std::size_t(kSyncBatch));
  alone.forward(images, kSyncBatch);
  alone.loss(labels);
  alone.backward();
  std::vector<float> own(alone.gradients().begin(), alone.gradients().end());
  world.allreduce_sum(own);
  float largest = 0, differs = 0;
  for (std::size_t i = 0; i < own.size(); ++i) {
    largest = std::max(largest, std::abs(one.gradients[0][i]));
    differs = std::max(differs, std::abs(own[i] / float(workers) - one.gradients[0][i]));
  }
  EXPECT_GT(differs, 1e-3f * largest)
      << "the workers' own statistics give the global batch's gradients: the test would show nothing";
}

TEST(sync_batch_norm, ring_allreduce_workers_equal_one_process_at_the_global_batch) {
  expect_workers_to_equal_one_process_at_the_global_batch<dist::RingAllReduce<comm::Mpi>>();
}

TEST(sync_batch_norm, mpi_allreduce_workers_equal_one_process_at_the_global_batch) {
  expect_workers_to_equal_one_process_at_the_global_batch<dist::MpiAllReduce<comm::Mpi>>();
}

// Under dist::Local the sum over one worker is the identity: SyncBatchNorm2d trains as BatchNorm2d does.
TEST(sync_batch_norm, local_trains_as_batch_norm2d) {
  const data::Dataset samples = corners(std::size_t(kSyncSteps * 8), 43);
  const SyncRun sync = run_sync<SyncBnNet>(dist::Local(), 8, samples);
  const SyncRun plain = run_sync<PlainBnNet>(dist::Local(), 8, samples);
  expect_same_run(sync, plain, "local");
  for (std::size_t c = 0; c < 4; ++c) EXPECT_NE(sync.buffers[c], 0.0f) << "the running mean must have moved";
}

}  // namespace

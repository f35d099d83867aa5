// Synchronous data parallelism end to end, under mpiexec with 2 or 3 ranks: N ranks training with local
// batches of b must end where one process training on the same global batches of N x b ends.
//
// Why the batches are the same: with drop_last, the loaders permute the dataset with (seed, epoch), whatever
// the world size, and rank r takes positions r, r + N, r + 2N, ... of the permutation, b per step. Step k of
// rank r thus sees positions kNb + r + iN (i < b), and the union over the ranks is positions kNb ... (k+1)Nb - 1:
// exactly the k-th batch of a one-rank loader with batch N x b. The loss is a mean over the batch, so the mean
// of the N local gradients is the gradient of the global batch; only the summation order differs, hence the
// tolerance. The network has no batch normalisation (its statistics would be per local batch).
// With gradient accumulation (TrainerOptions::accumulate = k) a rank's k micro-batches of b are its batch of
// k x b by the same argument (the micro-batches of a step are its consecutive positions), so N ranks
// accumulating k micro-batches of b end where one process training on batches of N x k x b ends.
#include <gtest/gtest.h>

#include "../support/corners.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/data.hpp"
#include "sinew/dist/buckets.hpp"
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
  return test::corners_loader(
      d, {.batch_size = batch, .seed = 4, .drop_last = true, .rank = rank, .world_size = world_size});
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

/// The strategy's options: 32-float (128-byte) buckets give SmallNet three buckets, one per layer with
/// parameters (40, 1616 and 34 floats, each padded to a multiple of 16); 0 gives one bucket for everything.
template <class Strategy>
typename Strategy::options options_for(std::size_t bucket_bytes, bool overlap) {
  typename Strategy::options o;
  o.configuration = "smallnet batch=8";
  o.bucket_bytes = bucket_bytes;
  o.overlap = overlap;
  return o;
}

template <class Strategy>
std::vector<float> expect_n_ranks_equal_one_rank_on_global_batches(std::size_t bucket_bytes = dist::kDefaultBucketBytes,
                                                                   bool overlap = true, int accumulate = 1) {
  comm::Mpi world;
  const int p = world.size(), r = world.rank();
  const data::Dataset d = corners(std::size_t(kStepsPerEpoch * kLocalBatch * p * accumulate), 11);

  // Every rank starts from other parameters (seed = rank): start() must replace them with rank 0's.
  auto local = loader_for(d, kLocalBatch, r, p);
  Trainer<SmallNet, backend::OneDnn, Strategy> parallel(
      {.threads = 1, .seed = 100 + std::uint64_t(r), .accumulate = accumulate}, kSgd,
      Strategy(options_for<Strategy>(bucket_bytes, overlap), world));
  std::size_t steps = 0;
  metrics::PhaseSeconds phases;
  for (int e = 0; e < kEpochs; ++e) {
    const EpochStats stats = parallel.train_epoch(local);
    steps += stats.steps;
    phases += stats.phases;
  }
  EXPECT_GE(phases.comm_hidden, 0.0);
  if (!overlap) {
    EXPECT_EQ(phases.comm_hidden, 0.0) << "without overlap nothing can be hidden";
  }
  const auto mine = parallel.model().parameters();
  std::vector<float> rank0(mine.begin(), mine.end());
  world.broadcast(rank0, 0);

  // The one-rank run, on this process alone.
  auto global = loader_for(d, kLocalBatch * p * accumulate, 0, 1);
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
  return std::vector<float>(mine.begin(), mine.end());
}

template <class Strategy>
void expect_overlap_on_and_off_to_train_alike() {
  const std::vector<float> on = expect_n_ranks_equal_one_rank_on_global_batches<Strategy>(128, true);
  const std::vector<float> off = expect_n_ranks_equal_one_rank_on_global_batches<Strategy>(128, false);
  const std::vector<float> whole = expect_n_ranks_equal_one_rank_on_global_batches<Strategy>(0, false);
  const comparison c = compare(on, off), w = compare(on, whole);
  EXPECT_LT(c.max_relative, 1e-5);
  EXPECT_LT(w.max_relative, 1e-5);
}

TEST(data_parallel, ring_allreduce_three_buckets_overlap_on_off_and_one_bucket_equal_one_rank) {
  expect_overlap_on_and_off_to_train_alike<dist::RingAllReduce<comm::Mpi>>();
}

TEST(data_parallel, mpi_allreduce_three_buckets_overlap_on_off_and_one_bucket_equal_one_rank) {
  expect_overlap_on_and_off_to_train_alike<dist::MpiAllReduce<comm::Mpi>>();
}

// On one host the ring's ranks keep their gradients in its shared window (options.share_gradients, on by
// default) and sum them where they lie; that must train bit for bit as the copying path, which sums the same
// floats in the same order, with the buckets overlapping backward and with accumulation folding into them. The
// flat transport and the hierarchical one (every rank taken as one host: its window within the host) alike.
class ring_gradients_in_the_window : public ::testing::TestWithParam<dist::RingTransport> {};

TEST_P(ring_gradients_in_the_window, train_bit_for_bit_as_copying_them) {
  using Ring = dist::RingAllReduce<comm::Mpi>;
  comm::Mpi world;
  const int p = world.size(), r = world.rank();
  const data::Dataset d = corners(std::size_t(kStepsPerEpoch * kLocalBatch * p * 2), 11);
  std::vector<float> trained[2];
  bool kept_there[2] = {false, false};
  for (const bool share : {true, false}) {
    Ring::options o = options_for<Ring>(128, true);
    o.share_gradients = share;
    o.transport = GetParam();
    if (GetParam() == dist::RingTransport::hierarchical) o.host_ranks = p;
    auto local = loader_for(d, kLocalBatch, r, p);
    Trainer<SmallNet, backend::OneDnn, Ring> parallel({.threads = 1, .seed = 100, .accumulate = 2}, kSgd,
                                                      Ring(o, world));
    const std::span<float> window = parallel.dist().shared_gradients();
    kept_there[share] = !window.empty() && window.data() == parallel.model().gradients().data() &&
                        window.size() == parallel.model().gradients().size();
    for (int e = 0; e < kEpochs; ++e) parallel.train_epoch(local);
    const auto params = parallel.model().parameters();
    trained[share].assign(params.begin(), params.end());
  }
  EXPECT_TRUE(kept_there[true]) << "rank " << r << ": the model's gradients are not in the ring's shared window";
  EXPECT_FALSE(kept_there[false]) << "share_gradients false, yet the gradients are in a window";
  EXPECT_EQ(std::memcmp(trained[0].data(), trained[1].data(), trained[0].size() * sizeof(float)), 0)
      << "rank " << r << ": sharing the gradients changed the parameters (max relative difference "
      << compare(trained[1], trained[0]).max_relative << ")";
  const comparison moved = compare(trained[1], Trainer<SmallNet, backend::OneDnn>({.seed = 100}).model().parameters());
  EXPECT_GT(moved.relative_l2, 1e-2) << "training must have moved the parameters for the comparison to mean much";
}
INSTANTIATE_TEST_SUITE_P(data_parallel, ring_gradients_in_the_window,
                         ::testing::Values(dist::RingTransport::automatic, dist::RingTransport::hierarchical),
                         [](const ::testing::TestParamInfo<dist::RingTransport>& info) {
                           return info.param == dist::RingTransport::hierarchical ? "hierarchical" : "flat";
                         });

// Gradient accumulation: the buckets of the last micro-batch overlap its backward with the earlier ones' sum
// folded in; with overlap off, and with one bucket for everything, the same.
TEST(data_parallel, ring_allreduce_accumulate_3_equals_one_rank_on_batches_of_3_x_global) {
  const std::vector<float> on = expect_n_ranks_equal_one_rank_on_global_batches<dist::RingAllReduce<comm::Mpi>>(
      128, true, 3);
  const std::vector<float> off = expect_n_ranks_equal_one_rank_on_global_batches<dist::RingAllReduce<comm::Mpi>>(
      0, false, 3);
  EXPECT_LT(compare(on, off).max_relative, 1e-5);
}

TEST(data_parallel, mpi_allreduce_accumulate_2_equals_one_rank_on_batches_of_2_x_global) {
  expect_n_ranks_equal_one_rank_on_global_batches<dist::MpiAllReduce<comm::Mpi>>(128, true, 2);
}

TEST(data_parallel, a_rank_with_another_accumulate_stops_every_rank_with_an_error_naming_it) {
  comm::Mpi world;
  if (world.size() < 2) GTEST_SKIP() << "needs two ranks";
  const int p = world.size(), r = world.rank();
  using Strategy = dist::MpiAllReduce<comm::Mpi>;
  std::string error = "no comm_error";
  try {
    Trainer<SmallNet, backend::OneDnn, Strategy> trainer({.threads = 1, .accumulate = r == p - 1 ? 4 : 2}, kSgd,
                                                         Strategy({}, world));
  } catch (const comm_error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("trainer: rank " + std::to_string(p - 1) +
                       " disagrees with rank 0 on the batches per update (TrainerOptions::accumulate) (4 vs 2)"),
            std::string::npos)
      << error;
}

TEST(data_parallel, smallnet_has_three_buckets_of_128_bytes_in_reverse_layer_order) {
  comm::Mpi world;
  using Strategy = dist::MpiAllReduce<comm::Mpi>;
  Trainer<SmallNet, backend::OneDnn, Strategy> trainer({.threads = 1}, kSgd,
                                                       Strategy(options_for<Strategy>(128, true), world));
  const auto starts = decltype(trainer)::model_type::layer_starts();
  ASSERT_EQ(starts.size(), 3u);  // conv, dense, dense
  const auto buckets = trainer.dist().buckets();
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].begin, starts[2]);
  EXPECT_EQ(buckets[0].end, trainer.model().gradients().size());
  EXPECT_EQ(buckets[1], (dist::Bucket{starts[1], starts[2]}));
  EXPECT_EQ(buckets[2], (dist::Bucket{0, starts[1]}));
}

TEST(data_parallel, trainer_calls_the_overlap_hooks_once_per_layer_from_the_last) {
  using Strategy = dist::example::counting_hooks;
  const data::Dataset d = corners(16, 3);
  auto loader = loader_for(d, 8, 0, 1);
  Trainer<SmallNet, backend::OneDnn, Strategy> trainer({.threads = 1}, kSgd);
  trainer.train_epoch(loader);
  EXPECT_EQ(trainer.dist().layers, 3);
  EXPECT_EQ(trainer.dist().ready, 3) << "one call per layer with parameters";
  EXPECT_EQ(trainer.dist().lowest, 0u) << "the first layer's gradients come last, at offset 0";
}

TEST(data_parallel, a_rank_with_another_batch_size_stops_every_rank_with_an_error_naming_it) {
  comm::Mpi world;
  if (world.size() < 2) GTEST_SKIP() << "needs two ranks";
  const int p = world.size(), r = world.rank();
  const data::Dataset d = corners(std::size_t(4 * 16 * p), 5);
  auto local = loader_for(d, r == p - 1 ? 16 : 8, r, p);
  using Strategy = dist::MpiAllReduce<comm::Mpi>;
  Trainer<SmallNet, backend::OneDnn, Strategy> trainer({.threads = 1}, kSgd, Strategy({}, world));
  std::string error = "no comm_error";
  try {
    trainer.train_epoch(local);
  } catch (const comm_error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("trainer: rank " + std::to_string(p - 1) + " disagrees with rank 0 on the local batch size (16 vs 8)"),
            std::string::npos)
      << error;
}

TEST(data_parallel, ring_allreduce_sync_20_steps_of_smallnet_equal_one_rank_on_global_batches) {
  expect_n_ranks_equal_one_rank_on_global_batches<dist::RingAllReduce<comm::Mpi>>();
}

TEST(data_parallel, mpi_allreduce_sync_20_steps_of_smallnet_equal_one_rank_on_global_batches) {
  expect_n_ranks_equal_one_rank_on_global_batches<dist::MpiAllReduce<comm::Mpi>>();
}

TEST(data_parallel, trainer_reports_exposed_and_hidden_communication) {
  comm::Mpi world;
  const data::Dataset d = corners(std::size_t(2 * kLocalBatch * world.size()), 3);
  auto local = loader_for(d, kLocalBatch, world.rank(), world.size());
  using Strategy = dist::RingAllReduce<comm::Mpi>;
  Trainer<SmallNet, backend::OneDnn, Strategy> trainer({.threads = 1}, kSgd,
                                                       Strategy(options_for<Strategy>(128, true), world));
  const EpochStats stats = trainer.train_epoch(local);
  EXPECT_EQ(stats.steps, 2u);
  EXPECT_GT(stats.phases.comm, 0.0);
  EXPECT_GT(stats.phases.update, 0.0);
  // Whether a bucket is still in flight at the next layer depends on timing: test_ring_allreduce.cpp checks the amount.
  EXPECT_GE(stats.phases.comm_hidden, 0.0);
}

// Ranks of one host split its cores: disjoint shares, one thread per core, bound, unless there are more ranks
// than cores (np 3 on two cores), where each takes one unbound thread. OMP_NUM_THREADS=1 (the MPI tests' setting)
// asks for one thread whatever the share.
TEST(data_parallel, ranks_on_one_host_take_disjoint_shares_of_its_cores) {
  comm::Mpi world;
  const std::vector<int>& launch = launch_cpus();  // as launched: the tests before this one bound the thread
  using Strategy = dist::RingAllReduce<comm::Mpi>;
  Trainer<SmallNet, backend::OneDnn, Strategy> trainer({}, kSgd, Strategy({}, world));
  const CorePlan& plan = trainer.cores();
  EXPECT_EQ(plan.share.count, world.size());
  EXPECT_EQ(plan.share.index, world.rank());
  EXPECT_EQ(plan.threads(), 1) << "OMP_NUM_THREADS=1 asks for one thread";
  EXPECT_EQ(trainer.context().threads(), 1);
  const bool oversubscribed = world.size() > int(launch.size());
  EXPECT_EQ(plan.oversubscribed, oversubscribed) << plan.describe();
  EXPECT_EQ(plan.bind, !oversubscribed) << plan.describe();
  ASSERT_FALSE(plan.compute.empty());
  const std::string place = world.size() > 1 ? "rank " + std::to_string(world.rank()) + " of the " +
                                                   std::to_string(world.size()) + " ranks sharing"
                                             : std::string("the only rank");
  EXPECT_NE(plan.describe().find(place), std::string::npos) << plan.describe();
  // Count each core's owners over the ranks: disjoint shares unless oversubscribed.
  std::vector<float> owners(std::size_t(*std::max_element(launch.begin(), launch.end()) + 1), 0.0f);
  for (int c : plan.compute) owners[std::size_t(c)] += 1;
  world.allreduce_sum(owners);
  const float most = *std::max_element(owners.begin(), owners.end());
  if (oversubscribed)
    EXPECT_GE(most, 2.0f);
  else
    EXPECT_EQ(most, 1.0f) << plan.describe();
  // A bound rank's thread (and the threads it starts later) stay on its share.
  const std::vector<int> now = allowed_cpus();
  if (plan.bind) {
    EXPECT_EQ(now, plan.compute) << plan.describe();
  } else {
    EXPECT_EQ(now, launch);
  }
}

// update() averages and updates each bucket as its all-reduce ends, in pieces, while the later buckets are still
// in flight: the floats are those of one step over the mean gradient; and when a rank's loss was not finite
// (the deferred agreement travels beside the buckets), nothing is updated at all. Eight layers of 16 floats,
// a bucket each; the hooks start the last layers' buckets during "backward".
template <class Strategy>
void expect_buckets_updated_as_they_end_only_when_every_rank_agrees() {
  comm::Mpi world;
  const int p = world.size(), r = world.rank();
  Strategy s(options_for<Strategy>(64, true), world);
  const std::size_t starts[] = {0, 16, 32, 48, 64, 80, 96, 112};
  s.set_layer_starts(starts);
  std::vector<float> params(128, 1.0f), grads(128);
  optim::Sgd sgd({.lr = 0.5f}, params.size());
  s.template start<Sync>(params, sgd);
  ASSERT_EQ(s.buckets().size(), 8u);
  const float expected = 1.0f - 0.5f * float(p + 1) / 2;  // the mean gradient of ranks 1 .. p, as below
  for (const bool finite : {true, false}) {
    std::vector<float> before = params;
    std::fill(grads.begin(), grads.end(), float(r + 1));
    s.agree_during_update(finite || r != p - 1);
    s.backward_begins(grads);
    for (std::size_t layer = 8; layer-- > 4;) s.gradients_ready(starts[layer]);
    metrics::PhaseSeconds phases;
    s.template update<Sync>(params, grads, sgd, phases);
    EXPECT_EQ(s.agreed(), finite) << "rank " << r;
    for (std::size_t i = 0; i < params.size(); ++i)
      ASSERT_EQ(params[i], finite ? expected : before[i]) << "rank " << r << ", parameter " << i;
    EXPECT_EQ(sgd.state().steps, 1) << "rank " << r << ": one step, counted once for all its pieces";
    if (finite) {
      EXPECT_GT(phases.update, 0.0);
    }
  }
}

TEST(data_parallel, ring_allreduce_updates_buckets_as_they_end_only_when_every_rank_agrees) {
  expect_buckets_updated_as_they_end_only_when_every_rank_agrees<dist::RingAllReduce<comm::Mpi>>();
}
TEST(data_parallel, mpi_allreduce_updates_buckets_as_they_end_only_when_every_rank_agrees) {
  expect_buckets_updated_as_they_end_only_when_every_rank_agrees<dist::MpiAllReduce<comm::Mpi>>();
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
  const std::vector<float> before(trainer.model().parameters().begin(), trainer.model().parameters().end());
  try {
    trainer.train_epoch(local);
    FAIL() << "rank " << world.rank() << " went on training";
  } catch (const training_error& e) {
    const std::string expected = world.rank() == 1 ? "the loss is NaN at epoch 0, step 0"
                                                   : "another rank's loss is NaN or infinite at epoch 0, step 0";
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
  // The check travels with the gradients (the NaN ones included), and no bucket is updated before it is known.
  EXPECT_EQ(std::memcmp(before.data(), trainer.model().parameters().data(), before.size() * sizeof(float)), 0)
      << "rank " << world.rank() << ": the step changed parameters";
  EXPECT_EQ(trainer.optimizer().state().steps, 0) << "rank " << world.rank();
}

}  // namespace

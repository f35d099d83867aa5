// dist::Compressed under mpiexec with 2 or 3 ranks: every compressor trains the corner problem of
// test_data_parallel.cpp to within 2 points of the uncompressed ring's held-out accuracy, every rank ends with
// the same parameters bit for bit, the bytes each rank sends are the payload's (and fewer than the ring's by the
// expected factor), and error feedback keeps every gradient across ranks: sum over steps of the applied mean
// gradient x ranks + every rank's residual == the sum of every rank's gradients.
#include <gtest/gtest.h>
#include <mpi.h>

#include "../support/corners.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/compress.hpp"
#include "sinew/data.hpp"
#include "sinew/dist/compressed.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;
using sinew::test::corners;

using SmallNet = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, ReLU, MaxPool<2>, Flatten, Dense<16>, Tanh, Dense<2>>;
using Ring = dist::RingAllReduce<comm::Mpi>;
using Native = dist::MpiAllReduce<comm::Mpi>;
const optim::Sgd::options kSgd{.lr = 0.05f, .momentum = 0.9f};
constexpr int kLocalBatch = 8, kStepsPerEpoch = 10, kEpochs = 2;

data::CachedLoader loader_for(const data::Dataset& d, int batch, int rank, int world_size, bool shuffle = true) {
  return test::corners_loader(d, {.batch_size = batch, .shuffle = shuffle, .seed = 4, .drop_last = shuffle,
                                  .rank = rank, .world_size = world_size});
}

struct outcome {
  double accuracy = 0;
  std::uint64_t bytes = 0;
  std::size_t steps = 0;
  std::vector<float> params;
};

/// Trains SmallNet on every rank's share of the corners for two epochs and evaluates on 200 held-out images.
/// With accumulate = k, each step takes k micro-batches (k times the data, as many steps).
template <class Strategy>
outcome train(const char* name, int accumulate = 1) {
  comm::Mpi world;
  const int p = world.size(), r = world.rank();
  const data::Dataset d = corners(std::size_t(kStepsPerEpoch * kLocalBatch * p * accumulate), 11);
  auto local = loader_for(d, kLocalBatch, r, p);
  Trainer<SmallNet, backend::OneDnn, Strategy> trainer(
      {.threads = 1, .seed = 100 + std::uint64_t(r), .accumulate = accumulate}, kSgd,
      Strategy({.configuration = "smallnet batch=8"}, world));
  outcome o;
  for (int e = 0; e < kEpochs; ++e) o.steps += trainer.train_epoch(local).steps;
  o.bytes = trainer.dist().bytes_sent();
  const auto mine = trainer.model().parameters();
  std::vector<float> rank0(mine.begin(), mine.end());
  world.broadcast(rank0, 0);
  EXPECT_EQ(std::memcmp(mine.data(), rank0.data(), mine.size() * sizeof(float)), 0)
      << name << ": rank " << r << "'s parameters differ from rank 0's";
  o.params = rank0;
  auto held_out = loader_for(corners(200, 99), 50, 0, 1, false);
  o.accuracy = trainer.evaluate(held_out).accuracy;
  if (r == 0)
    std::printf("[ %-8s ] %d ranks: held-out accuracy %.3f, %.0f bytes sent per step per rank\n", name, p, o.accuracy,
                double(o.bytes) / double(o.steps));
  return o;
}

TEST(compressed, every_compressor_trains_to_within_2_points_of_the_ring_with_identical_ranks_and_fewer_bytes) {
  const outcome plain = train<Ring>("ring");
  ASSERT_EQ(plain.steps, std::size_t(kEpochs * kStepsPerEpoch));
  ASSERT_GT(plain.accuracy, 0.9) << "the uncompressed run must learn for the comparison to mean much";
  using Params = Trainer<SmallNet, backend::OneDnn>::model_type;
  std::size_t floats = 0;  // the tensors' floats (the flat buffer holds alignment padding besides)
  for (const dist::ParamTensor& t : dist::tensor_layout<SmallNet>()) floats += t.size();
  EXPECT_EQ(floats, Params::kParams);

  const int p = comm::Mpi().size();
  const auto check = [&](const outcome& o, const char* name, double least_factor) {
    EXPECT_GE(o.accuracy, plain.accuracy - 0.02) << name;
    EXPECT_EQ(o.steps, plain.steps) << name;
    EXPECT_GT(o.bytes, 0u) << name;
    // The problem is easy (every run classifies all held-out images right): the parameters show that the
    // compressor was in the loop, and that it changed the run by more than summation order would.
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < o.params.size(); ++i)
      diff += std::pow(o.params[i] - plain.params[i], 2), norm += std::pow(plain.params[i], 2);
    EXPECT_GT(std::sqrt(diff / norm), 1e-5) << name << ": trained exactly as without compression";
    // The ring sends 2 (p - 1) / p of the buffer a step, the compressor (p - 1) payloads: the buffer must be
    // least_factor payloads or more.
    EXPECT_GE(double(plain.bytes) / double(o.bytes), least_factor * 2.0 / p) << name;
  };
  check(train<dist::Compressed<Ring, compress::Fp16>>("fp16"), "fp16", 1.9);
  check(train<dist::Compressed<Ring, compress::Bf16>>("bf16"), "bf16", 1.9);
  // SmallNet's layers have 4 to 16 rows, so OneBit's two floats a column weigh: 32 rows / (rows + 64) is 6.4x
  // at best here (bench/dist measures ResNet-18, whose layers have 64 to 512 rows).
  check(train<dist::Compressed<Native, compress::OneBit>>("onebit"), "onebit", 4);
  check(train<dist::Compressed<Ring, compress::PowerSgd<4>>>("powersgd4"), "powersgd4", 2.5);
}

// Gradient accumulation under compression: one compressed exchange per step of 2 micro-batches (the bytes a
// step sends are those of a step without accumulation), and the run learns.
TEST(compressed, fp16_with_accumulate_2_trains_and_sends_one_payload_a_step) {
  using S = dist::Compressed<Ring, compress::Fp16>;
  const outcome once = train<S>("fp16"), twice = train<S>("fp16 k=2", 2);
  EXPECT_EQ(twice.steps, std::size_t(kEpochs * kStepsPerEpoch));
  EXPECT_GT(twice.accuracy, 0.9);
  EXPECT_EQ(twice.bytes, once.bytes) << "one exchange per step, whatever the micro-batches";
}

TEST(compressed, error_feedback_across_ranks_keeps_the_sum_of_every_ranks_gradients) {
  comm::Mpi world;
  const int p = world.size(), r = world.rank();
  using Strategy = dist::Compressed<Ring, compress::OneBit>;
  const std::vector<dist::ParamTensor> tensors = {{0, 12, 20}, {256, 12, 1}, {272, 6, 30}};
  const std::size_t total = 460;
  Strategy s({.configuration = "error feedback"}, world);
  s.set_tensor_layout(tensors);
  std::vector<float> params(total, 0.0f), grads(total);
  optim::Sgd sgd({.lr = 1.0f}, total);
  s.start<Sync>(params, sgd);
  EXPECT_EQ(Strategy::kName, "ring_allreduce+onebit");
  std::vector<double> mine(total, 0.0), applied(total, 0.0);
  Rng rng(50 + std::uint64_t(r));
  metrics::PhaseSeconds phases;
  constexpr int kSteps = 12;
  for (int step = 0; step < kSteps; ++step) {
    for (std::size_t i = 0; i < total; ++i) grads[i] = rng.uniform(-1.0f, 1.0f) * float(1 + (i + r) % 5);
    for (std::size_t i = 0; i < total; ++i) mine[i] += grads[i];
    s.update<Sync>(params, grads, sgd, phases);
    std::vector<float> rank0 = grads;
    world.broadcast(rank0, 0);
    ASSERT_EQ(std::memcmp(grads.data(), rank0.data(), total * sizeof(float)), 0) << "step " << step << " rank " << r;
    for (std::size_t i = 0; i < total; ++i) applied[i] += double(grads[i]) * p;
  }
  EXPECT_EQ(s.bytes_sent(), std::uint64_t(kSteps) * 4 * std::uint64_t(p - 1) * s.compressor().payload_words());
  // Every rank's own sum and residual, summed over the ranks in double.
  std::vector<double> truth(total), residual(total);
  for (std::size_t i = 0; i < total; ++i) residual[i] = s.compressor().residual()[i];
  MPI_Allreduce(mine.data(), truth.data(), int(total), MPI_DOUBLE, MPI_SUM, world.native());
  MPI_Allreduce(MPI_IN_PLACE, residual.data(), int(total), MPI_DOUBLE, MPI_SUM, world.native());
  double worst = 0, largest_residual = 0;
  for (const dist::ParamTensor& t : tensors)
    for (std::size_t i = t.offset; i < t.end(); ++i) {
      worst = std::max(worst, std::abs(applied[i] + residual[i] - truth[i]));
      largest_residual = std::max(largest_residual, std::abs(residual[i]));
    }
  // Float rounding only: each rank rounds twice a value and step (OneBit's header), the sum over the ranks and
  // the mean's scaling once more, on values below 20: 12 steps x (p + 3) roundings of 2^-24 x 20 is below 1e-4.
  // Without error feedback the gap would be the residual, above 0.1.
  EXPECT_LT(worst, 1e-4) << "largest residual " << largest_residual;
  EXPECT_GT(largest_residual, 0.1);
  for (std::size_t i = 256 + 12; i < 272; ++i) EXPECT_EQ(grads[i], 0.0f) << "padding between tensors stays 0";
}

}  // namespace

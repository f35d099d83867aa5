// Checkpoints under mpiexec (3 ranks): a Sync run stopped, saved and resumed by new trainers on every rank
// ends bit for bit where the run that was not stopped ends, for the ring and MPI all-reduce and the Sync
// parameter server with one and two servers (each writes its shard and the shard optimizer's state), and
// dist::Compressed (each rank's error-feedback residual travels in its file). And the determinism each
// strategy promises: repeated runs with one seed are bitwise identical for the ring all-reduce and the Sync
// parameter server; MpiAllReduce promises nothing (MPI picks its reduction order), so it is not asserted.
#include <gtest/gtest.h>

#include "../support/resume.hpp"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/data.hpp"
#include "sinew/compress/one_bit.hpp"
#include "sinew/compress/power_sgd.hpp"
#include "sinew/dist/compressed.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/io/checkpoint.hpp"
#include "sinew/optim/adam.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;
namespace fs = std::filesystem;
using comm::Mpi;

// BatchNorm statistics (per rank), dropout masks and optimizer state: each would change the result if lost.
using Net = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, BatchNorm2d, ReLU, MaxPool<2>, Flatten, Dense<16>, Tanh,
                       Dropout<25>, Dense<2>>;
constexpr TrainerOptions kOptions{.threads = 1, .seed = 5, .warmup_steps = 0};

/// A directory every rank names alike (rank 0's process id), removed on construction and destruction.
struct shared_dir {
  fs::path path;
  explicit shared_dir(const std::string& name) {
    Mpi world;
    const std::uint64_t id = io::group_of(world).broadcast(std::uint64_t(::getpid()));
    path = fs::temp_directory_path() / ("sinew-test-dist-checkpoint-" + name + "-" + std::to_string(id));
    if (world.rank() == 0) fs::remove_all(path);
    world.barrier();
  }
  ~shared_dir() {
    Mpi world;
    world.barrier();
    if (world.rank() == 0) fs::remove_all(path);
  }
};

using test::bitwise_equal;
using test::state_of;
using test::worker_loader;

/// Runs 3 steps, an epoch and 2 steps; returns this rank's parameters and buffers at the end. With `dir`, the
/// run is stopped after the 3 steps and after the epoch, each time saved and resumed by a new trainer.
template <class T, class Make>
std::vector<float> run(const typename T::optimizer_type::options& optimizer, Make make, const fs::path* dir) {
  if (!dir) {
    T t(kOptions, optimizer, make());
    auto data = worker_loader(t);
    t.train_steps(data, 3);
    t.train_epoch(data);
    t.train_steps(data, 2);
    return state_of(t);
  }
  {
    T t(kOptions, optimizer, make());
    auto data = worker_loader(t);
    t.train_steps(data, 3);
    t.save_checkpoint(*dir);
  }
  {
    T t(kOptions, optimizer, make());
    t.resume(*dir);
    auto data = worker_loader(t);
    t.train_epoch(data);
    t.save_checkpoint(*dir);
  }
  T t(kOptions, optimizer, make());
  t.resume(*dir);
  auto data = worker_loader(t);
  t.train_steps(data, 2);
  return state_of(t);
}

template <class Strategy, class O>
void expect_exact_resume(const typename O::options& optimizer, typename Strategy::options options,
                         const std::string& name, bool deterministic) {
  using T = Trainer<Net, backend::OneDnn, Strategy, Sync, O>;
  const auto make = [&] { return Strategy(options); };
  const shared_dir dir(name);
  const std::vector<float> whole = run<T>(optimizer, make, nullptr);
  const std::vector<float> resumed = run<T>(optimizer, make, &dir.path);
  const int rank = Mpi().rank();
  EXPECT_TRUE(bitwise_equal(whole, resumed)) << "rank " << rank << ": the resumed run differs";
  if (deterministic) {
    const std::vector<float> again = run<T>(optimizer, make, nullptr);
    EXPECT_TRUE(bitwise_equal(whole, again)) << "rank " << rank << ": a second run with the seed differs";
  }
}

TEST(dist_resume, ring_allreduce_sgd_momentum_resume_is_bitwise_exact_and_runs_repeat) {
  dist::RingAllReduce<Mpi>::options o;
  o.configuration = "checkpoint test";
  expect_exact_resume<dist::RingAllReduce<Mpi>, optim::Sgd>({.lr = 0.05f, .momentum = 0.9f}, o, "ring", true);
}

TEST(dist_resume, mpi_allreduce_sgd_momentum_resume_is_bitwise_exact) {
  dist::MpiAllReduce<Mpi>::options o;
  o.configuration = "checkpoint test";
  expect_exact_resume<dist::MpiAllReduce<Mpi>, optim::Sgd>({.lr = 0.05f, .momentum = 0.9f}, o, "mpi", false);
}

TEST(dist_resume, sync_parameter_server_adam_resume_is_bitwise_exact_and_runs_repeat) {
  dist::ParameterServer<Mpi, 1>::options o;
  o.configuration = "checkpoint test";
  expect_exact_resume<dist::ParameterServer<Mpi, 1>, optim::Adam>({.lr = 3e-3f}, o, "ps", true);
}

// Two servers (of 3 ranks: one worker): each writes its own shard and its shard optimizer's state.
TEST(dist_resume, sync_parameter_server_with_two_servers_resume_is_bitwise_exact) {
  dist::ParameterServer<Mpi, 2>::options o;
  o.configuration = "checkpoint test";
  expect_exact_resume<dist::ParameterServer<Mpi, 2>, optim::Sgd>({.lr = 0.05f, .momentum = 0.9f}, o, "ps2", false);
}

// Error feedback: each rank's residual (and PowerSGD's warm-start Qs) is part of the run, and the checkpoint
// carries it, so a compressed run resumes bit for bit too.
TEST(dist_resume, compressed_ring_onebit_resume_is_bitwise_exact_and_runs_repeat) {
  using S = dist::Compressed<dist::RingAllReduce<Mpi>, compress::OneBit>;
  S::options o;
  o.configuration = "checkpoint test";
  expect_exact_resume<S, optim::Sgd>({.lr = 0.05f, .momentum = 0.9f}, o, "onebit", true);
}

TEST(dist_resume, compressed_ring_powersgd_resume_is_bitwise_exact) {
  using S = dist::Compressed<dist::RingAllReduce<Mpi>, compress::PowerSgd<1>>;
  S::options o;
  o.configuration = "checkpoint test";
  expect_exact_resume<S, optim::Sgd>({.lr = 0.05f, .momentum = 0.9f}, o, "powersgd", false);
}

struct stop_here {};

// Every rank saves from the step callback in the middle of epoch 1 and stops; new trainers train the rest.
TEST(dist_resume, ring_allreduce_saved_mid_epoch_resumes_exactly) {
  using Strategy = dist::RingAllReduce<Mpi>;
  using T = Trainer<Net, backend::OneDnn, Strategy, Sync, optim::Sgd>;
  Strategy::options o;
  o.configuration = "checkpoint test";
  const optim::Sgd::options sgd{.lr = 0.05f, .momentum = 0.9f};
  const shared_dir dir("mid-epoch");
  T whole(kOptions, sgd, Strategy(o));
  auto data = worker_loader(whole);  // 4 batches an epoch on 3 ranks
  whole.train_steps(data, 8);
  {
    T stopped(kOptions, sgd, Strategy(o));
    stopped.set_step_callback([&](const StepInfo& s) {
      if (s.steps_done == 5) {
        stopped.save_checkpoint(dir.path);
        throw stop_here{};
      }
    });
    try {
      stopped.train_steps(data, 8);
      ADD_FAILURE() << "the callback stops training";
    } catch (const stop_here&) {
    }
  }
  T resumed(kOptions, sgd, Strategy(o));
  resumed.resume(dir.path);
  EXPECT_EQ(resumed.train_epoch(data).steps, 3u);
  EXPECT_TRUE(bitwise_equal(state_of(whole), state_of(resumed))) << "rank " << Mpi().rank();
}

TEST(dist_resume, each_rank_writes_its_file_and_the_manifest_lists_them_all) {
  using Strategy = dist::ParameterServer<Mpi, 1>;
  using T = Trainer<Net, backend::OneDnn, Strategy, Sync, optim::Adam>;
  Strategy::options o;
  o.configuration = "checkpoint test";
  const shared_dir dir("files");
  T t(kOptions, {.lr = 3e-3f}, Strategy(o));
  auto data = worker_loader(t);
  t.train_steps(data, 2);
  t.save_checkpoint(dir.path);
  const io::CheckpointManifest m = io::read_manifest(dir.path);
  EXPECT_EQ(m.world_size, std::uint64_t(t.dist().world_size()));
  ASSERT_EQ(m.files.size(), std::size_t(t.dist().world_size()) + 1);
  for (int r = 0; r < t.dist().world_size(); ++r) EXPECT_TRUE(m.find(io::rank_file_name(r, m.generation))) << r;
  // The server's file holds its shard and the shard's Adam moments.
  io::SafetensorsReader server(dir.path / io::rank_file_name(t.dist().world_size() - 1, m.generation));
  EXPECT_TRUE(server.find("shard.parameters") && server.find("shard.optimizer.exp_avg"));
}

}  // namespace

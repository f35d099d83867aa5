// Run by run_fault.py under mpiexec: training in which one rank fails, or ranks configured differently. Each
// case must end the whole job with a non-zero exit and a message naming the rank, within the bound that
// run_fault.py asserts (the ctest TIMEOUT is only the safety net).
//
//   failure_main ring|mpi|ps_sync|ps_async FAULT
//
// The failing rank is the last worker (rank p-1 with the all-reduce strategies, p-2 with one parameter server).
// It prints "failure_main: rank R faults at <unix seconds>" just before the fault, from which run_fault.py
// measures the time to exit. FAULT:
//   loader_throws          its loader throws at its fourth batch (step 3), inside train_epoch
//   throws_between_epochs  it throws after its first epoch, outside the trainer
//   aborts, killed         std::abort() or SIGKILL at its fourth batch
//   stopped                SIGSTOP at its fourth batch: only a watchdog can end the job
//   missing_file           its data file does not exist (read after building the trainer, as the examples do)
//   other_batch            it uses local batch 16, the others 8
//   other_net              its network differs from the others' (Tanh -> ReLU) with the same parameter count
//   other_buckets          (mpi) its gradient bucket size differs
//   server_stopped         (ps_*) at its fourth batch it sends SIGSTOP to the server (the last rank): the
//                          workers' watchdog must name the server
// The catch in main prints and returns 1, as the examples do: the job must end all the same.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "../support/corners.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/data.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;
using SmallNet = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, ReLU, MaxPool<2>, Flatten, Dense<16>, Tanh, Dense<2>>;
// The same parameter count, another network.
using OtherNet = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, ReLU, MaxPool<2>, Flatten, Dense<16>, ReLU, Dense<2>>;
constexpr double kTimeoutSeconds = 4;

void announce_fault(int rank) {
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::fprintf(stderr, "failure_main: rank %d faults at %.3f\n", rank, now);
  std::fflush(stderr);
}

/// A CachedLoader whose rank fails as `fault` says at its fourth batch.
class faulty_loader {
 public:
  faulty_loader(data::CachedLoader inner, std::string fault, int rank, bool failing, pid_t server = 0)
      : inner_(std::move(inner)), fault_(std::move(fault)), rank_(rank), failing_(failing), server_(server) {}
  int channels() const { return inner_.channels(); }
  int height() const { return inner_.height(); }
  int width() const { return inner_.width(); }
  std::size_t size() const { return inner_.size(); }
  int batch_size() const { return inner_.batch_size(); }
  std::size_t batches_per_epoch() const { return inner_.batches_per_epoch(); }
  void start_epoch(int epoch) { inner_.start_epoch(epoch); }
  std::size_t next(std::span<float> images, std::span<std::int32_t> labels) {
    if (failing_ && ++calls_ == 4) {
      if (fault_ == "loader_throws" || fault_ == "aborts" || fault_ == "killed" || fault_ == "stopped" ||
          fault_ == "server_stopped")
        announce_fault(rank_);
      if (fault_ == "server_stopped") kill(server_, SIGSTOP);
      if (fault_ == "loader_throws")
        throw std::runtime_error("the loader of rank " + std::to_string(rank_) + " fails at step 3");
      if (fault_ == "aborts") std::abort();
      if (fault_ == "killed") raise(SIGKILL);
      if (fault_ == "stopped") raise(SIGSTOP);
    }
    return inner_.next(images, labels);
  }

 private:
  data::CachedLoader inner_;
  std::string fault_;
  int rank_;
  bool failing_;
  pid_t server_;
  std::size_t calls_ = 0;
};

template <class Strategy>
typename Strategy::options strategy_options(bool failing, const std::string& fault) {
  typename Strategy::options so;
  so.timeout_seconds = kTimeoutSeconds;
  if constexpr (requires { so.bucket_bytes; }) so.bucket_bytes = fault == "other_buckets" && failing ? 512 : 256;
  return so;
}

template <class Net, class Strategy, class Mode>
int train(comm::Mpi& world, const std::string& fault, int failing_rank) {
  const int r = world.rank();
  const bool failing = r == failing_rank;
  if (failing && (fault == "other_net" || fault == "other_batch" || fault == "other_buckets")) announce_fault(r);
  Trainer<Net, backend::OneDnn, Strategy, Mode, optim::Sgd, faulty_loader> trainer(
      {.threads = 1}, {.lr = 0.05f}, Strategy(strategy_options<Strategy>(failing, fault), world));
  const int workers = trainer.dist().workers();
  // As the examples do: the shard needs the trainer's worker_index(), so the data comes after the trainer.
  data::LoaderOptions o;
  o.batch_size = fault == "other_batch" && failing ? 16 : 8;
  o.drop_last = true;
  o.mean = {0.3f};
  o.std = {0.25f};
  o.rank = trainer.dist().worker_index(), o.world_size = workers;
  if (fault == "missing_file" && failing) {
    announce_fault(r);
    (void)data::load_fashion_mnist(data::Split::train, "/nonexistent/sinew-failure-main");
  }
  // Every rank's process id (exact as floats below 2^24), for server_stopped: the ranks share one host.
  std::vector<float> pids(std::size_t(world.size()), 0.0f);
  pids[std::size_t(r)] = float(getpid());
  world.allreduce_sum(pids);
  faulty_loader loader(data::CachedLoader(test::corners(std::size_t(20 * 8 * workers), 3), o), fault, r, failing,
                       pid_t(pids.back()));
  for (int epoch = 0; epoch < 2; ++epoch) {
    trainer.train_epoch(loader);
    if (fault == "throws_between_epochs" && failing) {
      announce_fault(r);
      throw std::runtime_error("rank " + std::to_string(r) + " throws between epochs");
    }
  }
  std::printf("failure_main: rank %d trained without failing\n", r);
  return 0;
}

template <class Strategy, class Mode = Sync>
int run(comm::Mpi& world, const std::string& fault, int failing_rank) {
  if (fault == "other_net" && world.rank() == failing_rank) return train<OtherNet, Strategy, Mode>(world, fault, failing_rank);
  return train<SmallNet, Strategy, Mode>(world, fault, failing_rank);
}
}  // namespace

int main(int argc, char** argv) try {
  comm::Mpi world;
  const std::string strategy = argc > 1 ? argv[1] : "", fault = argc > 2 ? argv[2] : "";
  const int p = world.size();
  const std::string faults[] = {"loader_throws", "throws_between_epochs", "aborts", "killed", "stopped",
                                "missing_file", "other_batch", "other_net", "other_buckets", "server_stopped"};
  if (std::find(std::begin(faults), std::end(faults), fault) == std::end(faults)) {
    std::fprintf(stderr, "failure_main: unknown fault '%s'\n", fault.c_str());
    return 2;
  }
  if (strategy == "ring") return run<dist::RingAllReduce<comm::Mpi>>(world, fault, p - 1);
  if (strategy == "mpi") return run<dist::MpiAllReduce<comm::Mpi>>(world, fault, p - 1);
  if (strategy == "ps_sync") return run<dist::ParameterServer<comm::Mpi, 1>>(world, fault, p - 2);
  if (strategy == "ps_async") return run<dist::ParameterServer<comm::Mpi, 1>, Async>(world, fault, p - 2);
  std::fprintf(stderr, "usage: failure_main ring|mpi|ps_sync|ps_async FAULT\n");
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "failure_main: %s\n", e.what());
  return 1;
}

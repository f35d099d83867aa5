// Run by ctest under mpiexec: training with one rank that fails, or with ranks configured differently. Each
// test asserts that the job ends (the ctest TIMEOUT catches a hang) with the message that names the cause.
//
//   failure_main exits|killed|hangs|batch|buckets [ring|mpi]
//
// exits, killed: the last rank _exit(1)s or is SIGKILLed while loading its fourth batch, with the others inside
// the step's collectives; Open MPI then ends the job itself. hangs: the last rank sleeps forever there, and the
// strategy's watchdog (timeout 3 s) must abort the job naming it. batch, buckets: rank 1 and up use another
// local batch size or gradient bucket size, and every rank must stop with the trainer's or strategy's error.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "../support/corners.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/data.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;
using SmallNet = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, ReLU, MaxPool<2>, Flatten, Dense<16>, Tanh, Dense<2>>;

/// A CachedLoader that fails as `mode` says on the rank `failing`, at its fourth batch.
class faulty_loader {
 public:
  faulty_loader(data::CachedLoader inner, std::string mode, bool failing)
      : inner_(std::move(inner)), mode_(std::move(mode)), failing_(failing) {}
  int channels() const { return inner_.channels(); }
  int height() const { return inner_.height(); }
  int width() const { return inner_.width(); }
  std::size_t size() const { return inner_.size(); }
  int batch_size() const { return inner_.batch_size(); }
  std::size_t batches_per_epoch() const { return inner_.batches_per_epoch(); }
  void start_epoch(int epoch) { inner_.start_epoch(epoch); }
  std::size_t next(std::span<float> images, std::span<std::int32_t> labels) {
    if (failing_ && ++calls_ == 4) {
      std::fprintf(stderr, "failure_main: this rank %s now\n", mode_ == "exits" ? "exits" : mode_ == "killed" ? "is killed" : "hangs");
      std::fflush(stderr);
      if (mode_ == "exits") _exit(1);
      if (mode_ == "killed") raise(SIGKILL);
      if (mode_ == "hangs")
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    return inner_.next(images, labels);
  }

 private:
  data::CachedLoader inner_;
  std::string mode_;
  bool failing_;
  std::size_t calls_ = 0;
};

template <class Strategy>
int train(comm::Mpi& world, const std::string& mode) {
  const int r = world.rank(), p = world.size();
  const int batch = mode == "batch" && r > 0 ? 16 : 8;
  data::LoaderOptions o;
  o.batch_size = batch;
  o.drop_last = true;
  o.mean = {0.3f};
  o.std = {0.25f};
  o.rank = r, o.world_size = p;
  faulty_loader loader(data::CachedLoader(test::corners(std::size_t(20 * 8 * p), 3), o), mode, r == p - 1);
  typename Strategy::options so;
  so.bucket_bytes = mode == "buckets" && r > 0 ? 512 : 256;
  so.timeout_seconds = 3;
  Trainer<SmallNet, backend::OneDnn, Strategy, Sync, optim::Sgd, faulty_loader> trainer(
      {.threads = 1}, {.lr = 0.05f}, Strategy(so, world));
  for (int epoch = 0; epoch < 2; ++epoch) trainer.train_epoch(loader);
  std::printf("failure_main: rank %d trained without failing\n", r);
  return 0;
}
}  // namespace

int main(int argc, char** argv) try {
  comm::Mpi world;
  const std::string mode = argc > 1 ? argv[1] : "", strategy = argc > 2 ? argv[2] : "ring";
  if (mode != "exits" && mode != "killed" && mode != "hangs" && mode != "batch" && mode != "buckets") {
    std::fprintf(stderr, "usage: failure_main exits|killed|hangs|batch|buckets [ring|mpi]\n");
    return 2;
  }
  if (strategy == "mpi") return train<dist::MpiAllReduce<comm::Mpi>>(world, mode);
  return train<dist::RingAllReduce<comm::Mpi>>(world, mode);
} catch (const std::exception& e) {
  std::fprintf(stderr, "failure_main: %s\n", e.what());
  return 1;
}

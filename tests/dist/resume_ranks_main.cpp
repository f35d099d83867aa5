// Run by run_resume.py under mpiexec, twice: a run on W ranks saves checkpoints and one of its ranks is killed
// (SIGKILL, as a machine that dies); then a run on W' ranks (fewer or more) resumes from them.
//
//   resume_ranks_main save DIR W'   on W ranks: a Sync parameter server (one server) trains 2 epochs and saves
//                                   DIR/ps; a ring all-reduce trains epoch 0 and, in epoch 1, saves DIR/ring-odd
//                                   after 1 batch and DIR/ring after k batches (k: the first count of W-rank
//                                   steps that is a whole number of W'-rank steps); then the last rank kills
//                                   itself. Rank 0 writes its parameters and buffers at each save (from memory,
//                                   not from the checkpoint) and the losses, for the resumed run to compare.
//   resume_ranks_main resume DIR    on W' ranks: resumes each checkpoint and checks that the parameters and
//                                   buffers are the saved ones before any step, that the step count continues,
//                                   that the loaders continue from the same sample (ring: the rest of epoch 1;
//                                   ring-odd: epoch 2, the rest of epoch 1 is named as not trained), and that
//                                   the loss continues from where the saved run left it.
// Every rank prints "resume_ranks: rank R passes" or its failures, and exits 1 on a failure.
//
// Preemption (Trainer::set_preemption), driven by run_preempt.py on 3 ranks, S = ring or ps (Sync, one server):
//   resume_ranks_main reference DIR S       trains 3 epochs; rank 0 writes its final state to DIR/S.reference
//   resume_ranks_main preempt DIR S WHEN    the same run, preemption on into DIR/S-WHEN, stopped by a signal:
//       one      rank 1 (a worker) raises SIGUSR1 at epoch 1's second step, and again while it saves: every
//                rank stops after that step (ps, Sync: after the next, whose gradients carry the request and
//                whose replies tell every worker)
//       all      every step sleeps 0.1 s; rank 0 prints "resume_ranks: signal now" at epoch 1's first step and
//                the driver sends mpirun SIGUSR1 twice, 150 ms apart (mpirun forwards it to every rank): the
//                second comes about while the ranks save or exit
//       before   every rank raises SIGTERM before its first step
//       between  after epoch 0 the last rank (ring: a worker, which then evaluates; ps: the server) raises
//                SIGUSR1: acted on at epoch 1's start
//     Every rank must leave through sinew::preempted and exit with its status (75); training on is a failure.
//   resume_ranks_main continue DIR S WHEN   resumes DIR/S-WHEN, checks where it resumed, trains to the end of
//                                           epoch 3; rank 0's state must equal DIR/S.reference bit for bit
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "../support/resume.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/data.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/optim/adam.hpp"
#include "sinew/trainer.hpp"

#include <chrono>
#include <thread>

namespace {
using namespace sinew;
namespace fs = std::filesystem;
using comm::Mpi;

using Net = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, BatchNorm2d, ReLU, MaxPool<2>, Flatten, Dense<16>, Tanh,
                       Dense<2>>;
using Ring = dist::RingAllReduce<Mpi>;
using Server = dist::ParameterServer<Mpi, 1>;
using RingTrainer = Trainer<Net, backend::OneDnn, Ring, Sync, optim::Sgd>;
using ServerTrainer = Trainer<Net, backend::OneDnn, Server, Sync, optim::Adam>;
constexpr TrainerOptions kOptions{.threads = 1, .seed = 7, .warmup_steps = 0};
constexpr optim::Sgd::options kSgd{.lr = 0.05f, .momentum = 0.9f};
constexpr optim::Adam::options kAdam{.lr = 3e-3f};

int failures = 0;
int my_rank = 0;  // set once in main: a new Mpi() duplicates the communicator, a collective call
void check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "resume_ranks: rank %d FAILS: %s\n", my_rank, what.c_str());
  ++failures;
}

template <class S>
typename S::options strategy_options() {
  typename S::options o;
  o.configuration = "resume on other ranks";
  o.timeout_seconds = 4;
  return o;
}

using test::bitwise_equal;
using test::state_of;
using test::worker_loader;  // 96 samples, batch 8: 32 a worker on 3 ranks (4 batches), 48 on 2 (6 batches)

/// What rank 0 of the saved run knew at a checkpoint: its parameters and buffers, and numbers.
struct saved {
  std::vector<float> state;
  double steps = 0, first_loss = 0, last_loss = 0;
  double batches_of_epoch = 0, workers = 0;  // at the checkpoint: batches of its epoch trained, and by how many

  void write(const fs::path& file) const {
    std::ofstream out(file, std::ios::binary);
    const double head[5] = {steps, first_loss, last_loss, batches_of_epoch, workers};
    out.write(reinterpret_cast<const char*>(head), sizeof head);
    out.write(reinterpret_cast<const char*>(state.data()), std::streamsize(state.size() * sizeof(float)));
  }
  static saved read(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("resume_ranks: the saved run left no " + file.string());
    saved s;
    double head[5];
    in.read(reinterpret_cast<char*>(head), sizeof head);
    s.steps = head[0], s.first_loss = head[1], s.last_loss = head[2], s.batches_of_epoch = head[3], s.workers = head[4];
    float x;
    while (in.read(reinterpret_cast<char*>(&x), sizeof x)) s.state.push_back(x);
    return s;
  }
};


void save(const fs::path& dir, int target) {
  Mpi world;
  const int ranks = world.size();
  {
    ServerTrainer t(kOptions, kAdam, Server(strategy_options<Server>()));
    auto data = worker_loader(t);
    saved s;
    t.set_step_callback([&](const StepInfo& i) {
      if (i.steps_done == 1) s.first_loss = i.loss;
      s.last_loss = i.loss;
    });
    t.train_epoch(data);
    t.train_epoch(data);
    t.save_checkpoint(dir / "ps");
    s.steps = double(t.steps_done());
    s.state = state_of(t);
    if (world.rank() == 0) s.write(dir / "ps.saved");
  }
  // k W-rank steps are a whole number of target-rank steps (the same batch size).
  const int k = target / std::gcd(ranks, target);
  RingTrainer t(kOptions, kSgd, Ring(strategy_options<Ring>()));
  auto data = worker_loader(t);
  saved s;
  t.set_step_callback([&](const StepInfo& i) {
    if (i.steps_done == 1) s.first_loss = i.loss;
    s.last_loss = i.loss;
    if (i.epoch != 1) return;
    if (i.step + 1 == 1 || i.step + 1 == std::size_t(k)) {
      const fs::path to = dir / (i.step + 1 == std::size_t(k) ? "ring" : "ring-odd");
      t.save_checkpoint(to);
      s.steps = double(t.steps_done());
      s.batches_of_epoch = double(i.step + 1), s.workers = ranks;
      s.state = state_of(t);
      if (world.rank() == 0) s.write(fs::path(to.string() + ".saved"));
    }
    if (i.step + 1 == std::size_t(k)) {
      world.barrier();  // every rank has saved; now a machine dies
      if (world.rank() == ranks - 1) {
        std::fprintf(stderr, "resume_ranks: rank %d kills itself after the checkpoint\n", world.rank());
        std::fflush(stderr);
        raise(SIGKILL);
      }
    }
  });
  t.train_epoch(data);
  t.train_epoch(data);  // the killed rank ends the job in it
  check(false, "the ring run went on after its last rank was killed");
}

/// The loss continues where the saved run left it: the first resumed step's loss is near the saved run's last
/// (corners is learnt within an epoch: both are a small fraction of the first loss).
void check_loss(const std::string& what, const saved& s, double first_resumed) {
  if (my_rank == 0)
    std::printf("resume_ranks: %s: saved run's first loss %.4f, last %.4f; resumed run's first %.4f\n", what.c_str(),
                s.first_loss, s.last_loss, first_resumed);
  check(first_resumed < 0.3 * s.first_loss && first_resumed < s.last_loss + 0.15,
        what + ": the first resumed loss " + std::to_string(first_resumed) + " does not continue from the saved run's " +
            "last " + std::to_string(s.last_loss) + " (its first was " + std::to_string(s.first_loss) + ")");
}

void resume(const fs::path& dir) {
  Mpi world;
  {
    const saved s = saved::read(dir / "ps.saved");
    ServerTrainer t(kOptions, kAdam, Server(strategy_options<Server>()));
    const std::string note = t.resume(dir / "ps");
    if (world.rank() == 0) std::printf("resume_ranks: ps: %s\n", note.c_str());
    check(note.find("the epoch starts anew") != std::string::npos, "ps: the note says " + note);
    check(t.steps_done() == std::int64_t(s.steps) && t.epochs_done() == 2,
          "ps: resumed at step " + std::to_string(t.steps_done()) + ", epoch " + std::to_string(t.epochs_done()));
    if (t.dist().is_worker()) {
      const std::vector<float> now = state_of(t);
      const std::size_t params = t.model().parameters().size();
      // Every worker holds the servers' parameters; worker 0 has saved worker 0's BatchNorm statistics too.
      check(world.rank() == 0 ? bitwise_equal(now, s.state)
                              : bitwise_equal({now.data(), params}, {s.state.data(), params}),
            "ps: the resumed parameters differ from the saved ones");
    } else {
      const auto shard = t.dist().shard_state();
      check(shard && bitwise_equal(t.model().parameters().subspan(shard->begin, shard->end - shard->begin),
                                   std::span<const float>(s.state).subspan(shard->begin, shard->end - shard->begin)),
            "ps: the server's resumed shard differs from the saved parameters");
    }
    auto data = worker_loader(t);
    double first = 0;
    t.set_step_callback([&](const StepInfo& i) {
      if (i.step == 0) first = i.loss;
    });
    const EpochStats e = t.train_epoch(data);
    if (t.dist().is_worker()) {
      check(e.steps == data.batches_per_epoch(), "ps: the resumed epoch trained " + std::to_string(e.steps));
      check(t.steps_done() == std::int64_t(s.steps) + std::int64_t(data.batches_per_epoch()),
            "ps: the step count does not continue: " + std::to_string(t.steps_done()));
      check_loss("ps", s, first);
    }
  }
  {
    const saved s = saved::read(dir / "ring.saved");
    RingTrainer t(kOptions, kSgd, Ring(strategy_options<Ring>()));
    const std::string note = t.resume(dir / "ring");
    if (world.rank() == 0) std::printf("resume_ranks: ring: %s\n", note.c_str());
    check(note.find("continue from that sample") != std::string::npos, "ring: the note says " + note);
    check(t.steps_done() == std::int64_t(s.steps) && t.epochs_done() == 1,
          "ring: resumed at step " + std::to_string(t.steps_done()) + ", epoch " + std::to_string(t.epochs_done()));
    const std::vector<float> now = state_of(t);
    const std::size_t params = t.model().parameters().size();
    check(world.rank() == 0 ? bitwise_equal(now, s.state)
                            : bitwise_equal({now.data(), params}, {s.state.data(), params}),
          "ring: the resumed parameters differ from the saved ones");
    auto data = worker_loader(t);
    double first = 0;
    std::size_t first_step = 0;
    t.set_step_callback([&](const StepInfo& i) {
      if (first == 0) first = i.loss, first_step = i.step;
    });
    // The saved workers dealt k x 8 x W samples of epoch 1; the new ones go on from there.
    const EpochStats e = t.train_epoch(data);
    const std::size_t dealt_steps = std::size_t(s.batches_of_epoch * s.workers) / std::size_t(world.size());
    check(first_step == dealt_steps && e.steps == data.batches_per_epoch() - dealt_steps,
          "ring: the resumed epoch began at batch " + std::to_string(first_step) + " and trained " +
              std::to_string(e.steps));
    check(t.steps_done() == std::int64_t(s.steps) + std::int64_t(e.steps),
          "ring: the step count does not continue: " + std::to_string(t.steps_done()));
    check_loss("ring", s, first);
  }
  {
    const saved s = saved::read(dir / "ring-odd.saved");
    RingTrainer t(kOptions, kSgd, Ring(strategy_options<Ring>()));
    const std::string note = t.resume(dir / "ring-odd");
    if (world.rank() == 0) std::printf("resume_ranks: ring-odd: %s\n", note.c_str());
    check(note.find("the rest of epoch 1 is not trained, and training continues at the start of epoch 2") !=
              std::string::npos,
          "ring-odd: the note says " + note);
    check(t.steps_done() == std::int64_t(s.steps) && t.epochs_done() == 2,
          "ring-odd: resumed at step " + std::to_string(t.steps_done()) + ", epoch " +
              std::to_string(t.epochs_done()));
  }
}

// ---- preemption (see the file comment) ----

constexpr int kPreemptEpochs = 3;

/// The preemption runs' trainer: ring all-reduce (SGD) or a Sync parameter server (Adam on one server).
template <class F>
void with_trainer(const std::string& strategy, F&& f) {
  if (strategy == "ring") {
    RingTrainer t(kOptions, kSgd, Ring(strategy_options<Ring>()));
    f(t);
  } else if (strategy == "ps") {
    ServerTrainer t(kOptions, kAdam, Server(strategy_options<Server>()));
    f(t);
  } else {
    throw std::runtime_error("resume_ranks: no strategy " + strategy + " (ring or ps)");
  }
}

/// Trains every rank (servers too) to the end of epoch kPreemptEpochs, as the reference, preempted and
/// continued runs all do; `between(epoch)` runs after each train_epoch.
template <class T, class F>
void train_to_end(T& t, data::CachedLoader& data, F&& between) {
  for (int e = t.epochs_done(); e < kPreemptEpochs; ++e) {
    t.train_epoch(data);
    between(e);
  }
}

void reference(const fs::path& dir, const std::string& strategy) {
  with_trainer(strategy, [&](auto& t) {
    auto data = worker_loader(t);
    train_to_end(t, data, [](int) {});
    saved s;
    s.steps = double(t.steps_done());
    s.state = state_of(t);
    if (my_rank == 0) s.write(dir / (strategy + ".reference"));
  });
}

void preempt(const fs::path& dir, const std::string& strategy, const std::string& when) {
  Mpi world;
  const int last = world.size() - 1;
  with_trainer(strategy, [&](auto& t) {
    auto data = worker_loader(t);
    t.set_preemption({.directory = dir / (strategy + "-" + when)});
    // A second signal while saving (the checkpoint writer's fault hook) changes nothing.
    if (when == "one" && my_rank == 1)
      io::detail::checkpoint_fault_hook = [](std::string_view stage) {
        if (stage == "rank file written") raise(SIGUSR1);
      };
    t.set_step_callback([&](const StepInfo& i) {
      if (when == "one" && my_rank == 1 && i.epoch == 1 && i.step == 1) raise(SIGUSR1);
      if (when == "all") {
        if (my_rank == 0 && i.epoch == 1 && i.step == 0) {
          std::printf("resume_ranks: signal now\n");
          std::fflush(stdout);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    if (when == "before") raise(SIGTERM);
    train_to_end(t, data, [&](int e) {
      if (when != "between" || e != 0 || my_rank != last) return;
      raise(SIGUSR1);
      if (t.dist().is_worker()) t.evaluate(data);  // a signal during evaluation waits for the next epoch
    });
  });
  check(false, "the run trained to its end though it was preempted (" + when + ")");
}

void continue_preempted(const fs::path& dir, const std::string& strategy, const std::string& when) {
  const saved reference = saved::read(dir / (strategy + ".reference"));
  with_trainer(strategy, [&](auto& t) {
    const std::string note = t.resume(dir / (strategy + "-" + when));
    check(note.empty(), strategy + "-" + when + ": the resume says " + note);
    // Where each case stopped. 3 ranks: the ring's 3 workers take 4 batches an epoch, the 2 workers beside
    // one server 6; a server counts no steps of its own (its step count is the checkpoint's).
    const std::int64_t per_epoch = strategy == "ring" ? 4 : 6;
    std::int64_t expected = -1;
    // Mid-epoch. Raised after step 2's update: the ring agrees right after it; the parameter server's request
    // rides with the next step's gradients, so every rank stops after step 3.
    if (when == "one") expected = per_epoch + (strategy == "ring" ? 2 : 3);
    if (when == "before") expected = 0;
    if (when == "between") expected = per_epoch;
    if (my_rank == 0)
      std::printf("resume_ranks: %s-%s resumes at epoch %d, step %lld\n", strategy.c_str(), when.c_str(),
                  t.epochs_done(), static_cast<long long>(t.steps_done()));
    check(expected < 0 ? t.steps_done() < per_epoch * kPreemptEpochs : t.steps_done() == expected,
          strategy + "-" + when + ": resumed at step " + std::to_string(t.steps_done()) + ", expected " +
              std::to_string(expected));
    auto data = worker_loader(t);
    train_to_end(t, data, [](int) {});
    check(!t.dist().is_worker() || t.steps_done() == std::int64_t(reference.steps),
          strategy + "-" + when + ": ended at step " + std::to_string(t.steps_done()));
    // Ring and the parameter server's Sync are bitwise repeatable, and so is a run resumed from a checkpoint.
    if (my_rank == 0)
      check(bitwise_equal(state_of(t), reference.state),
            strategy + "-" + when + ": the resumed run does not end where the run that was not stopped ends");
  });
}

}  // namespace

int main(int argc, char** argv) {
  Mpi world;  // MPI starts with the first communicator and ends at exit
  my_rank = world.rank();
  try {
    const std::string mode = argc > 2 ? argv[1] : "";
    if (mode == "save" && argc == 4)
      save(argv[2], std::stoi(argv[3]));
    else if (mode == "resume" && argc == 3)
      resume(argv[2]);
    else if (mode == "reference" && argc == 4)
      reference(argv[2], argv[3]);
    else if (mode == "preempt" && argc == 5)
      preempt(argv[2], argv[3], argv[4]);
    else if (mode == "continue" && argc == 5)
      continue_preempted(argv[2], argv[3], argv[4]);
    else {
      std::fprintf(stderr,
                   "usage: resume_ranks_main save DIR TARGET_RANKS | resume DIR | reference DIR S | "
                   "preempt DIR S WHEN | continue DIR S WHEN\n");
      return 2;
    }
  } catch (const preempted& p) {
    // The status the job script sees (mpirun passes it on): saved, try again.
    std::printf("resume_ranks: rank %d preempted: %s\n", my_rank, p.what());
    return failures == 0 ? p.exit_status() : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "resume_ranks: rank %d: %s\n", my_rank, e.what());
    return 1;
  }
  if (failures == 0) std::printf("resume_ranks: rank %d passes\n", my_rank);
  return failures == 0 ? 0 : 1;
}

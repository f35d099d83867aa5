// bench/overlap_progress: which way of moving bucket all-reduces on during backward is fastest.
//
//   mpirun -np 2 --bind-to core build/bench/overlap_progress [--layers 8] [--bucket-kb 1024] [--compute-ms 2]
//          [--iterations 30] [--json FILE]
//
// A simulated backward of --layers layers, each computing --compute-ms ms on the training thread and then
// finishing one bucket of --bucket-kb KiB, is timed with four ways of summing the buckets (median step time):
//   after      blocking MPI_Allreduce of every bucket after backward (no overlap);
//   hooks_mpi  MPI_Iallreduce as each bucket is finished, MPI_Test on all in flight after every layer, then wait
//              (what dist::MpiAllReduce does);
//   hooks_ring sinew's RingOperation queued the same way and advanced after every layer (dist::RingAllReduce);
//   thread     a communication thread doing blocking MPI_Allreduce of each bucket as the training thread
//              hands it over (needs MPI_THREAD_MULTIPLE; the thread competes with computation for a core).
// Open MPI (without its optional progress thread) moves non-blocking operations only inside MPI calls, so the
// hook variants progress exactly as often as layers end. State the binding and rank count with the figures.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "sinew/comm/mpi.hpp"
#include "sinew/comm/ring_allreduce.hpp"
#include "sinew/metrics.hpp"
#include "cli/cli.hpp"

namespace {
using clock_type = std::chrono::steady_clock;

/// Stands in for a layer's backward: keeps the core busy, as computation does.
void compute(double ms) {
  const auto start = clock_type::now();
  volatile double sink = 0;
  while (std::chrono::duration<double, std::milli>(clock_type::now() - start).count() < ms) sink = sink + 1.0;
}

double median(std::vector<double> t) {
  std::nth_element(t.begin(), t.begin() + std::ptrdiff_t(t.size() / 2), t.end());
  return t[t.size() / 2];
}

/// A thread that all-reduces the buckets it is handed, in order, with blocking MPI_Allreduce.
class comm_thread {
 public:
  explicit comm_thread(MPI_Comm comm) : comm_(comm), thread_([this] { run(); }) {}
  ~comm_thread() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  void hand_over(std::vector<float>& bucket) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(&bucket);
    }
    changed_.notify_all();
  }
  void wait_for(std::size_t buckets) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return done_ == buckets; });
    done_ = 0;
  }

 private:
  void run() {
    for (;;) {
      std::vector<float>* bucket = nullptr;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        bucket = queue_.front();
        queue_.pop_front();
      }
      MPI_Allreduce(MPI_IN_PLACE, bucket->data(), int(bucket->size()), MPI_FLOAT, MPI_SUM, comm_);
      {
        std::lock_guard lock(mutex_);
        ++done_;
      }
      changed_.notify_all();
    }
  }

  MPI_Comm comm_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<float>*> queue_;
  std::size_t done_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) try {
  // The thread variant needs MPI_THREAD_MULTIPLE; comm::Mpi keeps an MPI the program initialised itself.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int result = 0;
  {
    sinew::comm::Mpi world;
    int layers = 8, bucket_kb = 1024, iterations = 30;
    double compute_ms = 2;
    std::string json;
    CLI::App app{"Overlapping all-reduce with compute: mpirun -np N overlap_progress", "overlap_progress"};
    app.add_option("--layers", layers, "buckets per step")->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--bucket-kb", bucket_kb, "bucket size in KiB")->capture_default_str()->check(CLI::PositiveNumber);
    app.add_option("--compute-ms", compute_ms, "compute per layer, ms")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    app.add_option("--iterations", iterations, "timed steps")->capture_default_str()->check(CLI::PositiveNumber);
    sinew::cli::add_json(app, json);
    sinew::cli::parse(app, argc, argv);
    const std::size_t floats = std::size_t(bucket_kb) * 1024 / sizeof(float);

    std::vector<std::vector<float>> buckets(std::size_t(layers), std::vector<float>(floats, 1.0f));
    const auto timed = [&](auto&& step) {
      std::vector<double> t;
      for (int i = 0; i < 3 + iterations; ++i) {
        world.barrier();
        const double start = MPI_Wtime();
        step();
        double s = MPI_Wtime() - start;
        MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, world.native());
        if (i >= 3) t.push_back(s);
      }
      return median(t);
    };

    const double after = timed([&] {
      for (int l = 0; l < layers; ++l) compute(compute_ms);
      for (auto& b : buckets) world.allreduce_sum(b);
    });

    std::vector<sinew::comm::MpiRequest> in_flight;
    const double hooks_mpi = timed([&] {
      for (auto& b : buckets) {
        compute(compute_ms);
        in_flight.push_back(world.iallreduce_sum(b));
        for (auto& r : in_flight) r.test();
      }
      for (auto& r : in_flight) r.wait();
      in_flight.clear();
    });

    sinew::dist::RingWorkspace<sinew::comm::Mpi> work;
    sinew::dist::RingOperation<sinew::comm::Mpi> ring;
    const double hooks_ring = timed([&] {
      std::size_t next = 0;
      const auto advance = [&](std::size_t finished) {
        for (;;) {
          if (!ring.done() && !ring.advance()) return false;
          if (next == finished) return true;
          ring.start(world, buckets[next++], work);
        }
      };
      for (std::size_t l = 0; l < buckets.size(); ++l) {
        compute(compute_ms);
        advance(l + 1);
      }
      while (!advance(buckets.size())) {
      }
    });

    double thread = 0;
    if (provided >= MPI_THREAD_MULTIPLE) {
      comm_thread helper(world.native());
      thread = timed([&] {
        for (auto& b : buckets) {
          compute(compute_ms);
          helper.hand_over(b);
        }
        helper.wait_for(buckets.size());
      });
    }

    if (world.rank() == 0) {
      std::printf("%d ranks, %d layers x %.1f ms, buckets of %zu KiB; median step ms: after %.2f  hooks_mpi %.2f  "
                  "hooks_ring %.2f  thread %.2f%s  (computation alone %.1f)\n",
                  world.size(), layers, compute_ms, floats * sizeof(float) / 1024, 1e3 * after, 1e3 * hooks_mpi,
                  1e3 * hooks_ring, 1e3 * thread, provided >= MPI_THREAD_MULTIPLE ? "" : " (no MPI_THREAD_MULTIPLE)",
                  layers * compute_ms);
      if (!json.empty()) {
        auto j = sinew::metrics::Json::object();
        j["ranks"] = world.size();
        j["layers"] = layers;
        j["compute_ms_per_layer"] = compute_ms;
        j["bucket_bytes"] = floats * sizeof(float);
        j["after_seconds"] = after;
        j["hooks_mpi_seconds"] = hooks_mpi;
        j["hooks_ring_seconds"] = hooks_ring;
        j["thread_seconds"] = thread;
        sinew::metrics::save_json(j, json);
      }
    }
  }
  MPI_Finalize();
  return result;
} catch (const std::exception& e) {
  std::fprintf(stderr, "overlap_progress: %s\n", e.what());
  return 1;
}

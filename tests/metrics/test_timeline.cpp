// The timeline (metrics/timeline.hpp) under mpiexec with 2 ranks: a traced run writes a Chrome trace that
// parses, holds both ranks' tracks, every layer's forward and backward event of each step nested in that
// step's phase, every bucket's all-reduce within its step, increasing steps, and clocks aligned across ranks;
// the clock offset estimate finds a skew put on purpose; an untraced run records nothing and writes nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include "../support/corners.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sinew/backend/onednn.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/data.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/metrics/timeline.hpp"
#include "sinew/trainer.hpp"

namespace {
using namespace sinew;
using metrics::Json;

// 5 nodes, 3 with parameters; 256-byte buckets cut it into one bucket per layer with parameters.
using Net = Sequential<Input<1, 12, 12>, Conv2d<4, 3>, ReLU, MaxPool<2>, Flatten, Dense<8>, ReLU, Dense<2>>;
constexpr int kBatch = 8, kSteps = 3;
// Both ranks leave the epoch's agreement (a collective) together: on an idle machine their first steps begin
// microseconds apart; the bound leaves room for a loaded, shared machine (a rank descheduled for a while).
constexpr double kAlignedWithinUs = 250e3;

data::CachedLoader loader_for(const data::Dataset& d, int worker, int workers) {
  return test::corners_loader(d, {.batch_size = kBatch, .drop_last = true, .rank = worker, .world_size = workers});
}

std::string temp_path(const std::string& name, comm::Mpi& world) {
  // Every rank must name the same file: rank 0's process id, broadcast.
  float pid = float(::getpid() % 1000000);
  world.broadcast(std::span<float>(&pid, 1), 0);
  return (std::filesystem::temp_directory_path() / ("sinew-trace-" + std::to_string(int(pid)) + "-" + name)).string();
}

struct Slice {
  double begin = 0, end = 0;
  bool within(const Slice& outer) const { return begin >= outer.begin - 1e-3 && end <= outer.end + 1e-3; }
};

template <class Strategy>
void expect_a_complete_aligned_trace(const char* name) {
  comm::Mpi world;
  using Train = Trainer<Net, backend::OneDnn, Strategy>;
  Train trainer({.threads = 1, .seed = 3}, {.lr = 0.05f}, Strategy({.configuration = "trace test", .bucket_bytes = 256}, world));
  const std::size_t buckets = trainer.dist().buckets().size();
  ASSERT_GE(buckets, 2u) << "the test needs several buckets";
  auto train = loader_for(sinew::test::corners(std::size_t(kSteps * kBatch * world.size()), 5), world.rank(),
                          world.size());
  trainer.start_trace();
  trainer.train_epoch(train);
  const std::string path = temp_path(name, world);
  trainer.write_trace(path);
  // Every rank recorded its own events: kSteps steps of at least one event per node each way.
  ASSERT_NE(trainer.timeline(), nullptr);
  EXPECT_GE(trainer.timeline()->events().size(), std::size_t(kSteps) * 2 * Train::model_type::kOps);
  EXPECT_EQ(trainer.timeline()->dropped(), 0u);
  world.barrier();
  if (world.rank() != 0) return;

  std::ifstream f(path);
  ASSERT_TRUE(f) << path;
  const Json trace = Json::parse(f);  // throws, failing the test, if it is not JSON
  std::filesystem::remove(path);
  ASSERT_TRUE(trace.contains("traceEvents"));
  const std::vector<std::string> nodes = Train::model_type::node_names();

  // rank -> step -> kind -> slices; layer slices by node.
  std::map<int, std::map<std::int64_t, std::map<std::string, std::vector<Slice>>>> by;
  std::map<int, std::map<std::int64_t, std::map<std::string, std::set<int>>>> layers;
  std::set<int> processes, comm_tracks;
  for (const Json& e : trace["traceEvents"]) {
    const int pid = e["pid"];
    if (e["ph"] == "M") {
      if (e["name"] == "process_name") processes.insert(pid);
      if (e["name"] == "thread_name" && e["tid"].get<int>() > 0) comm_tracks.insert(pid);
      continue;
    }
    ASSERT_EQ(e["ph"], "X");
    const double ts = e["ts"], dur = e["dur"];
    EXPECT_GE(ts, 0.0);
    EXPECT_GE(dur, 0.0);
    const std::string kind = e["cat"];
    const std::int64_t step = e["args"]["step"];
    EXPECT_EQ(e["tid"].get<int>() > 0, kind == "allreduce") << kind << " on the wrong track";
    by[pid][step][kind].push_back({ts, ts + dur});
    if (kind == "layer_forward" || kind == "layer_backward") {
      const int node = e["args"]["node"];
      layers[pid][step][kind].insert(node);
      EXPECT_EQ(e["name"], std::to_string(node) + " " + nodes.at(std::size_t(node)));
    }
  }
  EXPECT_EQ(processes, (std::set<int>{0, 1})) << "a process track per rank";
  EXPECT_EQ(comm_tracks, (std::set<int>{0, 1})) << "a communication track on each rank";

  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(by[rank].size(), std::size_t(kSteps)) << "rank " << rank;
    double previous_end = -1;
    for (std::int64_t step = 0; step < kSteps; ++step) {
      auto& k = by[rank][step];
      ASSERT_EQ(k["step"].size(), 1u) << "rank " << rank << " step " << step;
      const Slice s = k["step"][0];
      EXPECT_GT(s.begin, previous_end) << "steps follow each other, rank " << rank;
      previous_end = s.end;
      for (const char* phase : {"load", "forward", "backward", "strategy_update", "wait", "loss_check"}) {
        ASSERT_EQ(k[phase].size(), 1u) << phase << ", rank " << rank << " step " << step;
        EXPECT_TRUE(k[phase][0].within(s)) << phase << " outside its step, rank " << rank;
      }
      EXPECT_LE(k["load"][0].end, k["forward"][0].begin + 1e-3);
      EXPECT_LE(k["forward"][0].end, k["backward"][0].begin + 1e-3);
      EXPECT_LE(k["backward"][0].end, k["strategy_update"][0].begin + 1e-3);
      EXPECT_TRUE(k["wait"][0].within(k["strategy_update"][0]));
      // The optimizer updates each bucket as its all-reduce ends, in pieces within the wait, while the later
      // buckets are in flight (dist/detail/allreduce_common.hpp).
      ASSERT_GE(k["update"].size(), 1u) << "rank " << rank << " step " << step;
      for (const Slice& u : k["update"]) EXPECT_TRUE(u.within(k["wait"][0])) << "an update outside the wait";
      // Every node's forward and backward, each inside its pass.
      EXPECT_EQ(layers[rank][step]["layer_forward"].size(), nodes.size()) << "rank " << rank << " step " << step;
      EXPECT_EQ(layers[rank][step]["layer_backward"].size(), nodes.size()) << "rank " << rank << " step " << step;
      for (const Slice& l : k["layer_forward"]) EXPECT_TRUE(l.within(k["forward"][0]));
      for (const Slice& l : k["layer_backward"]) EXPECT_TRUE(l.within(k["backward"][0]));
      for (const Slice& h : k["overlap_hook"]) EXPECT_TRUE(h.within(k["backward"][0]));
      // Every bucket's all-reduce, within the step, ended by the end of the wait.
      ASSERT_EQ(k["allreduce"].size(), buckets) << "rank " << rank << " step " << step;
      for (const Slice& a : k["allreduce"]) {
        EXPECT_TRUE(a.within(s)) << "an all-reduce outside its step, rank " << rank;
        EXPECT_LE(a.end, k["wait"][0].end + 1e-3);
        EXPECT_GE(a.begin, k["backward"][0].begin - 1e-3);
      }
    }
  }
  // Aligned clocks: both ranks' first steps begin together (they leave the epoch's agreement together), and no
  // bucket's all-reduce ends on one rank before it began on the other (it needs both).
  EXPECT_LT(std::abs(by[1][0]["step"][0].begin - by[0][0]["step"][0].begin), kAlignedWithinUs);
  for (std::int64_t step = 0; step < kSteps; ++step) {
    auto& zero = by[0][step]["allreduce"];
    auto& one = by[1][step]["allreduce"];
    std::sort(zero.begin(), zero.end(), [](const Slice& a, const Slice& b) { return a.begin < b.begin; });
    std::sort(one.begin(), one.end(), [](const Slice& a, const Slice& b) { return a.begin < b.begin; });
    for (std::size_t b = 0; b < std::min(zero.size(), one.size()); ++b) {
      EXPECT_GE(one[b].end, zero[b].begin) << "bucket " << b << " of step " << step << " ended on rank 1 first";
      EXPECT_GE(zero[b].end, one[b].begin) << "bucket " << b << " of step " << step << " ended on rank 0 first";
    }
  }
  ASSERT_EQ(trace["otherData"]["ranks"].size(), 2u);
  EXPECT_EQ(trace["otherData"]["strategy"], std::string(Strategy::kName));
}

TEST(timeline, ring_allreduce_np2_every_layer_and_bucket_on_aligned_clocks) {
  expect_a_complete_aligned_trace<dist::RingAllReduce<comm::Mpi>>("ring.json");
}

TEST(timeline, mpi_allreduce_np2_every_layer_and_bucket_on_aligned_clocks) {
  expect_a_complete_aligned_trace<dist::MpiAllReduce<comm::Mpi>>("mpi.json");
}

TEST(timeline, clock_offset_finds_a_skew_of_three_seconds) {
  comm::Mpi world;
  constexpr std::int64_t kSkew = 3'000'000'000;
  const std::int64_t skew = world.rank() == 0 ? 0 : kSkew;
  const auto [offset, uncertainty] =
      metrics::estimate_clock_offset(world, [skew] { return metrics::detail::now_ns() + skew; });
  if (world.rank() == 0) {
    EXPECT_EQ(offset, 0);
  } else {
    // Rank 1's clock reads 3 s ahead of rank 0's: the offset takes it back, to within half a round trip.
    EXPECT_NEAR(double(offset), -double(kSkew), double(uncertainty) + 1e3);
    EXPECT_LT(uncertainty, 50'000'000) << "the shortest of 16 round trips through shared memory";
  }
}

TEST(timeline, off_records_nothing_and_writes_nothing) {
  comm::Mpi world;
  using Strategy = dist::RingAllReduce<comm::Mpi>;
  Trainer<Net, backend::OneDnn, Strategy> trainer({.threads = 1}, {.lr = 0.05f}, Strategy({}, world));
  auto train = loader_for(sinew::test::corners(std::size_t(kBatch * world.size()), 6), world.rank(), world.size());
  trainer.train_epoch(train);
  EXPECT_EQ(trainer.timeline(), nullptr);
  const std::string path = temp_path("off.json", world);
  try {
    trainer.write_trace(path);
    ADD_FAILURE() << "write_trace without start_trace must throw";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("before start_trace()"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  // A path rank 0 cannot write throws on every rank, before anything is gathered.
  trainer.start_trace();
  trainer.train_epoch(train);
  try {
    trainer.write_trace("/nonexistent-sinew-dir/trace.json");
    ADD_FAILURE() << "an unwritable path must throw on every rank";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-sinew-dir/trace.json"), std::string::npos) << e.what();
  }
}

}  // namespace

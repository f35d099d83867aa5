// bench/dist: data-parallel training of ResNet-18 (ImageNet stem, 3x32x32) under every distribution strategy and
// sync mode, with the step split into load / forward / backward / exposed communication / update, next to
// PyTorch DistributedDataParallel over Gloo on the same net, local batch, ranks, threads and binding.
//
//   build/bench/dist [--ranks 2] [--threads 1] [--batch 42] [--warmup 10] [--steps 30] [--bind core|none|sinew]
//                    [--only ring,ring-copy,mpi,ps-sync,ps-async,ps-stale2] [--no-pytorch] [--json FILE] [--trace FILE]
//                    [--compress none,fp16,bf16,onebit,powersgd4] [--accumulate 1] [--sync-bn]
//       runs each configuration under mpirun (one after another) and then bench/pytorch/ddp.py, and prints
//       the table; or, under mpirun, one configuration:
//   mpirun -np 2 --bind-to core build/bench/dist --run ring|ring-copy|mpi|ps-sync|ps-async|ps-stale2 [--batch 42] ...
//
// A worker trains --warmup steps, then --steps timed steps, on synthetic images (a CachedLoader over random
// bytes, so loading is a copy). With the parameter server the last rank serves and the others work (2 ranks =
// 1 worker + 1 server). images/s counts every worker's timed images over the slowest worker's timed time.
// --compress runs the ring once per compressor listed (dist::Compressed<RingAllReduce, C>: "ring+onebit" ...;
// under MPI all-reduce the compressed exchange would be the same all-gather); every all-reduce row reports the
// gradient bytes each rank sent per step (the strategy's bytes_sent()).
// --accumulate K trains with TrainerOptions::accumulate = K: a step is K micro-batches of --batch images and one
// exchange, so --warmup and --steps count such steps; each row adds the time and the bytes sent per image.
// --sync-bn adds a row after each uncompressed ring and mpi row: the same run with every BatchNorm2d a
// SyncBatchNorm2d (ConvertSyncBatchNorm: statistics over every worker each step, two small all-reduces per layer
// and step), so the difference between the two rows is its cost per step; with --ranks 1 the sums are skipped,
// which leaves the cost of its generic op (and its layout conversions) alone. The parameter server has no
// SyncBatchNorm2d (the trainer refuses it), so its rows get none.
// --trace FILE writes the timed steps of every rank as a Chrome trace (metrics/timeline.hpp), one file per
// configuration: FILE with the configuration's name before its extension (trace.json -> trace-ring.json).
// Each row ends with a cache line's round trip between the first two CPUs before and after its run
// (bench/support/core_latency.hpp): where the host placed the vCPUs, which moves the ranks' exchanges.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sinew/sinew.hpp"
#include "support/child.hpp"
#include "support/core_latency.hpp"
#include "cli/cli.hpp"

namespace {

using Net     = sinew::nets::ResNet18<sinew::Input<3, 32, 32>, 10>;  // ImageNet stem, 11.2M parameters
using Backend = sinew::backend::OneDnn;                              // oneDNN primitives
using Optim   = sinew::optim::Sgd;                                   // lr 0.01, momentum 0.9, as ddp.py
using Mpi     = sinew::comm::Mpi;
using Ring    = sinew::dist::RingAllReduce<Mpi>;                     // bucketed, overlapped with backward
using Native  = sinew::dist::MpiAllReduce<Mpi>;                      // MPI_Iallreduce per bucket, overlapped
using Server  = sinew::dist::ParameterServer<Mpi, 1>;                // the last rank serves
using SyncNet = sinew::ConvertSyncBatchNorm<Net>;                    // --sync-bn: statistics over every worker

const std::vector<std::string> kConfigs = {"ring", "ring-copy", "mpi", "ps-sync", "ps-async", "ps-stale2"};
// ring-copy (the ring with options.share_gradients false: each bucket copied into the shared window and out, as
// before the gradients lived there) runs only when --only names it, for the A/B of that choice.
const std::vector<std::string> kDefaultConfigs = {"ring", "mpi", "ps-sync", "ps-async", "ps-stale2"};
const std::vector<std::string> kCompressors = {"none", "fp16", "bf16", "onebit", "powersgd4"};

struct Settings {
  int batch = 42, threads = 1, warmup = 10, steps = 30;
  int accumulate = 1;  // micro-batches per step (TrainerOptions::accumulate)
  std::string trace;  // a Chrome trace of the timed steps, or none
  bool sinew_binds = true;  // --bind none: nothing binds, sinew neither (Binding::never)
};

sinew::data::Dataset synthetic(std::size_t n) {
  sinew::data::Dataset d;
  d.channels = 3, d.height = 32, d.width = 32, d.num_classes = 10;
  sinew::Rng rng(7);
  d.pixels.resize(n * d.image_size());
  for (auto& p : d.pixels) p = std::uint8_t(rng.below(256));
  for (std::size_t i = 0; i < n; ++i) d.labels.push_back(std::int32_t(rng.below(10)));
  return d;
}

template <class Strategy, class Mode, class N = Net>
int run(const Settings& s, const std::string& name, bool share_gradients = true) {
  using Train = sinew::Trainer<N, Backend, Strategy, Mode, Optim>;
  Mpi world;
  typename Strategy::options options;
  options.configuration = "bench/dist resnet18 batch " + std::to_string(s.batch);
  if constexpr (requires { options.share_gradients; }) options.share_gradients = share_gradients;
  Train trainer({.threads = s.threads,
                 .cores = {.binding = s.sinew_binds ? sinew::Binding::when_shared : sinew::Binding::never},
                 .warmup_steps = 0,
                 .accumulate = s.accumulate},
                {.lr = 0.01f, .momentum = 0.9f},
                Strategy(options, world));
  const int workers = trainer.dist().workers();
  sinew::data::LoaderOptions lo;
  lo.batch_size = s.batch;
  lo.drop_last = true;
  lo.rank = trainer.dist().worker_index();
  lo.world_size = workers;
  if (s.warmup > 0) {  // an empty data set is an error, so no warm-up loader at all for --warmup 0
    sinew::data::CachedLoader warm(synthetic(std::size_t(s.warmup * s.accumulate * s.batch * workers)), lo);
    trainer.train_epoch(warm);
  }
  sinew::data::CachedLoader timed(synthetic(std::size_t(s.steps * s.accumulate * s.batch * workers)), lo);
  if (!s.trace.empty()) trainer.start_trace();
  MPI_Barrier(world.native());
  double bytes = 0;  // gradient bytes this rank sent in the timed epoch (strategies that count them)
  if constexpr (requires { trainer.dist().bytes_sent(); }) bytes = -double(trainer.dist().bytes_sent());
  const sinew::EpochStats e = trainer.train_epoch(timed);
  if constexpr (requires { trainer.dist().bytes_sent(); }) bytes += double(trainer.dist().bytes_sent());
  if (!s.trace.empty()) trainer.write_trace(s.trace);

  // Per worker: images, seconds, and the phases per step; servers contribute nothing.
  const bool worker = trainer.dist().is_worker();
  const double steps = worker && e.steps ? double(e.steps) : 1.0;
  double mine[8] = {worker ? double(e.samples) : 0.0,
                    worker ? e.phases.total() : 0.0,
                    worker ? e.phases.load / steps : 0.0,
                    worker ? e.phases.forward / steps : 0.0,
                    worker ? e.phases.backward / steps : 0.0,
                    worker ? e.phases.comm / steps : 0.0,
                    worker ? e.phases.comm_hidden / steps : 0.0,
                    worker ? e.phases.update / steps : 0.0};
  double sum[8], slowest = 0;
  MPI_Reduce(mine, sum, 8, MPI_DOUBLE, MPI_SUM, 0, world.native());
  MPI_Reduce(&mine[1], &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, world.native());
  double all_bytes = 0;
  MPI_Reduce(&bytes, &all_bytes, 1, MPI_DOUBLE, MPI_SUM, 0, world.native());
  if (world.rank() == 0) {
    const auto print = [](const char* key, double v) { std::printf("result %s %.9g\n", key, v); };
    print("images_per_second", sum[0] / slowest);
    print("workers", workers);
    const char* keys[] = {"load", "forward", "backward", "comm_exposed", "comm_hidden", "update"};
    for (int i = 0; i < 6; ++i) print(keys[i], sum[2 + i] / workers);
    if (all_bytes > 0) print("bytes_per_step", all_bytes / workers / (e.steps ? double(e.steps) : 1.0));
    // Per image of a worker: its step time (the mean over the workers) over the images of its step.
    print("seconds_per_image", sum[1] / sum[0]);
    if (all_bytes > 0) print("bytes_per_image", all_bytes / sum[0]);
    std::printf("info %s, %d ranks (%d workers) x %d threads; %s\n", name.c_str(), world.size(), workers,
                trainer.context().threads(), trainer.cores().describe().c_str());
  }
  return 0;
}

int run_compressed(const std::string& compressor, const Settings& s) {
  namespace compress = sinew::compress;
  using sinew::dist::Compressed;
  if (compressor == "fp16") return run<Compressed<Ring, compress::Fp16>, sinew::Sync>(s, "ring all-reduce, fp16");
  if (compressor == "bf16") return run<Compressed<Ring, compress::Bf16>, sinew::Sync>(s, "ring all-reduce, bf16");
  if (compressor == "onebit") return run<Compressed<Ring, compress::OneBit>, sinew::Sync>(s, "ring all-reduce, 1-bit");
  if (compressor == "powersgd4")
    return run<Compressed<Ring, compress::PowerSgd<4>>, sinew::Sync>(s, "ring all-reduce, PowerSGD rank 4");
  return 2;  // not reached: the command line checked --compress against kCompressors
}

int run_one(const std::string& config, const Settings& s, const std::string& compressor, bool sync_bn) {
  if (sync_bn) {
    if (compressor != "none") return 2;
    if (config == "ring") return run<Ring, sinew::Sync, SyncNet>(s, "ring all-reduce, SyncBatchNorm2d");
    if (config == "mpi") return run<Native, sinew::Sync, SyncNet>(s, "MPI all-reduce, SyncBatchNorm2d");
    return 2;  // not reached: only the all-reduce rows get a --sync-bn row
  }
  if (compressor != "none") return config == "ring" ? run_compressed(compressor, s) : 2;
  if (config == "ring") return run<Ring, sinew::Sync>(s, "ring all-reduce");
  if (config == "ring-copy") return run<Ring, sinew::Sync>(s, "ring all-reduce, gradients copied", false);
  if (config == "mpi") return run<Native, sinew::Sync>(s, "MPI all-reduce");
  if (config == "ps-sync") return run<Server, sinew::Sync>(s, "parameter server, sync");
  if (config == "ps-async") return run<Server, sinew::Async>(s, "parameter server, async");
  if (config == "ps-stale2") return run<Server, sinew::BoundedStaleness<2>>(s, "parameter server, staleness 2");
  return 2;  // not reached: the command line checked --run against kConfigs
}

// The child's results, or none (after saying why) when it failed.
std::map<std::string, double> run_child(const std::string& command) {
  sinew::bench::ChildOutput c = sinew::bench::run_child(command);
  for (const std::string& line : c.lines["info"]) std::printf("  %s\n", line.c_str());  // ranks, threads, cores
  if (c.failure.empty()) return c.results;
  std::fprintf(stderr, "dist: %s", c.failure.c_str());
  return {};
}

}  // namespace

int main(int argc, char** argv) try {
  Settings s;
  std::string one, bind = "core", json;
  std::vector<std::string> only = kDefaultConfigs, compressors = {"none"};
  int ranks = 2;
  bool no_pytorch = false, sync_bn = false;
  CLI::App app{"ResNet-18 data-parallel under every strategy and mode, next to PyTorch DDP over Gloo.\n"
               "One configuration alone: mpirun -np N dist --run CONFIG [--batch 42] [--threads 1] ...",
               "dist"};
  app.add_option("--ranks", ranks, "processes of each run")->capture_default_str()->check(CLI::PositiveNumber);
  sinew::cli::add_threads(app, s.threads, "compute threads of each rank");
  app.add_option("--batch", s.batch, "batch size of each worker")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--warmup", s.warmup, "untimed steps first")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--steps", s.steps, "timed steps")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--accumulate", s.accumulate, "micro-batches of --batch per step, one exchange each "
                 "(TrainerOptions::accumulate)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--bind", bind, "core: mpirun binds each rank to a core; none: nothing binds (mpirun --bind-to none, "
                 "Binding::never); sinew: mpirun binds nothing and each rank takes and binds its share of the cores "
                 "(TrainerOptions::cores' default)")
      ->capture_default_str()
      ->check(CLI::IsMember({"core", "none", "sinew"}));
  app.add_option("--only", only, "configurations to run, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember(kConfigs));
  app.add_option("--compress", compressors, "gradient compressors to run the ring with, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::IsMember(kCompressors));
  app.add_flag("--no-pytorch", no_pytorch, "skip PyTorch DDP");
  app.add_flag("--sync-bn", sync_bn, "also run ring and mpi with SyncBatchNorm2d (under --run: only that)");
  sinew::cli::add_json(app, json);
  app.add_option("--trace", s.trace, "write each configuration's timed steps as a Chrome trace (Perfetto opens "
                 "it): FILE, with the configuration's name before the extension")->option_text("FILE");
  app.add_option("--run", one, "run this one configuration in this process (under mpirun)")
      ->check(CLI::IsMember(kConfigs));
  sinew::cli::parse(app, argc, argv);
  s.sinew_binds = bind != "none";
  if (!one.empty()) return run_one(one, s, compressors.front(), sync_bn);
  const bool pytorch = !no_pytorch;

  const std::string self = "/proc/" + std::to_string(getpid()) + "/exe";
  const std::string common = " --bind " + bind + " --batch " + std::to_string(s.batch) + " --threads " + std::to_string(s.threads) +
                             " --warmup " + std::to_string(s.warmup) + " --steps " + std::to_string(s.steps) +
                             " --accumulate " + std::to_string(s.accumulate);
  std::printf("ResNet-18 (ImageNet stem, 3x32x32), %d ranks x %d threads, bound to %s, local batch %d%s, %d warm-up + "
              "%d timed steps\n",
              ranks, s.threads,
              bind == "core" ? "one core each by mpirun" : bind == "sinew" ? "its share of the cores by sinew" : "nothing",
              s.batch, s.accumulate > 1 ? (" x " + std::to_string(s.accumulate) + " micro-batches a step").c_str() : "",
              s.warmup, s.steps);
  std::printf("%-15s %8s %7s | ms per step: %6s %7s %8s %8s %7s %7s | %s\n", "strategy", "img/s", "vs DDP",
              "load", "forward", "backward", "exposed", "hidden", "update", "exposed comm");
  std::map<std::string, double> ddp;
  if (pytorch) {
    const double ddp_trip_before = sinew::bench::cache_line_round_trip_ns();
    ddp = run_child("/usr/bin/python3 " SINEW_SOURCE_DIR "/bench/pytorch/ddp.py --ranks " + std::to_string(ranks) +
                        " --threads " + std::to_string(s.threads) + " --batch " + std::to_string(s.batch) +
                        " --bind " + (bind == "none" ? "none" : "core") + " --warmup " + std::to_string(s.warmup) + " --steps " +
                        std::to_string(s.steps));
    if (!ddp.empty())
      std::printf("%-15s %8.1f %7s | step %.1f ms, of which %.1f%% waiting for the all-reduce (no_sync difference)"
                  "; round trip %.0f / %.0f ns\n",
                  "pytorch-ddp", ddp["images_per_second"], "1.00", 1e3 * ddp["step_seconds"],
                  100 * ddp["exposed_comm_fraction"], ddp_trip_before, sinew::bench::cache_line_round_trip_ns());
  }
  auto out = sinew::metrics::Json::array();
  struct row {
    std::string config, compressor;
    bool sync_bn = false;
  };
  std::vector<row> runs;
  for (const std::string& config : kConfigs) {
    if (std::find(only.begin(), only.end(), config) == only.end()) continue;
    for (const std::string& c : compressors) {
      if (c == "none" || config == "ring") runs.push_back({config, c});
      if (sync_bn && c == "none" && (config == "ring" || config == "mpi")) runs.push_back({config, c, true});
    }
  }
  for (const auto& [config, compressor, synced] : runs) {
    const std::string label = (compressor == "none" ? config : config + "+" + compressor) + (synced ? "+syncbn" : "");
    std::string trace;
    if (!s.trace.empty()) {
      const std::filesystem::path p(s.trace);
      trace = " --trace " + (p.parent_path() / (p.stem().string() + "-" + label + p.extension().string())).string();
    }
    const std::string mpirun = "mpirun -np " + std::to_string(ranks) +
                               " --allow-run-as-root --oversubscribe --bind-to " + (bind == "core" ? "core" : "none") + " " +
                               self + " --run " + config + " --compress " + compressor + common + trace +
                               (synced ? " --sync-bn" : "");
    const double trip_before = sinew::bench::cache_line_round_trip_ns();
    auto r = run_child(mpirun);
    const double trip_after = sinew::bench::cache_line_round_trip_ns();
    if (r.empty()) continue;
    const double step = r["load"] + r["forward"] + r["backward"] + r["comm_exposed"] + r["update"];
    const double vs = ddp.count("images_per_second") ? r["images_per_second"] / ddp["images_per_second"] : 0;
    std::printf("%-15s %8.1f %7.2f | %19.1f %7.1f %8.1f %8.1f %7.1f %7.1f | %.1f%% of the step", label.c_str(),
                r["images_per_second"], vs, 1e3 * r["load"], 1e3 * r["forward"], 1e3 * r["backward"],
                1e3 * r["comm_exposed"], 1e3 * r["comm_hidden"], 1e3 * r["update"],
                step > 0 ? 100 * r["comm_exposed"] / step : 0.0);
    if (r.count("bytes_per_step")) std::printf(", %.3f MB sent per step", r["bytes_per_step"] / 1e6);
    std::printf(", %.2f ms per image", 1e3 * r["seconds_per_image"]);
    if (r.count("bytes_per_image")) std::printf(", %.1f kB sent per image", r["bytes_per_image"] / 1e3);
    std::printf("; round trip %.0f / %.0f ns\n", trip_before, trip_after);
    std::fflush(stdout);
    auto j = sinew::metrics::Json::object();
    j["strategy"] = config;
    j["compressor"] = compressor;
    j["sync_batch_norm"] = synced;
    j["bytes_per_step"] = r.count("bytes_per_step") ? sinew::metrics::Json(r["bytes_per_step"]) : sinew::metrics::Json();
    j["net"] = "resnet18";
    j["ranks"] = ranks;
    j["workers"] = r["workers"];
    j["threads_per_rank"] = s.threads;
    j["binding"] = bind;
    j["local_batch"] = s.batch;
    j["accumulate"] = s.accumulate;
    j["seconds_per_image"] = r["seconds_per_image"];
    j["bytes_per_image"] = r.count("bytes_per_image") ? sinew::metrics::Json(r["bytes_per_image"]) : sinew::metrics::Json();
    j["images_per_second"] = r["images_per_second"];
    j["pytorch_ddp_images_per_second"] = ddp.count("images_per_second") ? sinew::metrics::Json(ddp["images_per_second"]) : sinew::metrics::Json();
    j["ratio"] = vs > 0 ? sinew::metrics::Json(vs) : sinew::metrics::Json();
    auto ph = sinew::metrics::Json::object();
    for (const char* k : {"load", "forward", "backward", "comm_exposed", "comm_hidden", "update"}) ph[k] = r[k];
    j["seconds_per_step"] = ph;
    j["exposed_comm_share"] = step > 0 ? r["comm_exposed"] / step : 0.0;
    j["core_round_trip_ns"] = sinew::metrics::Json::array({trip_before, trip_after});
    out.push_back(std::move(j));
  }
  if (!json.empty()) sinew::metrics::save_json(out, json);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "dist: %s\n", e.what());
  return 1;
}

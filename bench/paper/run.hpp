// bench/paper/run.hpp: the main of every bench/paper target (one target per system preset x net, see
// bench/paper/CMakeLists.txt): one run of the paper's experiment, Krisilias et al. 2021 Table III x Table IV,
// under mpirun, written as ONE JSON record.
//
//   mpirun -np 3 build/bench/paper/paper_pytorch_lenet5_cifar10 --data DIR --epochs 10 --json pt.json
//   mpirun -np 6 build/bench/paper/paper_tensorflow_lenet5_cifar10 --mode async ...   # 3 workers + 3 servers
//
// Without --data the run trains on generated data of the dataset's shape (CIFAR-10: data_batch_1.bin and
// test_batch.bin; CIFAR-100: train.bin and test.bin, 2 label bytes), written once into --generated-dir: each
// class is a colour with noise, so accuracy rises and means nothing about CIFAR. The record says so
// ("data_generated": true) and bench/paper/run_matrix.py says it in REPRODUCTION.md.
//
// A variant is one policy swapped on the system's preset (presets::Preset::with_*), the way REPRODUCTION.md
// isolates the cause of a finding: "preset", "backend=onednn", "loader=cached", "sharding=disjoint" (a loader
// option, not a type). Each system's header (tensorflow.hpp ...) lists its variants; every variant is timed
// with metrics::OperatorProfile.
//
// The record (rank 0 writes it; see bench/paper/README.md for every field): configuration (system, variant,
// swap, net, dataset, mode, ranks, workers, servers, local and global batch, threads, binding, CPU model),
// seconds of each epoch (the slowest worker's; time_per_epoch_seconds and the phases and operators leave out
// the first epoch, which sets up, when there are more), the phases per epoch (load / forward / backward / exposed
// comm / hidden comm / update, the workers' mean), the operator profile per epoch (rank 0's), peak resident
// memory of every rank, training and held-out accuracy; and per step, after --warmup steps: the slowest worker's
// time of each step, the workers' mean phases and rank 0's operators (the unit run_matrix.py compares), with
// the link between ranks 0 and 1 when --pingpong asks.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "sinew/sinew.hpp"

namespace sinew::bench::paper {

/// CIFAR's image side.
inline constexpr int kCifarSide = 32;

/// What the command line asks of one run.
struct Settings {
  std::string data;                          ///< a CIFAR-10 or CIFAR-100 binary directory; empty: generated
  std::string generated_dir = "paper-generated";  ///< where generated data is written (and found again)
  int generated_samples = 3000;              ///< generated training images (the held-out set: a fifth)
  int epochs = 10;                           ///< Table IV
  int steps = 0;                             ///< at most this many steps per epoch; 0: the whole epoch
  /// Steps before the per-step timing starts (oneDNN's primitives, first allocations, the loader's threads,
  /// caches): the per-step figures and the operator profile are the steps after them
  int warmup = 10;
  int batch = 42;                            ///< local batch, Table IV
  int threads = 1;                           ///< compute threads of each rank
  /// Held-out images evaluated after the last epoch: at most this many with a caching loader; a streaming
  /// loader reads its whole held-out file (CIFAR's 10000 images)
  int eval_samples = 10000;
  std::string mode = "sync";                 ///< sync | async
  std::string variant = "preset";            ///< which swap (see the system's header)
  std::string binding = "unknown";           ///< what mpirun bound each rank to (the driver says)
  bool pingpong = false;                     ///< measure the link between ranks 0 and 1 first (alpha, beta)
  std::string json;                          ///< the record's path
};

/// The link between ranks 0 and 1 as the alpha-beta model sees it (bench/cluster.py fits the same from
/// bench/comm): half the median round trip of n bytes, t(n) = alpha + beta n, beta from 1 and 4 MiB, alpha from
/// 8 bytes. Across scripts/cluster hosts ranks 0 and 1 are workers on hosts h0 and h1 (--map-by node).
struct Link {
  double alpha = 0, beta = 0;
};

inline Link pingpong(MPI_Comm comm) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  if (ranks < 2) return {};
  std::vector<char> buffer(std::size_t(4) << 20);
  const auto one_way = [&](int bytes, int iterations) {
    std::vector<double> times;
    for (int i = 0; i < iterations + 1; ++i) {  // the first round trip sets the connection up
      MPI_Barrier(comm);
      const double start = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(buffer.data(), bytes, MPI_CHAR, 1, 31, comm);
        MPI_Recv(buffer.data(), bytes, MPI_CHAR, 1, 31, comm, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buffer.data(), bytes, MPI_CHAR, 0, 31, comm, MPI_STATUS_IGNORE);
        MPI_Send(buffer.data(), bytes, MPI_CHAR, 0, 31, comm);
      }
      if (i > 0) times.push_back((MPI_Wtime() - start) / 2);
    }
    std::sort(times.begin(), times.end());
    double t = times[times.size() / 2];
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, comm);
    return t;
  };
  const double small = one_way(8, 20), mib = one_way(1 << 20, 5), four = one_way(4 << 20, 5);
  Link l;
  l.beta = std::max(four - mib, 0.0) / double(3 << 20);
  l.alpha = std::max(small - 8 * l.beta, 0.0);
  return l;
}

/// The same Trainer timing every operator.
template <class T>
using profiled = Trainer<typename T::network, typename T::backend, typename T::strategy, typename T::sync_mode,
                         typename T::optimizer_type, typename T::loader_type, metrics::OperatorProfile>;

/// One row of a system's variant table: the preset P, the Trainer T it runs (a P::with_* swap or P's own),
/// and what was swapped, as C++ and in words.
struct Variant {
  std::string name;   ///< "preset", "backend=onednn" ...
  std::string swap;   ///< "TensorFlow<Net, Sync>::with_backend<backend::OneDnn>", or "" for the preset
  std::string sharding;  ///< "", or the Sharding the loader options are forced to ("disjoint")
};

inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

// Generated data of CIFAR's record layout: [coarse label] label, 3072 bytes (CHW). Class c is a colour (its
// three channel levels from c) with uniform noise of +-64, so a net can learn it.
inline void write_generated_file(const std::filesystem::path& path, int classes, int samples, std::uint64_t seed) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("paper: cannot write generated data to " + path.string() + " (choose "
                                     "another --generated-dir)");
  Rng rng(seed);
  std::vector<char> record;
  for (int i = 0; i < samples; ++i) {
    record.clear();
    const int c = int(rng.below(std::uint64_t(classes)));
    if (classes == 100) record.push_back(char(c / 5));
    record.push_back(char(c));
    for (int ch = 0; ch < 3; ++ch) {
      const int level = 64 + ((c * (ch == 0 ? 7 : ch == 1 ? 13 : 29) + ch * 3) % 17) * 8;
      for (int p = 0; p < kCifarSide * kCifarSide; ++p)
        record.push_back(char(std::clamp(level + int(rng.below(129)) - 64, 0, 255)));
    }
    out.write(record.data(), std::streamsize(record.size()));
  }
  if (!out) throw std::runtime_error("paper: writing " + path.string() + " failed (disk full?)");
}

/// The dataset's training and held-out files: from --data, or generated (rank 0 writes them, once).
struct DataFiles {
  std::vector<std::filesystem::path> train, test;
  bool generated = false;
  std::string where;
};

inline DataFiles data_files(const Settings& s, int classes, int rank, MPI_Comm comm) {
  namespace fs = std::filesystem;
  DataFiles f;
  const bool c100 = classes == 100;
  if (!s.data.empty()) {
    f.where = s.data;
    if (c100) {
      f.train = {fs::path(s.data) / "train.bin"};
    } else {
      for (int i = 1; i <= 5; ++i)
        if (fs::exists(fs::path(s.data) / ("data_batch_" + std::to_string(i) + ".bin")))
          f.train.push_back(fs::path(s.data) / ("data_batch_" + std::to_string(i) + ".bin"));
    }
    // The held-out file: CIFAR's, or the first 1000 of its records (a development copy may hold only those).
    f.test = {fs::path(s.data) / (c100 ? "test.bin" : "test_batch.bin")};
    if (!c100 && !fs::exists(f.test[0]) && fs::exists(fs::path(s.data) / "test_batch_first1000.bin"))
      f.test = {fs::path(s.data) / "test_batch_first1000.bin"};
    std::vector<fs::path> needed = f.train.empty() ? std::vector<fs::path>{fs::path(s.data) / "data_batch_1.bin"}
                                                   : f.train;
    needed.push_back(f.test[0]);
    for (const auto& p : needed)
      if (!fs::exists(p))
        throw std::runtime_error("paper: --data " + s.data + " has no " + p.filename().string() + " (give " +
                                 (c100 ? "a cifar-100-binary" : "a cifar-10-batches-bin") +
                                 " directory, or leave --data out for generated data)");
    return f;
  }
  f.generated = true;
  const fs::path dir = fs::path(s.generated_dir) / ((c100 ? "cifar100-" : "cifar10-") +
                                                    std::to_string(s.generated_samples));
  f.where = dir.string();
  f.train = {dir / (c100 ? "train.bin" : "data_batch_1.bin")};
  f.test = {dir / (c100 ? "test.bin" : "test_batch.bin")};
  const std::size_t record = c100 ? 3074 : 3073;
  const auto complete = [&](const fs::path& p, int n) {
    return fs::exists(p) && fs::file_size(p) == record * std::size_t(n);
  };
  const int test_n = std::max(s.generated_samples / 5, 1);
  if (rank == 0 && !(complete(f.train[0], s.generated_samples) && complete(f.test[0], test_n))) {
    fs::create_directories(dir);
    write_generated_file(f.train[0], classes, s.generated_samples, 1);
    write_generated_file(f.test[0], classes, test_n, 2);
  }
  MPI_Barrier(comm);
  return f;
}

/// CIFAR's channel means and deviations, as torchvision's CIFAR examples normalise.
inline data::LoaderOptions base_options(int batch, int side) {
  data::LoaderOptions o;
  o.batch_size = batch;
  o.drop_last = true;
  o.mean = {0.4914f, 0.4822f, 0.4465f};
  o.std = {0.2470f, 0.2435f, 0.2616f};
  if (side != kCifarSide) o.resize_to_height = o.resize_to_width = side;  // AlexNet: 64x64, Table III
  return o;
}

template <class L>
L make_loader(const std::vector<std::filesystem::path>& files, int classes, data::LoaderOptions o) {
  if constexpr (std::same_as<L, data::CachedLoader>) {
    return L(classes == 100 ? data::read_cifar100(files) : data::read_cifar10(files), o);
  } else {
    return L(classes == 100 ? data::CifarRecords::cifar100(files) : data::CifarRecords::cifar10(files), o);
  }
}

template <class L>
std::string loader_name() {
  if constexpr (std::same_as<L, data::CachedLoader>) return "cached";
  else return "streaming";
}

/// One run: preset P's options and loader options, Trainer T (P's own or a swap), written as one record.
template <class P, class T>
int run(const Settings& s, const Variant& v, const std::string& system, const std::string& net) {
  using Train = profiled<T>;
  using L = typename Train::loader_type;
  using In = typename Train::input_shape;
  constexpr int kClasses = Train::network::output_shape::kChannels;
  Train trainer({.threads = s.threads, .seed = 1, .warmup_steps = 0}, {.lr = 0.01f, .momentum = 0.9f},
                typename Train::strategy(P::options()));
  MPI_Comm world = MPI_COMM_WORLD;
  int rank = 0, ranks = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &ranks);
  const DataFiles files = data_files(s, kClasses, rank, world);
  const Link link = s.pingpong ? pingpong(world) : Link{};
  const int workers = trainer.dist().workers();
  const bool worker = trainer.dist().is_worker();

  data::LoaderOptions lo = P::loader_options(base_options(s.batch, In::kHeight), trainer.dist().worker_index(),
                                             workers);
  if (v.sharding == "disjoint") lo.sharding = data::Sharding::disjoint;
  L loader = make_loader<L>(files.train, kClasses, lo);
  std::size_t per_epoch = loader.batches_per_epoch();
  // Every worker reads everything (asynchronous TensorFlow) but "processes only the one third in each epoch".
  if (lo.sharding == data::Sharding::every_worker_reads_all) per_epoch = (per_epoch + workers - 1) / workers;
  if (s.steps > 0) per_epoch = std::min(per_epoch, std::size_t(s.steps));

  // Every step after the warm-up, as the trainer timed it (its phases; a step's time is their total()).
  std::vector<metrics::PhaseSeconds> timed;
  trainer.set_step_callback([&](const StepInfo& info) {
    if (info.steps_done == s.warmup) trainer.model().profile().reset();
    if (info.steps_done > s.warmup) timed.push_back(info.phases);
  });
  if (std::size_t(s.epochs) * per_epoch <= std::size_t(s.warmup))
    throw std::runtime_error("paper: --warmup " + std::to_string(s.warmup) + " leaves no timed step of the " +
                             std::to_string(s.epochs) + " x " + std::to_string(per_epoch) +
                             " steps (raise --steps or --epochs, or lower --warmup)");

  auto record = metrics::Json::object();
  std::vector<double> epoch_seconds;
  double phase_sum[6] = {};
  std::uint64_t bytes_before = 0, bytes_after = 0;  // gradient bytes this rank sent (strategies that count them)
  std::size_t counted_steps = 0;
  double train_accuracy = 0, train_loss = 0;
  for (int e = 0; e < s.epochs; ++e) {
    MPI_Barrier(world);
    if constexpr (requires { trainer.dist().bytes_sent(); }) bytes_before = trainer.dist().bytes_sent();
    const EpochStats st = trainer.train_epoch(loader, per_epoch);
    if constexpr (requires { trainer.dist().bytes_sent(); }) bytes_after = trainer.dist().bytes_sent();
    counted_steps = st.steps;
    double mine[8] = {worker ? st.seconds : 0.0, worker ? st.phases.load : 0.0, worker ? st.phases.forward : 0.0,
                      worker ? st.phases.backward : 0.0, worker ? st.phases.comm : 0.0,
                      worker ? st.phases.comm_hidden : 0.0, worker ? st.phases.update : 0.0,
                      worker ? st.accuracy : 0.0};
    double sum[8], slowest = 0;
    MPI_Allreduce(mine, sum, 8, MPI_DOUBLE, MPI_SUM, world);
    MPI_Allreduce(&mine[0], &slowest, 1, MPI_DOUBLE, MPI_MAX, world);
    epoch_seconds.push_back(slowest);
    // The first epoch sets up (oneDNN primitives, first allocations, the loader's threads): with later epochs,
    // the phases and the operators are theirs.
    // (With a warm-up, the profile is reset where it ends instead.)
    if (e == 0 && s.epochs > 1) {
      if (s.warmup == 0) trainer.model().profile().reset();
    } else {
      for (int k = 0; k < 6; ++k) phase_sum[k] += sum[1 + k] / workers;
    }
    train_accuracy = sum[7] / workers;
    train_loss = worker ? st.loss : 0.0;
  }

  // Held out: rank 0 (a worker under every strategy) evaluates at most eval_samples images.
  metrics::Json test = nullptr;
  std::size_t test_samples = 0;
  if (rank == 0 && s.eval_samples > 0) {
    data::LoaderOptions eo = base_options(100, In::kHeight);
    eo.shuffle = false;
    eo.drop_last = false;
    L held = make_loader<L>(files.test, kClasses, eo);
    const std::size_t limit = std::size_t(s.eval_samples);
    if (held.size() <= limit) {
      const EvalStats ev = trainer.evaluate(held);
      test = ev.accuracy;
      test_samples = ev.samples;
    } else {  // a prefix of the held-out files, as a caching loader of the same batches
      data::Dataset d = kClasses == 100 ? data::read_cifar100(files.test) : data::read_cifar10(files.test);
      if constexpr (std::same_as<L, data::CachedLoader>) {
        L part(data::take(d, 0, limit), eo);
        const EvalStats ev = trainer.evaluate(part);
        test = ev.accuracy;
        test_samples = ev.samples;
      } else {
        const EvalStats ev = trainer.evaluate(held);  // a streaming loader reads the whole file
        test = ev.accuracy;
        test_samples = ev.samples;
      }
    }
  }

  // Peak memory of every rank, in rank order.
  const double rss = double(metrics::peak_rss_bytes());
  std::vector<double> all_rss(std::size_t(ranks), 0.0);
  MPI_Gather(&rss, 1, MPI_DOUBLE, all_rss.data(), 1, MPI_DOUBLE, 0, world);

  // Per step after the warm-up: the slowest worker's time (a synchronous step waits for it) and the workers'
  // mean phases. Servers time no step; asynchronous workers pass the same step count, so step i is everyone's i.
  unsigned long long mine_n = timed.size(), timed_n = 0;
  MPI_Allreduce(&mine_n, &timed_n, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, world);
  std::vector<double> step_mine(timed_n, 0.0), step_slowest(timed_n, 0.0);
  double phase_mine[6] = {}, phase_step[6] = {};
  for (std::size_t i = 0; i < timed.size(); ++i) {
    const metrics::PhaseSeconds& p = timed[i];
    step_mine[i] = p.total();
    const double each[6] = {p.load, p.forward, p.backward, p.comm, p.comm_hidden, p.update};
    for (int k = 0; k < 6; ++k) phase_mine[k] += each[k] / double(timed.size());
  }
  MPI_Reduce(step_mine.data(), step_slowest.data(), int(timed_n), MPI_DOUBLE, MPI_MAX, 0, world);
  MPI_Reduce(phase_mine, phase_step, 6, MPI_DOUBLE, MPI_SUM, 0, world);
  if (rank != 0) return 0;

  const int averaged = s.epochs > 1 ? s.epochs - 1 : 1;  // the epochs the phases and operators are means of
  const double epochs = double(averaged);
  record["schema"] = "sinew.paper.run/2";  // 2: the per-step figures after a warm-up
  record["system"] = system;
  record["variant"] = v.name;
  record["swap"] = v.swap;
  record["net"] = net;
  record["dataset"] = kClasses == 100 ? "cifar100" : "cifar10";
  record["input"] = to_string<In>();
  record["data_generated"] = files.generated;
  record["data_path"] = files.where;
  record["mode"] = s.mode;
  record["backend"] = std::string(Train::backend::kName);
  record["strategy"] = std::string(Train::strategy::kName);
  record["loader"] = loader_name<L>();
  record["sharding"] = lo.sharding == data::Sharding::disjoint ? "disjoint" : "every_worker_reads_all";
  record["ranks"] = ranks;
  record["workers"] = workers;
  record["servers"] = ranks - workers;
  record["local_batch"] = s.batch;
  record["global_batch"] = s.batch * workers;
  record["threads_per_rank"] = trainer.context().threads();
  record["binding"] = s.binding;
  record["cpu_model"] = cpu_model();
  record["epochs"] = s.epochs;
  record["steps_per_epoch"] = per_epoch;
  record["epoch_seconds"] = epoch_seconds;
  double total = 0;
  for (double x : epoch_seconds) total += x;
  record["total_seconds"] = total;
  record["averaged_epochs"] = averaged;
  // The per-step figures (bench/paper/README.md): the unit of comparison, whatever the epochs' lengths.
  record["warmup_steps"] = s.warmup;
  record["timed_steps"] = timed_n;
  record["step_seconds_each"] = step_slowest;
  std::vector<double> sorted_steps = step_slowest;
  std::sort(sorted_steps.begin(), sorted_steps.end());
  const std::size_t n = sorted_steps.size();
  record["step_seconds_median"] =
      n == 0 ? metrics::Json() : metrics::Json(n % 2 ? sorted_steps[n / 2]
                                                      : 0.5 * (sorted_steps[n / 2 - 1] + sorted_steps[n / 2]));
  auto per_step = metrics::Json::object();
  const char* step_keys[] = {"load", "forward", "backward", "comm_exposed", "comm_hidden", "update"};
  for (int k = 0; k < 6; ++k) per_step[step_keys[k]] = phase_step[k] / workers;
  record["phases_seconds_per_step"] = per_step;
  auto ops_step = metrics::Json::object();
  const double profiled_steps = s.warmup > 0 ? double(std::max<std::size_t>(timed_n, 1))
                                             : epochs * double(per_epoch);
  for (const auto& [kind, seconds] : trainer.model().profile().by_kind()) ops_step[kind] = seconds / profiled_steps;
  record["operators_seconds_per_step"] = ops_step;
  record["parameters"] = Train::network::kParams;
  auto stack = metrics::Json::object();
  stack["compiler"] = std::string(__VERSION__);
  stack["onednn"] = std::to_string(DNNL_VERSION_MAJOR) + "." + std::to_string(DNNL_VERSION_MINOR) + "." +
                    std::to_string(DNNL_VERSION_PATCH);
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int mpi_version_length = 0;
  MPI_Get_library_version(mpi_version, &mpi_version_length);
  std::string mpi(mpi_version, std::size_t(mpi_version_length));
  stack["mpi"] = mpi.substr(0, mpi.find(','));
  record["stack"] = stack;
  record["link_alpha_seconds"] = s.pingpong && ranks > 1 ? metrics::Json(link.alpha) : metrics::Json();
  record["link_beta_seconds_per_byte"] = s.pingpong && ranks > 1 ? metrics::Json(link.beta) : metrics::Json();
  record["time_per_epoch_seconds"] = (s.epochs > 1 ? total - epoch_seconds[0] : total) / epochs;
  auto ph = metrics::Json::object();
  const char* keys[] = {"load", "forward", "backward", "comm_exposed", "comm_hidden", "update"};
  for (int k = 0; k < 6; ++k) ph[keys[k]] = phase_sum[k] / epochs;
  record["phases_seconds_per_epoch"] = ph;
  auto ops = metrics::Json::object();
  // With a warm-up the profile holds the timed steps: scaled to an epoch of this run's length.
  const double ops_scale = s.warmup > 0 ? double(per_epoch) / profiled_steps : 1.0 / epochs;
  for (const auto& [kind, seconds] : trainer.model().profile().by_kind()) ops[kind] = seconds * ops_scale;
  record["operators_seconds_per_epoch"] = ops;
  record["peak_rss_bytes_per_rank"] = all_rss;
  auto acc = metrics::Json::object();
  acc["train"] = train_accuracy;
  acc["train_loss_rank0"] = train_loss;
  acc["test"] = test;
  acc["test_samples"] = test_samples;
  record["accuracy"] = acc;
  // rank 0's gradient bytes sent per step in the last epoch (null where the strategy does not count them)
  record["gradient_bytes_per_step"] =
      bytes_after > bytes_before && counted_steps > 0
          ? metrics::Json(double(bytes_after - bytes_before) / double(counted_steps))
          : metrics::Json();
  if (!s.json.empty()) metrics::save_json(record, s.json);
  std::printf("paper: %s %s %s %s: %.3f s per epoch (%d ranks, %d workers), test accuracy %s\n", system.c_str(),
              v.name.c_str(), net.c_str(), s.mode.c_str(), record["time_per_epoch_seconds"].get<double>(), ranks,
              workers, test.dump().c_str());
  return 0;
}

/// The command line every target shares; `variants` lists what this system's target can run.
inline Settings parse(int argc, char** argv, const std::string& target, const std::vector<std::string>& variants,
                      const std::vector<std::string>& modes) {
  Settings s;
  CLI::App app{"One run of the paper's matrix (Krisilias et al. 2021): one system preset, one net, one mode, "
               "under mpirun; writes one JSON record. bench/paper/run_matrix.py runs them all.",
               target};
  app.add_option("--data", s.data, "CIFAR-10 (cifar-10-batches-bin) or CIFAR-100 (cifar-100-binary) directory; "
                                   "left out: generated data of its shape");
  app.add_option("--generated-dir", s.generated_dir, "where generated data is written")->capture_default_str();
  app.add_option("--generated-samples", s.generated_samples, "generated training images")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--epochs", s.epochs, "epochs")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--steps", s.steps, "at most this many steps per epoch (0: whole epochs)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", s.warmup, "steps before the per-step timing and the operator profile start")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch", s.batch, "local batch (per worker)")->capture_default_str()->check(CLI::PositiveNumber);
  sinew::cli::add_threads(app, s.threads, "compute threads of each rank");
  app.add_option("--eval-samples", s.eval_samples,
                 "held-out images evaluated after the last epoch, at most (0: none; a streaming loader reads the "
                 "whole held-out file)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--mode", s.mode, "sync or async")->capture_default_str()->check(CLI::IsMember(modes));
  app.add_option("--variant", s.variant, "the preset, or one policy swapped on it")
      ->capture_default_str()
      ->check(CLI::IsMember(variants));
  app.add_option("--binding", s.binding, "what mpirun bound each rank to (recorded, not applied)")
      ->capture_default_str();
  app.add_flag("--pingpong", s.pingpong, "first measure the link between ranks 0 and 1 (alpha, beta)");
  sinew::cli::add_json(app, s.json);
  sinew::cli::parse(app, argc, argv);
  return s;
}

/// main's body: parses, initialises MPI (the strategy's communicator shares it), runs `dispatch(settings)`.
template <class Dispatch>
int main_of(int argc, char** argv, const std::string& target, const std::vector<std::string>& variants,
            const std::vector<std::string>& modes, Dispatch dispatch) try {
  const Settings s = parse(argc, argv, target, variants, modes);
  return dispatch(s);
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s: %s\n", target.c_str(), e.what());
  return 1;
}

}  // namespace sinew::bench::paper

// examples/support/report.hpp: the progress within and after each epoch, and the --json results, shared by the
// training examples.
#pragma once

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "sinew/metrics.hpp"
#include "sinew/metrics/progress.hpp"
#include "sinew/trainer.hpp"

namespace sinew::examples {

/// --quiet, --progress-every and --plain-progress: the line within an epoch (sinew/metrics/progress.hpp), on
/// stdout.
struct ProgressSettings {
  bool quiet = false;
  bool plain = false;  // plain lines even on a terminal: mpirun gives its ranks one even when its own output is a file
  double every_seconds = 10;

  void add_options(CLI::App& app) {
    app.add_flag("--quiet", quiet, "no progress line within an epoch (the line after each epoch stays)");
    app.add_option("--progress-every", every_seconds,
                   "when stdout is not a terminal, print the progress line every this many seconds")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    app.add_flag("--plain-progress", plain,
                 "plain progress lines even on a terminal (mpirun gives its ranks one even when its output is a file)");
  }

  /// Attaches a progress line to `trainer` unless --quiet or `print` is false (the ranks other than 0): live
  /// on a terminal, plain lines every --progress-every seconds elsewhere. Keep the result while training.
  template <class Trainer>
  std::unique_ptr<metrics::Progress> attach(Trainer& trainer, bool print, int epochs, int workers = 1) const {
    if (quiet || !print) return nullptr;
    auto p = std::make_unique<metrics::Progress>(
        std::cout, metrics::ProgressOptions{.terminal = !plain && metrics::is_terminal(stdout),
                                            .every_seconds = every_seconds,
                                            .epochs = epochs,
                                            .workers = workers});
    trainer.set_step_callback(std::ref(*p));
    return p;
  }
};

struct EpochRecord {
  EpochStats train;
  EvalStats test;
};

inline void print_epoch(const EpochRecord& r, int epochs) {
  std::printf("epoch %2d/%d  loss %.4f  train %6.2f%%  test %6.2f%%  %6.1f s  %8.0f img/s\n", r.train.epoch + 1,
              epochs, r.train.loss, 100 * r.train.accuracy, 100 * r.test.accuracy, r.train.seconds,
              r.train.images_per_second);
  std::fflush(stdout);
}

inline metrics::Json phases_json(const metrics::PhaseSeconds& p) {
  auto j = metrics::Json::object();
  j["load"] = p.load;
  j["forward"] = p.forward;
  j["backward"] = p.backward;
  j["update"] = p.update;
  j["comm"] = p.comm;                // exposed: the step waited for it
  j["comm_hidden"] = p.comm_hidden;  // in flight while backward computed, not part of the step
  return j;
}

/// One JSON object: the configuration, the last epoch's figures at top level, and every epoch.
inline metrics::Json results_json(const std::string& program, metrics::Json config,
                                  const std::vector<EpochRecord>& records, double images_per_second) {
  auto j = metrics::Json::object();
  j["program"] = program;
  j["config"] = std::move(config);
  j["epochs"] = int(records.size());
  const EpochRecord last = records.empty() ? EpochRecord{} : records.back();
  j["train_accuracy"] = last.train.accuracy;
  j["test_accuracy"] = last.test.accuracy;
  j["train_loss"] = last.train.loss;
  j["test_loss"] = last.test.loss;
  j["images_per_second"] = images_per_second;
  metrics::PhaseSeconds total;
  for (const auto& r : records) total += r.train.phases;
  j["phases"] = phases_json(total);  // EpochStats::phases, summed
  j["peak_rss_bytes"] = metrics::peak_rss_bytes();
  auto per_epoch = metrics::Json::array();
  for (const auto& r : records) {
    auto e = metrics::Json::object();
    e["epoch"] = r.train.epoch + 1;
    e["train_loss"] = r.train.loss;
    e["train_accuracy"] = r.train.accuracy;
    e["test_loss"] = r.test.loss;
    e["test_accuracy"] = r.test.accuracy;
    e["seconds"] = r.train.seconds;
    e["images_per_second"] = r.train.images_per_second;
    e["phases"] = phases_json(r.train.phases);
    per_epoch.push_back(std::move(e));
  }
  j["per_epoch"] = std::move(per_epoch);
  return j;
}

}  // namespace sinew::examples

// examples/support/checkpoints.hpp: --checkpoint-dir D, --checkpoint-every N (epochs) and --resume for the
// training examples (see sinew/io/checkpoint.hpp and docs/checkpoints.md). With --checkpoint-dir, SIGTERM or
// SIGUSR1 (a preemption: Slurm's --signal, docs/several-hosts.md) saves the run there after the current step
// and the program exits with sinew::preempted's status, 75; --resume continues it.
#pragma once

#include <cstdio>
#include <string>

#include "cli/cli.hpp"

namespace sinew::examples {

struct Checkpoints {
  std::string dir;      // --checkpoint-dir: where checkpoints go; empty: none
  int every = 1;        // --checkpoint-every: save every N epochs (and after the last)
  bool resume = false;  // --resume: continue the run saved in dir

  /// Declares --checkpoint-dir, --checkpoint-every and --resume on `app`, read into this.
  void add_options(CLI::App& app) {
    auto* d = app.add_option("--checkpoint-dir", dir, "save the run into this directory")->option_text("D");
    app.add_option("--checkpoint-every", every, "save every this many epochs (and after the last)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber)
        ->needs(d);
    app.add_flag("--resume", resume, "continue the run saved in --checkpoint-dir")->needs(d);
  }

  /// Every rank (servers too): turns preemption on with --checkpoint-dir; with --resume, continues the saved
  /// run. Returns the epoch to train next (0 for a new run).
  template <class Trainer>
  int start(Trainer& trainer, bool print) const {
    if (!dir.empty()) trainer.set_preemption({.directory = dir});
    if (!resume) return 0;
    const std::string note = trainer.resume(dir);  // what did not carry over exactly (another number of ranks)
    if (print) {
      std::printf("resumed from %s: epoch %d, step %lld\n", dir.c_str(), trainer.epochs_done(),
                  static_cast<long long>(trainer.steps_done()));
      if (!note.empty()) std::printf("%s\n", note.c_str());
    }
    return trainer.epochs_done();
  }

  /// After epoch `epoch` (0-based) of `epochs`: saves every `every` epochs and after the last (every rank).
  template <class Trainer>
  void after_epoch(Trainer& trainer, int epoch, int epochs) const {
    if (!dir.empty() && ((epoch + 1) % every == 0 || epoch + 1 == epochs)) trainer.save_checkpoint(dir);
  }
};

}  // namespace sinew::examples

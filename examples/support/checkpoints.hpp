// examples/support/checkpoints.hpp: --checkpoint-dir D, --checkpoint-every N (epochs) and --resume for the
// training examples (see sinew/io/checkpoint.hpp and the README's "Checkpoints and resume").
#pragma once

#include <cstdio>
#include <string>

#include "support/cli.hpp"

namespace sinew::examples {

struct Checkpoints {
  std::string dir;      // --checkpoint-dir: where checkpoints go; empty: none
  int every = 1;        // --checkpoint-every: save every N epochs (and after the last)
  bool resume = false;  // --resume: continue the run saved in dir

  static Checkpoints from(cli::Args& args) {
    Checkpoints c{args.get("checkpoint-dir", ""), args.integer("checkpoint-every", 1), args.flag("resume")};
    if (c.every < 1) args.fail("--checkpoint-every counts epochs and must be at least 1");
    if (c.dir.empty() && (c.resume || args.get("checkpoint-every", "").size()))
      args.fail("--resume and --checkpoint-every need --checkpoint-dir D");
    return c;
  }

  /// With --resume, continues the saved run; returns the epoch to train next (0 for a new run).
  template <class Trainer>
  int start(Trainer& trainer, bool print) const {
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

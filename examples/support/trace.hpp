// examples/support/trace.hpp: --trace FILE for the training examples: every rank's training steps as a Chrome
// trace (sinew/metrics/timeline.hpp), which Perfetto (ui.perfetto.dev) or chrome://tracing open, and which
// tools/trace_to_svg.py draws one step of.
#pragma once

#include <cstdio>
#include <string>

#include "cli/cli.hpp"

namespace sinew::examples {

struct Trace {
  std::string path;  // --trace: where the trace goes; empty: no trace (nothing is recorded)

  /// Declares --trace on `app`, read into this.
  void add_options(CLI::App& app) {
    app.add_option("--trace", path, "write every rank's training steps to FILE as a Chrome trace (Perfetto opens it)")
        ->option_text("FILE");
  }

  /// Collective: with --trace, starts recording, with room for `steps` steps (nothing is dropped).
  template <class Trainer>
  void start(Trainer& trainer, std::size_t steps) const {
    if (!path.empty()) trainer.start_trace(Trainer::kTraceEventsPerStep * steps);
  }

  /// Collective: with --trace, writes the trace (rank 0 gathers it) and says where.
  template <class Trainer>
  void write(Trainer& trainer, bool print) const {
    if (path.empty()) return;
    trainer.write_trace(path);
    if (print) std::printf("trace: %s (open it in Perfetto, or draw a step with tools/trace_to_svg.py)\n", path.c_str());
  }
};

}  // namespace sinew::examples

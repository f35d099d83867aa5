// metrics/progress.hpp: what the live line and the plain lines say, and how often, driven by a fake clock into
// a string stream (no timing).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "sinew/metrics/progress.hpp"

namespace {
using sinew::metrics::Progress;

struct FakeClock {
  double t = 100;
  Progress::clock_fn fn() {
    return [this] { return t; };
  }
};

TEST(progress, line_says_steps_rate_mean_loss_and_eta) {
  std::ostringstream out;
  FakeClock clock;
  Progress p(out, {.epochs = 5, .workers = 2}, clock.fn());
  p.step(1, 0, 10, 64, 2.0, 1.0);  // the epoch began 1 s before its first step ended
  clock.t += 1;
  p.step(1, 1, 10, 64, 1.0, 1.0);  // 128 samples in 2 s, times 2 workers; 8 steps left at 1 s each
  EXPECT_EQ(p.line(clock.t), "epoch 2/5  step 2/10  128 img/s  loss 1.5000  ETA 0:08");
}

TEST(progress, durations_read_as_minutes_or_hours) {
  EXPECT_EQ(Progress::duration(0), "0:00");
  EXPECT_EQ(Progress::duration(59.6), "1:00");
  EXPECT_EQ(Progress::duration(3725), "1:02:05");
}

TEST(progress, not_a_terminal_prints_one_plain_line_every_period) {
  std::ostringstream out;
  FakeClock clock;
  Progress p(out, {.terminal = false, .every_seconds = 10}, clock.fn());
  for (int s = 0; s < 25; ++s) {  // one step a second, from t = 100 (the epoch began at 99)
    p.step(0, std::size_t(s), 25, 32, 0.5, 1.0);
    clock.t += 1;
  }
  // Lines at 10 s and 20 s into the epoch: after steps 10 and 20, no carriage return, no escape codes.
  EXPECT_EQ(out.str(),
            "epoch 1  step 10/25  32 img/s  loss 0.5000  ETA 0:15\n"
            "epoch 1  step 20/25  32 img/s  loss 0.5000  ETA 0:05\n");
}

TEST(progress, terminal_redraws_in_place_at_most_every_redraw_period_and_erases_at_epoch_end) {
  std::ostringstream out;
  FakeClock clock;
  Progress p(out, {.terminal = true, .redraw_seconds = 0.25}, clock.fn());
  for (int s = 0; s < 10; ++s) {  // ten steps 0.125 s apart (exact in binary): a redraw every second step
    p.step(0, std::size_t(s), 10, 8, 1.0, 0.125);
    if (s < 9) clock.t += 0.125;
  }
  const std::string text = out.str();
  std::string expected;
  for (int done : {1, 3, 5, 7, 9}) {
    const double elapsed = 0.125 * done;
    expected += "\repoch 1  step " + std::to_string(done) + "/10  64 img/s  loss 1.0000  ETA " +
                Progress::duration(elapsed / done * (10 - done)) + "\033[K";
  }
  expected += "\r\033[K";  // the last step erased the line: the epoch's summary starts on a clean one
  EXPECT_EQ(text, expected);
  EXPECT_EQ(text.find('\n'), std::string::npos);
}

TEST(progress, erases_an_epoch_that_stopped_early_and_prints_nothing_to_a_file_in_a_short_epoch) {
  std::ostringstream tty;
  FakeClock clock;
  {
    Progress p(tty, {.terminal = true}, clock.fn());
    p.step(0, 0, 100, 8, 1.0, 0.1);
    p.end_epoch();
    p.end_epoch();  // once
  }
  EXPECT_EQ(tty.str(), "\repoch 1  step 1/100  80 img/s  loss 1.0000  ETA 0:10\033[K\r\033[K");

  std::ostringstream file;
  {
    Progress p(file, {.terminal = false, .every_seconds = 10}, clock.fn());
    for (int s = 0; s < 5; ++s) p.step(0, std::size_t(s), 5, 8, 1.0, 0.1);  // an epoch shorter than the period
  }
  EXPECT_EQ(file.str(), "");
}

}  // namespace

// What the backend consumers share: a Trainer on backend B trains two steps of a tiny net on 8 images.
// Each consumer includes its backend's header, then sinew/trainer.hpp, then this.
#pragma once

#include <sinew/data/cached_loader.hpp>
#include <sinew/nets/sequential.hpp>
#include <sinew/trainer.hpp>

#include <cmath>
#include <cstdio>

template <class B>
int train_two_steps() {
  // Dense layers only: the consumer proves the package, not the convolutions (tests/backend does), and a
  // convolution would double its compile time.
  using Net = sinew::Sequential<sinew::Input<1, 4, 4>, sinew::Flatten, sinew::Dense<8>, sinew::ReLU, sinew::Dense<2>>;
  sinew::data::Dataset data{.channels = 1, .height = 4, .width = 4, .num_classes = 2, .pixels = {}, .labels = {}};
  for (int i = 0; i < 8; ++i) {
    data.labels.push_back(i % 2);
    data.pixels.insert(data.pixels.end(), 16, static_cast<std::uint8_t>(i * 30));
  }
  sinew::data::CachedLoader loader(data, {.batch_size = 4});
  sinew::Trainer<Net, B> trainer({.threads = 1, .warmup_steps = 0}, {.lr = 0.1f});
  const auto epochs = trainer.train_steps(loader, 2);
  const bool ok = epochs.size() == 1 && epochs[0].steps == 2 && std::isfinite(epochs[0].loss) && epochs[0].loss > 0;
  std::printf("consumer %s: %s, 2 steps, loss %.3f\n", B::kName.data(), ok ? "ok" : "wrong", epochs[0].loss);
  return ok ? 0 : 1;
}

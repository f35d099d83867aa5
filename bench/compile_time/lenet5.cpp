// The README's program (examples/minimal.cpp) with the backend or the strategy that the build names
// (bench/compile_time/CMakeLists.txt: SINEW_CT_BACKEND, SINEW_CT_STRATEGY), for compile_time.py.
#include <sinew/sinew.hpp>

#include <cstdio>

#ifndef SINEW_CT_BACKEND
#define SINEW_CT_BACKEND sinew::backend::OneDnn
#endif
#ifndef SINEW_CT_STRATEGY
#define SINEW_CT_STRATEGY sinew::dist::Local
#endif

int main() {
  using Net   = sinew::Sequential<sinew::Input<1, 32, 32>,
                                  sinew::Conv2d<6, 5>, sinew::Tanh, sinew::AvgPool<2>,
                                  sinew::Conv2d<16, 5>, sinew::Tanh, sinew::AvgPool<2>,
                                  sinew::Flatten, sinew::Dense<120>, sinew::Tanh, sinew::Dense<10>>;
  using Train = sinew::Trainer<Net, SINEW_CT_BACKEND, SINEW_CT_STRATEGY>;

  sinew::data::LoaderOptions o{.batch_size = 64, .pad_to_height = 32, .pad_to_width = 32,
                               .mean = {0.286f}, .std = {0.353f}};
  sinew::data::CachedLoader train(sinew::data::load_fashion_mnist(sinew::data::Split::train), o);

  Train trainer({.threads = 2}, {.lr = 0.05f, .momentum = 0.9f});
  for (int epoch = 0; epoch < 5; ++epoch) {
    auto s = trainer.train_epoch(train);
    std::printf("loss %.3f  %.0f img/s\n", s.loss, s.images_per_second);
  }
  return 0;
}

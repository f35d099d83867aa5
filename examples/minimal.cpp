// minimal: the README's example, compiled so it cannot rot. LeNet-5 written out as a Sequential.
#include <sinew/backend/onednn.hpp>  // each area it uses; <sinew/sinew.hpp> has them all, and compiles slower
#include <sinew/data.hpp>
#include <sinew/trainer.hpp>

#include <cstdio>

int main() {
  using Net   = sinew::Sequential<sinew::Input<1, 32, 32>,
                                  sinew::Conv2d<6, 5>, sinew::Tanh, sinew::AvgPool<2>,
                                  sinew::Conv2d<16, 5>, sinew::Tanh, sinew::AvgPool<2>,
                                  sinew::Flatten, sinew::Dense<120>, sinew::Tanh, sinew::Dense<10>>;
  using Train = sinew::Trainer<Net, sinew::backend::OneDnn>;  // Local, Sync, Sgd, CachedLoader by default

  sinew::data::LoaderOptions o{.batch_size = 64, .pad_to_height = 32, .pad_to_width = 32,
                               .mean = {0.286f}, .std = {0.353f}};
  sinew::data::CachedLoader train(sinew::data::load_fashion_mnist(sinew::data::Split::train), o);

  Train trainer({.threads = 2}, {.lr = 0.05f, .momentum = 0.9f});
  for (int epoch = 0; epoch < 5; ++epoch) {
    auto s = trainer.train_epoch(train);  // loss, accuracy, images/s, phases
    std::printf("loss %.3f  %.0f img/s\n", s.loss, s.images_per_second);
  }
  return 0;
}

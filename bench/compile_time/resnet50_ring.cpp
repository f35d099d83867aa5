// ResNet-50 (CIFAR input) on OneDnn with the ring over MPI: the largest configuration compile_time.py times.
#include <sinew/sinew.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  using Net      = sinew::nets::ResNet50<sinew::Input<3, 32, 32>, 10>;
  using Strategy = sinew::dist::RingAllReduce<sinew::comm::Mpi>;
  using Train    = sinew::Trainer<Net, sinew::backend::OneDnn, Strategy>;

  sinew::data::LoaderOptions o{.batch_size = 32};
  sinew::data::CachedLoader train(sinew::data::load_cifar10(argc > 1 ? argv[1] : ".", {"data_batch_1.bin"}), o);
  Train trainer({.threads = 2}, {.lr = 0.05f, .momentum = 0.9f});
  auto s = trainer.train_epoch(train);
  std::printf("loss %.3f\n", s.loss);
  return 0;
}

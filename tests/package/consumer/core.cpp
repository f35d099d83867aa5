// Built against the installed package's sinew::core alone: layers, nets, optimizers, data, metrics, io and
// the Trainer's header compile without oneDNN, Eigen or MPI, and two batches go through a loader into an
// optimizer step.
#include <sinew/data.hpp>
#include <sinew/io.hpp>
#include <sinew/layers.hpp>
#include <sinew/metrics.hpp>
#include <sinew/nets.hpp>
#include <sinew/optim.hpp>
#include <sinew/trainer.hpp>

#include <cstdio>
#include <vector>

// sinew::core puts neither Eigen nor MPI on the include path (Debian keeps both outside /usr/include), and
// its headers include no oneDNN (whose headers Debian does keep in /usr/include).
#if __has_include(<Eigen/Core>)
#error "sinew::core put Eigen on the include path"
#endif
#if __has_include(<mpi.h>)
#error "sinew::core put MPI on the include path"
#endif
#ifdef ONEAPI_DNNL_DNNL_HPP
#error "sinew::core's headers included oneDNN"
#endif

int main() {
  static_assert(sinew::nets::LeNet5<>::kParams == 61706);
  sinew::data::Dataset data{.channels = 1, .height = 4, .width = 4, .num_classes = 2, .pixels = {}, .labels = {}};
  for (int i = 0; i < 8; ++i) {
    data.labels.push_back(i % 2);
    data.pixels.insert(data.pixels.end(), 16, static_cast<std::uint8_t>(i * 30));
  }
  sinew::data::CachedLoader loader(data, {.batch_size = 4});
  std::vector<float> images(4 * 16), params(16, 0.0f);
  std::vector<std::int32_t> labels(4);
  sinew::optim::Sgd sgd({.lr = 1.0f}, params.size());
  std::size_t batches = 0;
  while (const std::size_t n = loader.next(images, labels)) {
    sgd.step(params, std::span<const float>(images.data(), 16));
    batches += n > 0;
  }
  const bool ok = batches == 2 && params[0] < 0.0f;
  std::printf("consumer core: %s, %zu batches, parameter 0 is %.3f\n", ok ? "ok" : "wrong", batches, params[0]);
  return ok ? 0 : 1;
}

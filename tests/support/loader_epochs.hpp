// tests/support/loader_epochs.hpp: a whole epoch of any sinew::data::Loader as a list of batches, so that tests
// compare loaders (and epochs of one loader) batch by batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace sinew::test {

struct Batch {
  std::vector<float> images;
  std::vector<std::int32_t> labels;
};

/// start_epoch(epoch), then next() until it returns 0.
template <class L>
std::vector<Batch> run_epoch(L& loader, int epoch) {
  loader.start_epoch(epoch);
  const std::size_t image = static_cast<std::size_t>(loader.channels() * loader.height() * loader.width());
  std::vector<Batch> batches;
  for (;;) {
    Batch b{std::vector<float>(loader.batch_size() * image), std::vector<std::int32_t>(loader.batch_size())};
    const std::size_t n = loader.next(b.images, b.labels);
    if (n == 0) break;
    b.images.resize(n * image);
    b.labels.resize(n);
    batches.push_back(std::move(b));
  }
  return batches;
}

}  // namespace sinew::test

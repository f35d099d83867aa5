// sinew/data/any_loader.hpp: any Loader behind one type, so a program picks its loader at run time.
//
// The trainer takes its loader type as a template parameter; a program that offers several loaders
// (train_cifar10 --loader cached|bytes|streaming, bench/loaders) would otherwise compile one Trainer per
// loader. AnyLoader owns one loader and forwards to it through one virtual call per member: per batch, a few
// nanoseconds against the milliseconds of a step.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "sinew/data/loader_spec.hpp"
#include "sinew/data/streaming_loader.hpp"

namespace sinew::data {

/// Any Loader behind one type (see the top of this file), so that one Trainer type serves loaders chosen at
/// run time. Move-only; the loader it owns lives as long as it does.
class AnyLoader {
 public:
  /// Takes ownership of `loader`; `name` ("cached", "streaming, 2 workers") is what reports call it.
  template <LoaderPolicy L>
  AnyLoader(std::unique_ptr<L> loader, std::string name) : self_(new model<L>(std::move(loader))), name_(std::move(name)) {}

  /// Builds an L from `args` in place.
  template <LoaderPolicy L, class... Args>
  static AnyLoader make(std::string name, Args&&... args) {
    return AnyLoader(std::make_unique<L>(std::forward<Args>(args)...), std::move(name));
  }

  /// The Loader contract (data/loader_spec.hpp): the image shape after padding, this rank's samples per
  /// epoch, the largest batch, the non-empty next() calls per epoch.
  /// @{
  int channels() const { return self_->channels(); }
  int height() const { return self_->height(); }
  int width() const { return self_->width(); }
  std::size_t size() const { return self_->size(); }
  int batch_size() const { return self_->batch_size(); }
  /// @}
  /// The loader's shuffle seed, where it has one (sinew's three do); 0 otherwise.
  std::uint64_t shuffle_seed() const { return self_->shuffle_seed(); }
  /// Calls to next() per epoch that return samples (Loader contract).
  std::size_t batches_per_epoch() const { return self_->batches_per_epoch(); }
  /// Restarts at the first batch of `epoch`, in its order (Loader contract).
  void start_epoch(int epoch) { self_->start_epoch(epoch); }
  /// Writes the next batch (NCHW floats, labels) and returns its samples; 0 at the end of the epoch
  /// (Loader contract: images must hold batch_size() images and labels batch_size() labels).
  std::size_t next(std::span<float> images, std::span<std::int32_t> labels) { return self_->next(images, labels); }

  /// What reports call the loader ("cached", "streaming, 2 workers").
  const std::string& name() const { return name_; }
  /// The loader's own time split (StreamingLoader::times()); zeros for a loader that keeps none.
  LoaderTimes times() const { return self_->times(); }

 private:
  struct concept_t {
    virtual ~concept_t() = default;
    virtual int channels() const = 0;
    virtual int height() const = 0;
    virtual int width() const = 0;
    virtual std::size_t size() const = 0;
    virtual int batch_size() const = 0;
    virtual std::uint64_t shuffle_seed() const = 0;
    virtual std::size_t batches_per_epoch() const = 0;
    virtual void start_epoch(int epoch) = 0;
    virtual std::size_t next(std::span<float> images, std::span<std::int32_t> labels) = 0;
    virtual LoaderTimes times() const = 0;
  };

  template <class L>
  struct model final : concept_t {
    explicit model(std::unique_ptr<L> l) : loader(std::move(l)) {}
    int channels() const override { return loader->channels(); }
    int height() const override { return loader->height(); }
    int width() const override { return loader->width(); }
    std::size_t size() const override { return loader->size(); }
    int batch_size() const override { return loader->batch_size(); }
    std::uint64_t shuffle_seed() const override {
      if constexpr (requires { loader->shuffle_seed(); })
        return loader->shuffle_seed();
      else
        return 0;
    }
    std::size_t batches_per_epoch() const override { return loader->batches_per_epoch(); }
    void start_epoch(int epoch) override { loader->start_epoch(epoch); }
    std::size_t next(std::span<float> images, std::span<std::int32_t> labels) override {
      return loader->next(images, labels);
    }
    LoaderTimes times() const override {
      if constexpr (requires { { loader->times() } -> std::same_as<LoaderTimes>; })
        return loader->times();
      else
        return {};
    }
    std::unique_ptr<L> loader;
  };

  std::unique_ptr<concept_t> self_;
  std::string name_;
};

static_assert(LoaderPolicy<AnyLoader>);

}  // namespace sinew::data

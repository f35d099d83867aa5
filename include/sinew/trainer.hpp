// sinew/trainer.hpp: the training loop, with every design choice a policy.
//
//   using Train = sinew::Trainer<sinew::nets::LeNet5<>,        // the network, a type
//                                sinew::backend::OneDnn,        // operator library
//                                sinew::dist::Local,            // how gradients are combined
//                                sinew::Sync,                   // how workers wait for each other
//                                sinew::optim::Sgd>;            // the update rule
//   Train trainer({.threads = 2}, {.lr = 0.05f, .momentum = 0.9f});
//   auto stats = trainer.train_epoch(loader);
//
// Each step is timed in phases (load, forward, backward, exposed communication, update; communication hidden
// behind backward is reported beside them); images/s counts only steps after the warm-up. A NaN or infinite
// loss stops training with a training_error before the step changes any parameter. On a rank that does not
// train (a parameter server) train_epoch serves the workers' epoch instead.
//
// A strategy with overlap hooks (dist/strategy_spec.hpp) hears from backward as each layer's gradients are
// final. A strategy with require_agreement checks at construction that every rank built the same trainer, and
// at each epoch that every rank has the same batch size and number of batches: a mismatch is an error naming
// the rank, not a hang. (A parameter server's servers take part without a loader of their own, and its Async
// and BoundedStaleness modes allow workers uneven numbers of batches: mode<M>::kUnevenEpochs.)
//
// Steps, not only epochs: train_epoch(loader, max_steps) ends the epoch after max_steps steps (every rank must
// pass the same), and train_steps(loader, n) trains n steps over as many epochs as that takes. A per-step
// callback (set_step_callback) sees each step's loss and phases as it ends; it may throw to stop training.
//
// A Trainer of more than one rank holds a comm::unwinding_guard (comm/failure.hpp): if an exception takes it
// down, this rank ends the whole job when it exits, instead of leaving the others waiting for it.
#pragma once

#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sinew/backend.hpp"
#include "sinew/comm/agreement.hpp"
#include "sinew/comm/failure.hpp"
#include "sinew/core/error.hpp"
#include "sinew/data/cached_loader.hpp"
#include "sinew/data/loader_spec.hpp"
#include "sinew/dist/local.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/dist/sync_mode.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/model.hpp"
#include "sinew/nets/network_spec.hpp"
#include "sinew/optim/optimizer_spec.hpp"
#include "sinew/optim/sgd.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew {

struct TrainerOptions {
  int threads = 0;            ///< compute threads; 0 = the OMP_NUM_THREADS / hardware default
  std::uint64_t seed = 0;     ///< parameter initialisation and dropout masks
  int warmup_steps = 10;      ///< steps left out of images/s
  bool check_finite = true;   ///< stop on a NaN or infinite loss
};

/// What one epoch of training did.
struct EpochStats {
  int epoch = 0;
  std::size_t steps = 0, samples = 0;
  double loss = 0;          ///< mean training loss over the epoch's samples
  double accuracy = 0;      ///< fraction of training samples classified right (during the epoch)
  double seconds = 0;       ///< wall time of the epoch
  double images_per_second = 0;  ///< this process, steps after the warm-up only
  metrics::PhaseSeconds phases;  ///< summed over the epoch's steps
};

/// What one training step did, for Trainer::set_step_callback.
struct StepInfo {
  int epoch = 0;
  std::size_t step = 0;           ///< steps before this one in the epoch
  std::int64_t steps_done = 0;    ///< steps of this trainer so far, this one included
  std::size_t samples = 0;        ///< of this rank in this step
  double loss = 0;                ///< this rank's mean loss over the step's samples
  metrics::PhaseSeconds phases;   ///< this step's
};

/// What an evaluation pass measured.
struct EvalStats {
  std::size_t samples = 0;
  double loss = 0, accuracy = 0, seconds = 0;
};

/// Net, B, S, M, O, L: the policies (see the *_spec.hpp of each). Profile: metrics::NoProfile (free) or
/// metrics::OperatorProfile for per-operator times (model().profile()), with the optimizer step as the
/// kind weights_update (the strategy's update phase).
template <Network Net, Backend B, Strategy S = dist::Local, SyncMode M = Sync, Optimizer O = optim::Sgd,
          data::Loader L = data::CachedLoader, class Profile = metrics::NoProfile>
class Trainer {
  // A strategy that cannot run mode M stops the build here with its own sentence.
  static_assert(sizeof(typename S::template mode<M>) > 0);

 public:
  using model_type = Model<Net, B, Profile>;
  using network = Net;
  using backend = B;
  using strategy = S;
  using sync_mode = M;
  using optimizer_type = O;
  using loader_type = L;
  using input_shape = typename Net::input_shape;
  /// Learning rate at a step, from the base rate: see optim/schedule.hpp.
  using schedule_fn = std::function<float(float base_lr, std::int64_t step)>;
  /// Called after every training step (see set_step_callback).
  using step_callback = std::function<void(const StepInfo&)>;
  /// train_epoch's default: the loader's whole epoch.
  static constexpr std::size_t kWholeEpoch = std::numeric_limits<std::size_t>::max();

  explicit Trainer(TrainerOptions options = {}, typename O::options optimizer = {}, S strategy = {})
      : options_(options),
        ctx_(BackendOptions{options.threads}),
        model_(ctx_, ModelOptions{.seed = options.seed}),
        optimizer_(optimizer, model_.parameters().size()),
        strategy_(std::move(strategy)),
        base_lr_(optimizer_.learning_rate()) {
    if constexpr (req::has_overlap_hooks<S>) strategy_.set_layer_starts(model_type::layer_starts());
    strategy_.template start<M>(model_.parameters(), optimizer_);
    if constexpr (has_agreement) {
      // Ranks that built other trainers would exchange spans of other sizes in other orders, or wait forever.
      std::string type = std::string(B::kName) + " " + std::string(S::kName) + " " + std::string(M::kName) + " " +
                         std::string(O::kName) + " " + to_string<input_shape>();
      for (const std::string& node : model_type::node_names()) type += " " + node;
      const comm::Fact facts[] = {{"trainer type (backend, strategy, sync mode, optimizer, network)",
                                   comm::fingerprint(type), true}};
      strategy_.require_agreement(facts, "trainer");
    }
    // Only now: ranks that disagreed above all throw alike and need not abort the job.
    if (strategy_.world_size() > 1) guard_ = std::make_unique<comm::unwinding_guard>(strategy_.rank());
  }

  model_type& model() noexcept { return model_; }
  O& optimizer() noexcept { return optimizer_; }
  S& dist() noexcept { return strategy_; }
  typename B::context& context() noexcept { return ctx_; }
  std::int64_t steps_done() const noexcept { return step_; }

  /// Sets the learning-rate schedule (default: the optimizer's rate throughout).
  void set_schedule(schedule_fn schedule) { schedule_ = std::move(schedule); }

  /// Calls `callback` after every training step with what the step did (an empty function: none). An exception
  /// it throws leaves train_epoch as one from the loader would (with several ranks, ending the job).
  void set_step_callback(step_callback callback) { step_callback_ = std::move(callback); }

  /// Images per second of this process over every step after the warm-up so far.
  double images_per_second() const { return timed_seconds_ > 0 ? double(timed_images_) / timed_seconds_ : 0; }

  /// One pass over the loader's epoch `epoch_` (counted by the trainer), updating the parameters; with
  /// max_steps, the epoch ends after that many steps (every rank must pass the same).
  EpochStats train_epoch(L& loader, std::size_t max_steps = kWholeEpoch) {
    try {
      return train_epoch_steps(loader, max_steps);
    } catch (const std::exception& e) {
      // Kept for the message that ends the job, should this exception take the trainer down (comm/failure.hpp).
      if (guard_) comm::note_exception(e.what());
      throw;
    }
  }

  /// Trains `steps` steps: whole epochs, then the first steps of one more (each epoch begins anew, as with
  /// train_epoch). Returns the stats of the epochs (or first parts) it trained. Epochs are counted by the
  /// loader's batches_per_epoch(), so every rank (a parameter server's servers too, with the loader they pass)
  /// calls train_epoch equally often when their loaders promise as many batches.
  std::vector<EpochStats> train_steps(L& loader, std::size_t steps) {
    std::vector<EpochStats> epochs;
    const std::size_t per_epoch = loader.batches_per_epoch();
    for (; steps > 0 && per_epoch > 0; steps -= std::min(steps, per_epoch))
      epochs.push_back(train_epoch(loader, std::min(steps, per_epoch)));
    return epochs;
  }

 private:
  EpochStats train_epoch_steps(L& loader, std::size_t max_steps) {
    check_shape(loader);
    if constexpr (has_agreement) {
      // A rank with another batch size would average its gradient with wrong weights; one with more batches
      // would wait forever in an all-reduce the others never start. A rank that does not train (a parameter
      // server) takes part without being compared.
      const std::uint64_t batches = std::min<std::uint64_t>(loader.batches_per_epoch(), max_steps);
      const comm::Fact facts[] = {{"local batch size", std::uint64_t(loader.batch_size())},
                                  {"number of batches in this epoch", batches}};
      const std::span<const comm::Fact> checked(facts, kUnevenEpochs ? 1 : 2);
      if constexpr (requires { strategy_.require_agreement(checked, "trainer", true); })
        strategy_.require_agreement(checked, "trainer", strategy_.is_worker());
      else
        strategy_.require_agreement(checked, "trainer");
    }
    EpochStats stats;
    stats.epoch = epoch_;
    if constexpr (requires { strategy_.template serve<M>(model_.parameters(), stats.phases); })
      if (!strategy_.is_worker()) return serve_epoch(stats);
    loader.start_epoch(epoch_);
    ensure_buffers(loader.batch_size());
    model_.set_training(true);
    double loss_sum = 0, timed_s = 0;
    std::size_t correct = 0, timed_images = 0;
    metrics::Stopwatch epoch_watch;
    while (stats.steps < max_steps) {
      metrics::PhaseSeconds phases;
      metrics::Stopwatch watch;
      const std::size_t n = loader.next(images_.span(), labels_);
      phases.load = watch.lap();
      if (n == 0) break;
      const int batch = int(n);
      model_.forward({images_.data(), n * input_shape::kSize}, batch);
      const LossValue value = model_.loss({labels_.data(), n});
      phases.forward = watch.lap();
      if (options_.check_finite) check_finite(value.loss, stats.steps);
      if constexpr (req::has_overlap_hooks<S>) {
        // The strategy sends each layer's gradients while backward computes the earlier layers'.
        strategy_.backward_begins(model_.gradients());
        model_.backward([this](std::size_t first) { strategy_.gradients_ready(first); });
      } else {
        model_.backward();
      }
      phases.backward = watch.lap();
      optimizer_.set_learning_rate(schedule_ ? schedule_(base_lr_, step_) : base_lr_);
      strategy_.template update<M>(model_.parameters(), model_.gradients(), optimizer_, phases);
      if constexpr (Profile::kEnabled) model_.profile().add(metrics::OpKind::weights_update, phases.update);

      const double step_s = phases.total();
      loss_sum += value.loss * double(n);
      correct += value.correct;
      stats.samples += n;
      stats.phases += phases;
      ++stats.steps;
      if (step_ >= options_.warmup_steps) {
        timed_s += step_s;
        timed_images += n;
      }
      ++step_;
      if (step_callback_)
        step_callback_(StepInfo{epoch_, stats.steps - 1, step_, n, value.loss, phases});
    }
    // A parameter server's worker ends the epoch with the servers' final parameters.
    if constexpr (requires { strategy_.template finish_epoch<M>(model_.parameters(), stats.phases); })
      strategy_.template finish_epoch<M>(model_.parameters(), stats.phases);
    stats.seconds = epoch_watch.elapsed();
    if (stats.samples > 0) {
      stats.loss = loss_sum / double(stats.samples);
      stats.accuracy = double(correct) / double(stats.samples);
    }
    timed_seconds_ += timed_s;
    timed_images_ += timed_images;
    stats.images_per_second = timed_s > 0 ? double(timed_images) / timed_s
                                          : (stats.seconds > 0 ? double(stats.samples) / stats.seconds : 0);
    ++epoch_;
    return stats;
  }

 public:
  /// Loss and accuracy over one pass of `loader` in evaluation mode (running statistics, no dropout), without
  /// changing the parameters or the buffers. A rank that does not train (a parameter server, whose model is
  /// current only in its shard) evaluates nothing: 0 samples.
  EvalStats evaluate(L& loader) {
    check_shape(loader);
    if (!strategy_.is_worker()) return {};
    loader.start_epoch(0);
    ensure_buffers(loader.batch_size());
    model_.set_training(false);
    EvalStats stats;
    metrics::Stopwatch watch;
    double loss_sum = 0;
    std::size_t correct = 0;
    while (const std::size_t n = loader.next(images_.span(), labels_)) {
      model_.forward({images_.data(), n * input_shape::kSize}, int(n));
      const LossValue value = model_.loss({labels_.data(), n});
      loss_sum += value.loss * double(n);
      correct += value.correct;
      stats.samples += n;
    }
    stats.seconds = watch.elapsed();
    if (stats.samples > 0) {
      stats.loss = loss_sum / double(stats.samples);
      stats.accuracy = double(correct) / double(stats.samples);
    }
    return stats;
  }

 private:
  /// On a rank that does not train (a parameter server): serves the workers' steps of this epoch; the stats
  /// count no samples, `steps` the server's optimizer steps.
  EpochStats serve_epoch(EpochStats stats) {
    metrics::Stopwatch watch;
    ++epoch_;
    stats.steps = strategy_.template serve<M>(model_.parameters(), stats.phases);
    stats.seconds = watch.elapsed();
    return stats;
  }

  static constexpr bool has_agreement =
      requires(S& s, std::span<const comm::Fact> facts) { s.require_agreement(facts, "trainer"); };
  // Whether the workers may take other numbers of batches in an epoch (a parameter server in Async mode).
  static constexpr bool kUnevenEpochs = [] {
    if constexpr (requires { S::template mode<M>::kUnevenEpochs; })
      return bool(S::template mode<M>::kUnevenEpochs);
    else
      return false;
  }();

  /// Stops on a NaN or infinite loss, before the step changes any parameter. With several processes all
  /// ranks learn of it together (a strategy's all_agree), so none is left waiting in a collective; with a
  /// parameter server the others learn of it from the servers, at their next step.
  void check_finite(double loss, std::size_t step) {
    const bool finite = std::isfinite(loss);
    bool everywhere = finite;
    if constexpr (requires { strategy_.all_agree(finite); }) everywhere = strategy_.all_agree(finite);
    if (everywhere) return;
    const std::string where = " at epoch " + std::to_string(epoch_) + ", step " + std::to_string(step) +
                              " (learning rate " + std::to_string(optimizer_.learning_rate()) +
                              "); the parameters are those before this step. Lower the learning rate, or check "
                              "the data for NaN or unnormalised values";
    if (!finite)
      throw training_error("trainer: the loss is " + std::string(std::isnan(loss) ? "NaN" : "infinite") + where);
    throw training_error("trainer: another rank's loss is NaN or infinite" + where);
  }

  void check_shape(const L& loader) const {
    if (loader.channels() != input_shape::kChannels || loader.height() != input_shape::kHeight ||
        loader.width() != input_shape::kWidth)
      throw shape_error("trainer: the loader produces " + std::to_string(loader.channels()) + "x" +
                        std::to_string(loader.height()) + "x" + std::to_string(loader.width()) +
                        " images but the network takes " + to_string<input_shape>() +
                        " (pad with LoaderOptions::pad_to_height/width, or change the network's Input)");
  }

  void ensure_buffers(int batch) {
    const std::size_t floats = std::size_t(batch) * input_shape::kSize;
    if (images_.size() != floats) images_ = AlignedBuffer<float>(floats);
    labels_.resize(std::size_t(batch));
  }

  TrainerOptions options_;
  typename B::context ctx_;
  model_type model_;
  O optimizer_;
  S strategy_;
  float base_lr_;
  schedule_fn schedule_;
  step_callback step_callback_;
  std::unique_ptr<comm::unwinding_guard> guard_;  // with more than one rank (see the file comment)
  AlignedBuffer<float> images_;
  std::vector<std::int32_t> labels_;
  int epoch_ = 0;
  std::int64_t step_ = 0;
  double timed_seconds_ = 0;
  std::size_t timed_images_ = 0;
};

}  // namespace sinew

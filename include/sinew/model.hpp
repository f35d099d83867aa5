// sinew/model.hpp: a network instantiated on a backend.
//
// Model<Net, Backend> owns the flat parameter and gradient buffers (one aligned allocation each; every
// layer sees its slice in PyTorch's layout; the gradients may live in memory a strategy gives instead,
// use_gradient_storage), the flat array of non-trainable buffers (BatchNorm's running
// statistics, shared by every plan) and one *plan* per batch size it has seen: the backend's ops with all
// primitives and activations created at set-up. A training step only executes: forward, loss, backward.
// Optimizers, all-reduce and checkpoints work on parameters() and gradients() as flat spans.
//
// Like a PyTorch module, a model is in training mode until set_training(false): BatchNorm then normalises with
// its running statistics and Dropout passes its input through. Dropout's masks are drawn from the model seed,
// the node and step(), the count of training-mode forward passes, so a run is reproducible.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "sinew/backend/backend_spec.hpp"
#include "sinew/backend/generic/probe.hpp"
#include "sinew/core/cross_worker.hpp"
#include "sinew/core/in_backward_update.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/rng.hpp"
#include "sinew/core/type_list.hpp"
#include "sinew/layers/loss.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/metrics/timeline.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/nets/network_spec.hpp"
#include "sinew/tensor/buffer.hpp"

namespace sinew {

/// How a Model initialises.
struct ModelOptions {
  std::uint64_t seed = 0;       ///< initialisation (PyTorch's default schemes) and Dropout's masks
  bool input_gradient = false;  ///< also compute the gradient with respect to the input (tests, attacks)
  /// hold a gradient buffer; false: parameters only, for a rank that never runs the network (a parameter
  /// server's server, which the Trainer builds so), whose forward() is then an error
  bool gradients = true;
};

/// Profile: metrics::NoProfile (default, free) or metrics::OperatorProfile (see metrics/profile.hpp).
template <NetworkPolicy Net, BackendPolicy B, class Profile = metrics::NoProfile>
class Model {
 public:
  /// The policies and shapes it was built from.
  /// @{
  using network = Net;
  using backend = B;
  /// lowered nodes: layers, with each activation fused into the layer before it where the backend fuses
  using nodes = typename Net::template nodes<B::kFuseActivations>;
  using input_shape = typename Net::input_shape;
  using output_shape = typename Net::output_shape;
  /// @}
  /// the number of lowered nodes
  static constexpr std::size_t kOps = nodes::kSize;
  /// trainable parameters, as PyTorch counts them
  static constexpr std::size_t kParams = Net::kParams;
  /// floats in parameters(): every node starts 64-byte aligned
  static constexpr std::size_t kParamSpan = Net::kParamSpan;
  /// Floats in the flat buffer array (0 for a network without BatchNorm).
  static constexpr std::size_t kBufferSpan = []<class... N>(type_list<N...>) {
    return (std::size_t(0) + ... + N::kBufferSpan);
  }(nodes{});

  /// Whether a layer sums over the workers (SyncBatchNorm2d): it then needs set_sum_over_workers() to run on
  /// several (without, it sees this process's batch only).
  static constexpr bool kSumsOverWorkers = sinew::detail::sums_over_workers_of(nodes{});

  /// Offsets in parameters() and gradients() where each node with parameters begins, ascending (execution
  /// order). backward() writes the gradients of the node at layer_starts()[i] before those of the node before it.
  static constexpr auto kLayerStarts = []<class... N>(type_list<N...>) {
    std::array<std::size_t, (std::size_t(0) + ... + (N::kParams > 0 ? 1 : 0))> starts{};
    std::size_t i = 0;
    ((N::kParams > 0 ? void(starts[i++] = N::kParamOffset) : void()), ...);
    return starts;
  }(nodes{});
  /// kLayerStarts as a span.
  static std::span<const std::size_t> layer_starts() noexcept { return kLayerStarts; }

  /// Builds the network on `ctx` (which must outlive the model) and initialises it from options.seed.
  explicit Model(typename B::context& ctx, ModelOptions options = {})
      : ctx_(&ctx),
        options_(options),
        params_(kParamSpan),
        grads_(options.gradients ? kParamSpan : 0),
        buffers_(kBufferSpan),
        gradients_(grads_.span()) {
    initialize(options.seed);
    if constexpr (Profile::kEnabled) profile_.resize(node_names());
  }

  /// Re-draws every parameter with PyTorch's default initialisation from `seed`; resets the buffers.
  void initialize(std::uint64_t seed) {
    parameters_changed();
    Rng rng(seed);
    init_nodes(rng, nodes{});
  }

  /// Every parameter, in PyTorch's layout per tensor, each node's slice 64-byte aligned (state_dict.hpp
  /// maps keys to offsets). Taking the writable span counts as a change of the parameters (see
  /// parameters_changed).
  /// @{
  std::span<float> parameters() noexcept {
    parameters_changed();
    return params_.span();
  }
  std::span<const float> parameters() const noexcept { return params_.span(); }
  /// @}
  /// Tells the model that its parameters changed. An evaluation-mode forward reuses what the ops derived from the
  /// weights at the plan's last evaluation-mode forward (oneDNN's reordered weights, Eigen's HWIO copy) unless the
  /// parameters may have changed since: a training-mode forward, initialize(), or taking parameters() writable
  /// (as the optimizers, strategies and checkpoint loaders do) marks them changed. Code that writes through a span
  /// it took earlier calls this before the next evaluation-mode forward.
  void parameters_changed() noexcept { ++parameters_version_; }
  /// The gradients of the last backward(), laid out as parameters().
  /// @{
  std::span<float> gradients() noexcept { return gradients_; }
  std::span<const float> gradients() const noexcept { return gradients_; }
  /// @}
  /// Keeps the gradients in `storage` from now on (kParamSpan floats, 64-byte aligned, alive while the model
  /// uses them), the current ones copied there, and frees the model's own buffer; empty `storage`: back to a
  /// buffer of the model's own. The Trainer puts them where its strategy reads them (a shared window). The
  /// plans, which hold the gradients' address, are set up again: the next call must be forward().
  void use_gradient_storage(std::span<float> storage) {
    if (!options_.gradients)
      throw error("model: built with ModelOptions::gradients false, so it has no gradients to keep elsewhere");
    if (storage.empty()) {
      if (!grads_.empty()) return;
      AlignedBuffer<float> own(kParamSpan);
      std::copy(gradients_.begin(), gradients_.end(), own.begin());
      grads_ = std::move(own);
      storage = grads_.span();
    } else {
      if (storage.size() != kParamSpan)
        throw shape_error("model: use_gradient_storage got " + std::to_string(storage.size()) + " floats for " +
                          std::to_string(kParamSpan) + " gradients (Model::kParamSpan)");
      if (reinterpret_cast<std::uintptr_t>(storage.data()) % 64 != 0)
        throw error("model: use_gradient_storage needs 64-byte aligned memory (every layer's slice starts on a "
                    "cache line, as the backends' kernels load it)");
      std::copy(gradients_.begin(), gradients_.end(), storage.begin());
      grads_ = AlignedBuffer<float>{};
    }
    gradients_ = storage;
    plans_.clear();
    plan_ = nullptr;
  }
  /// Non-trainable state (running statistics): each layer's slice 64-byte aligned, in Node::kBufferOffset order.
  std::span<float> buffers() noexcept { return buffers_.span(); }
  /// The buffers, read-only.
  std::span<const float> buffers() const noexcept { return buffers_.span(); }
  /// The sum over the workers that the layers with kSumsOverWorkers call (SyncBatchNorm2d's statistics): the
  /// Trainer installs its strategy's. Default: one worker. Every plan sees the one set last.
  void set_sum_over_workers(CrossWorkerSum sum) { *sum_over_workers_ = std::move(sum); }
  /// The update the ops that can apply it run inside backward, on the parameters whose gradients they compute
  /// there (core/in_backward_update.hpp; dist::Local's, installed by the Trainer), in backward_updating().
  /// Empty (the default): every op writes its gradients.
  void set_in_backward_update(InBackwardUpdate::update_fn update) {
    in_backward_update_->set(std::move(update), params_.data());
    plans_.clear();  // the ops set up their path for it with their plan
    plan_ = nullptr;
  }
  /// The backend's context the model runs on.
  typename B::context& context() noexcept { return *ctx_; }

  /// Per-operator times (with Profile = metrics::OperatorProfile): training-mode passes and losses only.
  Profile& profile() noexcept { return profile_; }
  /// Records each node's training-mode forward and backward into `timeline` from now on (null: stops); the
  /// Trainer's start_trace() sets it (metrics/timeline.hpp). `timeline` must outlive its use.
  void set_timeline(metrics::Timeline* timeline) noexcept { timeline_ = timeline; }

  /// "conv2d+tanh+avg_pool", "dense+tanh", ...: one name per lowered node, in execution order.
  static std::vector<std::string> node_names() {
    return []<class... N>(type_list<N...>) {
      return std::vector<std::string>{node_name<N>()...};
    }(nodes{});
  }

  /// The nodes' names with the written layers a node joins after its activation apart: "conv2d+tanh avg_pool" for
  /// node_names()' "conv2d+tanh+avg_pool", as releases before that node named the two. What a checkpoint's
  /// network layout records (Trainer::run_state()), so that a checkpoint resumes across such a change.
  static std::vector<std::string> layout_names() {
    return []<class... N>(type_list<N...>) {
      return std::vector<std::string>{node_name<N>(" ")...};
    }(nodes{});
  }

  /// PyTorch's module.train(true/false): whether the next forward() uses batch statistics and dropout.
  void set_training(bool training) noexcept { training_ = training; }
  /// Whether the next forward() runs in training mode.
  bool training() const noexcept { return training_; }
  /// Training-mode forward passes so far; with the model seed it fixes Dropout's masks. set_step() replays a
  /// step (a resumed run, or a numerical-gradient check that must see the same mask each time).
  std::uint64_t step() const noexcept { return step_; }
  /// Sets step() (see above).
  void set_step(std::uint64_t step) noexcept { step_ = step; }

  /// Runs the network on `batch` samples of plain NCHW floats; returns the output, plain [batch, output].
  std::span<const float> forward(std::span<const float> images, int batch) {
    if (images.size() != std::size_t(batch) * input_shape::kSize)
      throw shape_error("model: forward got " + std::to_string(images.size()) + " floats for a batch of " +
                        std::to_string(batch) + " samples of " + to_string<input_shape>() + " (expected " +
                        std::to_string(std::size_t(batch) * input_shape::kSize) + ")");
    plan_ = &plan_for(batch);
    plan_->input_tensor = &plan_->input.bind(images.data());
    if constexpr (Profile::kEnabled)
      if (profiled()) profile_.count_step();
    // A training step changes the parameters after this forward; an evaluation-mode forward on the parameters of
    // this plan's last one may keep what its ops derived from them (see parameters_changed).
    if (training_) parameters_changed();
    weights_unchanged_ = !training_ && plan_->evaluated_version == parameters_version_;
    plan_->evaluated_version = kNotEvaluated;  // until every op has run: a throwing op leaves the others stale
    forward_at<0>(*plan_, *plan_->input_tensor);
    if (!training_) plan_->evaluated_version = parameters_version_;
    if (training_) ++step_;
    const tensor& last = std::get<kOps - 1>(plan_->ops).dst();
    plan_->output_ptr = B::data(plan_->to_plain_output(*ctx_, last));
    return {plan_->output_ptr, std::size_t(batch) * output_shape::kSize};
  }

  /// Softmax cross-entropy of the last forward() against `labels`; keeps its gradient for backward().
  LossValue loss(std::span<const std::int32_t> labels) {
    plan& p = current("loss");
    if (labels.size() != std::size_t(p.batch))
      throw shape_error("model: loss got " + std::to_string(labels.size()) + " labels for a batch of " +
                        std::to_string(p.batch));
    const auto compute = [&] {
      return SoftmaxCrossEntropy::compute({p.output_ptr, p.diff_output.size()}, labels, int(output_shape::kSize),
                                          p.diff_output.span());
    };
    if constexpr (Profile::kEnabled) {
      if (profiled()) {
        metrics::Stopwatch watch;
        const LossValue value = compute();
        profile_.add(metrics::OpKind::loss, watch.elapsed());
        return value;
      }
    }
    return compute();
  }

  /// Back-propagates the gradient kept by loss(); overwrites gradients().
  void backward() { backward([](std::size_t) {}); }
  /// backward() with the update set by set_in_backward_update run inside it where an op can (`update` false: as
  /// backward()): gradients() then holds no gradient for the parameters an op updated.
  void backward_updating(bool update = true) {
    struct disarm {
      InBackwardUpdate& u;
      ~disarm() { u.arm(false); }
    } guard{*in_backward_update_};
    in_backward_update_->arm(update);
    backward();
  }

  /// The same, calling ready(first) as soon as a node has written its parameter gradients: gradients()[first,
  /// end) are then final. Calls come in decreasing `first`, one per node with parameters that backward reaches
  /// (all of layer_starts(), or only the later ones when backward stops early), so a distribution strategy can
  /// send the last layers' gradients while backward computes the earlier ones (see dist/strategy_spec.hpp).
  template <class Ready>
    requires std::invocable<Ready&, std::size_t>
  void backward(Ready&& ready) {
    plan& p = current("backward");
    backward_at<kOps - 1>(p, p.diff_output_tensor(), ready);
  }

  /// Back-propagates an explicit gradient of the output (plain [batch, output]); overwrites gradients().
  void backward(std::span<const float> diff_output) {
    plan& p = current("backward");
    if (diff_output.size() != p.diff_output.size())
      throw shape_error("model: backward got " + std::to_string(diff_output.size()) + " output gradients, expected " +
                        std::to_string(p.diff_output.size()));
    std::copy(diff_output.begin(), diff_output.end(), p.diff_output.begin());
    const auto nothing = [](std::size_t) {};
    backward_at<kOps - 1>(p, p.diff_output_tensor(), nothing);
  }

  /// Gradient of the input after backward(), plain NCHW (needs ModelOptions::input_gradient).
  std::vector<float> input_gradient() {
    plan& p = current("input_gradient");
    if (!options_.input_gradient)
      throw error("model: input_gradient() needs ModelOptions{.input_gradient = true}");
    std::vector<float> out(std::size_t(p.batch) * input_shape::kSize);
    B::to_plain(*ctx_, std::get<0>(p.ops).diff_src(), out.data());
    return out;
  }

 private:
  template <class N>
  using op_t = typename B::template op<N>;
  using ops_t = as_tuple_t<map_t<op_t, nodes>>;
  using tensor = typename B::tensor;

  /// A plan's evaluated_version when its last forward ran in training mode (or none ran).
  static constexpr std::uint64_t kNotEvaluated = ~std::uint64_t{0};

  struct plan {
    int batch = 0;
    typename B::external input;
    const tensor* input_tensor = nullptr;
    ops_t ops;
    typename B::converter to_plain_output;
    typename B::external diff_output_binding;
    AlignedBuffer<float> diff_output;
    const float* output_ptr = nullptr;
    /// parameters_version_ at this plan's last forward if that ran in evaluation mode, else kNotEvaluated.
    std::uint64_t evaluated_version = kNotEvaluated;

    const tensor& diff_output_tensor() { return diff_output_binding.bind(diff_output.data()); }
  };

  plan& current(const char* what) {
    if (!plan_) throw error(std::string("model: ") + what + "() needs a forward() first");
    return *plan_;
  }

  plan& plan_for(int batch) {
    if (batch <= 0) throw shape_error("model: the batch size must be positive, got " + std::to_string(batch));
    if (!options_.gradients)
      throw error("model: built with ModelOptions::gradients false (parameters only, as a parameter server's server "
                  "holds them), so it cannot run forward() or backward(); build it with gradients true");
    for (auto& p : plans_)
      if (p->batch == batch) return *p;
    auto p = std::make_unique<plan>();
    p->batch = batch;
    auto& ctx = *ctx_;
    p->input.setup(ctx, B::plain_desc(batch, input_shape::kChannels, input_shape::kHeight, input_shape::kWidth));
    setup_at<0>(*p, p->input.desc());
    const auto last_desc = std::get<kOps - 1>(p->ops).dst_desc();
    const auto plain = B::plain_like(last_desc);
    p->to_plain_output.setup(ctx, last_desc, plain);
    p->diff_output_binding.setup(ctx, plain);
    p->diff_output = AlignedBuffer<float>(std::size_t(batch) * output_shape::kSize);
    bind_diff_at<kOps - 1>(*p, plain);
    plans_.push_back(std::move(p));
    return *plans_.back();
  }

  /// Whether any node before I has parameters: only then does node I need to produce its input gradient.
  template <std::size_t I>
  static constexpr bool params_before() {
    return []<std::size_t... J>(std::index_sequence<J...>) {
      return (false || ... || (std::tuple_element_t<J, as_tuple_t<nodes>>::kParams > 0));
    }(std::make_index_sequence<I>{});
  }

  template <std::size_t I, class Desc>
  void setup_at(plan& p, const Desc& src_desc) {
    using N = std::tuple_element_t<I, as_tuple_t<nodes>>;
    float* w = params_.data() + N::kParamOffset;
    float* dw = gradients_.data() + N::kParamOffset;
    const ParamSlots slots{w, N::kBias ? w + N::kWeights : nullptr, dw, N::kBias ? dw + N::kWeights : nullptr,
                           N::kBuffers ? buffers_.data() + N::kBufferOffset : nullptr, sum_over_workers_.get(),
                           in_backward_update_.get()};
    auto& op = std::get<I>(p.ops);
    op.template setup<N>(*ctx_, src_desc, p.batch, slots, options_.input_gradient || params_before<I>());
    if constexpr (I + 1 < kOps) setup_at<I + 1>(p, op.dst_desc());
  }

  template <std::size_t I, class Desc>
  void bind_diff_at(plan& p, const Desc& diff_dst_desc) {
    auto& op = std::get<I>(p.ops);
    op.bind_diff_dst(*ctx_, diff_dst_desc);
    if constexpr (I > 0) {
      if (options_.input_gradient || params_before<I>()) bind_diff_at<I - 1>(p, op.diff_src_desc());
    }
  }

  template <std::size_t I>
  void forward_at(plan& p, const tensor& src) {
    auto& op = std::get<I>(p.ops);
    if constexpr (req::has_mode<std::remove_cvref_t<decltype(op)>>)
      op.set_mode(ForwardMode{training_, mix64(options_.seed ^ mix64(step_ * kOps + I)), weights_unchanged_});
    if (timed()) {
      // The profile's per-node time and the timeline's event come from the same two clock reads.
      metrics::Stopwatch watch;
      bool probed = false;
      if constexpr (Profile::kEnabled) {
        if (profiled()) {
          using N = std::tuple_element_t<I, as_tuple_t<nodes>>;
          auto probe = profile_.start(I);
          const auto kind = sinew::backend::node_kind<N>(metrics::Direction::forward);
          sinew::backend::forward_probed(op, *ctx_, src, probe, kind);
          probe.end(kind);
          probed = true;
        }
      }
      if (!probed) op.forward(*ctx_, src);
      const metrics::clock::time_point end = metrics::clock::now();
      if (profiled())
        profile_.add(I, metrics::Direction::forward, std::chrono::duration<double>(end - watch.since()).count());
      if (traced()) timeline_->record(metrics::TraceKind::layer_forward, watch.since(), end, std::int32_t(I));
    } else {
      op.forward(*ctx_, src);
    }
    if constexpr (I + 1 < kOps) forward_at<I + 1>(p, op.dst());
  }

  template <std::size_t I, class Ready>
  void backward_at(plan& p, const tensor& diff_dst, Ready& ready) {
    auto& op = std::get<I>(p.ops);
    const tensor* src;
    if constexpr (I == 0)
      src = p.input_tensor;
    else
      src = &std::get<I - 1>(p.ops).dst();
    if (timed()) {
      metrics::Stopwatch watch;
      bool probed = false;
      if constexpr (Profile::kEnabled) {
        if (profiled()) {
          using N = std::tuple_element_t<I, as_tuple_t<nodes>>;
          auto probe = profile_.start(I);
          const auto kind = sinew::backend::node_kind<N>(metrics::Direction::backward);
          sinew::backend::backward_probed(op, *ctx_, *src, diff_dst, probe, kind);
          probe.end(kind);
          probed = true;
        }
      }
      if (!probed) op.backward(*ctx_, *src, diff_dst);
      const metrics::clock::time_point end = metrics::clock::now();
      if (profiled())
        profile_.add(I, metrics::Direction::backward, std::chrono::duration<double>(end - watch.since()).count());
      if (traced()) timeline_->record(metrics::TraceKind::layer_backward, watch.since(), end, std::int32_t(I));
    } else {
      op.backward(*ctx_, *src, diff_dst);
    }
    using N = std::tuple_element_t<I, as_tuple_t<nodes>>;
    if constexpr (N::kParams > 0) ready(N::kParamOffset);
    if constexpr (I > 0) {
      // Stop where no earlier node has parameters, unless the input gradient is wanted.
      if (options_.input_gradient || params_before<I>()) backward_at<I - 1>(p, op.diff_src(), ready);
    }
  }

  // Whether the profile records a pass in the current mode (training-mode ones unless asked otherwise).
  bool profiled() const noexcept {
    if constexpr (Profile::kEnabled)
      return profile_.records(training_);
    else
      return false;
  }
  // Whether a training-mode pass goes to the timeline (one pointer test).
  bool traced() const noexcept { return training_ && timeline_ != nullptr; }
  // Whether a pass times its nodes: for the profile, or for the timeline.
  bool timed() const noexcept { return profiled() || traced(); }

  // The layer's name, its fused activation's after "+", and the layer it joins after that (kThen) after `then`.
  template <class N>
  static std::string node_name(std::string_view then = "+") {
    std::string name(N::layer::kName);
    if constexpr (!std::is_same_v<typename N::activation, NoActivation>) name += "+" + std::string(N::activation::kName);
    if constexpr (requires { N::layer::kThen; }) name += std::string(then) + std::string(N::layer::kThen);
    return name;
  }

  template <class... N>
  void init_nodes(Rng& rng, type_list<N...>) {
    (init_node<N>(rng), ...);
  }
  template <class N>
  void init_node(Rng& rng) {
    if constexpr (N::kParams > 0) {
      float* w = params_.data() + N::kParamOffset;
      N::applied::init({w, N::kWeights}, {w + N::kWeights, N::kBias}, rng);
    }
    if constexpr (N::kBuffers > 0) N::applied::init_buffers({buffers_.data() + N::kBufferOffset, N::kBuffers});
  }

  typename B::context* ctx_;
  ModelOptions options_;
  AlignedBuffer<float> params_, grads_, buffers_;
  std::span<float> gradients_;  // grads_, or the storage use_gradient_storage() gave
  std::vector<std::unique_ptr<plan>> plans_;
  // On the heap, so that the plans' pointers to it outlive a move of the model.
  std::unique_ptr<CrossWorkerSum> sum_over_workers_ = std::make_unique<CrossWorkerSum>();
  std::unique_ptr<InBackwardUpdate> in_backward_update_ = std::make_unique<InBackwardUpdate>();
  [[no_unique_address]] Profile profile_;  // NoProfile takes no storage
  metrics::Timeline* timeline_ = nullptr;  // null: no trace (metrics/timeline.hpp)
  plan* plan_ = nullptr;
  bool training_ = true;
  std::uint64_t step_ = 0;
  /// Counts the changes of the parameters (parameters_changed); a plan's evaluated_version compares with it.
  std::uint64_t parameters_version_ = 0;
  bool weights_unchanged_ = false;  ///< the running forward's ForwardMode::weights_unchanged
};

}  // namespace sinew

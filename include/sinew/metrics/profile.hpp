// sinew/metrics/profile.hpp: per-operator timing as a compile-time policy of the Model and the Trainer.
//
//   NoProfile          the default: an empty type (the Model holds it [[no_unique_address]]) whose hooks are
//                      empty inline functions, so a build without profiling contains no timer at all;
//   OperatorProfile    wall time per operator kind, split the way seed 000's Figs. 5 and 7 split a step:
//                      convolution, convolution_backward_data, convolution_backward_weights, batch_norm(_backward),
//                      pooling(_backward), fully_connected, fully_connected_backward_data/_weights, each
//                      activation and its backward (relu, tanh_backward, ...), dropout, flatten, add (residual
//                      sums), reorder (between the backends of a backend::Mix), loss and weights_update, and
//                      the kinds a layer declares with its kProfile ("group_norm", "group_norm_backward"); per
//                      node and per kind, per training step, as JSON or CSV.
//
// How an op's time is split (the probe). The Model times every op as a whole (a node's forward/backward
// seconds) and, separately, hands it a probe. An op that does several things calls probe.begin(kind) where
// each part starts; the time up to the next begin() goes to that kind (a backend op offers this as an
// overload `forward(ctx, src, probe)` / `backward(ctx, src, diff_dst, probe)`; its plain forward/backward
// call that overload with a NoProbe, whose begin() is an empty constexpr function, so without profiling the
// split costs nothing); probe.resume(kind) goes back to a part the call began before without counting a
// second call of it. Every other op is timed whole in its node's kind, which its layer spec declares
// (kProfile; profile_kind: "convolution" for a Conv2d's forward, "pooling_backward" for a pooling's
// backward). The parts of a node sum to its whole time less the probe's own clock reads. Layout reorders inside an op count toward the part they serve.
//
// What each backend splits (see the op's probe overload):
//   Conv2d / Dense    forward: the convolution (inner product), then the fused activation when it runs as
//                     its own pass (OneDnn: Tanh and Sigmoid; a ReLU is a oneDNN post-op inside the
//                     primitive and stays in "convolution"; Eigen: every activation, and the pass also adds
//                     the bias); backward: the activation's backward, then backward weights (with bias),
//                     then backward data (absent where the Model needs no input gradient).
//   BatchNorm2d       (OneDnn) a Tanh/Sigmoid after it; a ReLU is fused into the primitive (fuse_norm_relu).
//   Residual          each op of both branches in its own kind, then "add" / "add_backward" for the sums.
//   backend::Mix      a node computed by another backend than the base's adds "reorder" (its input into that
//                     backend's plain layout, its output back into the base's) and "reorder_backward" (the same
//                     for the gradients) around the op's own kinds; see backend/mix.hpp.
// Which passes are recorded: training-mode ones by default (a Trainer's evaluation between epochs is not part of a
// training step's profile); record(Passes::evaluation) records evaluation-mode forward passes instead, and then no
// training step (an inference profile: the usability paper's section 4.4, bench/zoo's inference rows).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sinew/core/error.hpp"
#include "sinew/metrics/json.hpp"
#include "sinew/metrics/timer.hpp"

namespace sinew::metrics {

enum class Direction { forward, backward };

/// The kinds that ops split their time into and the step's parts outside the nodes, one table from which the
/// enum and op_kind_name come. Names follow seed 000's figures; `reorder` is the layout conversions at the
/// boundary between two backends of a backend::Mix (and `reorder_backward` the gradients' way back). A layer
/// kind whose kProfile is not here gets its two kinds at first use (declare_kind below).
#define SINEW_OP_KINDS(X)                                                                                          \
  X(convolution) X(convolution_backward_data) X(convolution_backward_weights) X(fully_connected)                 \
  X(fully_connected_backward_data) X(fully_connected_backward_weights) X(batch_norm) X(batch_norm_backward)       \
  X(pooling) X(pooling_backward) X(relu) X(relu_backward) X(tanh) X(tanh_backward) X(sigmoid) X(sigmoid_backward) \
  X(dropout) X(dropout_backward) X(flatten) X(flatten_backward) X(add) X(add_backward) X(reorder)                  \
  X(reorder_backward) X(loss) X(weights_update) X(other) X(other_backward)

/// An operator kind: one of the table's, or (from kNamedOpKinds on) one a layer declared.
enum class OpKind : std::uint8_t {
#define SINEW_OP_KIND_ENUMERATOR(name) name,
  SINEW_OP_KINDS(SINEW_OP_KIND_ENUMERATOR)
#undef SINEW_OP_KIND_ENUMERATOR
};

/// The table's names, in the enum's order.
inline constexpr std::array kOpKindNames{
#define SINEW_OP_KIND_NAME(name) std::string_view(#name),
    SINEW_OP_KINDS(SINEW_OP_KIND_NAME)
#undef SINEW_OP_KIND_NAME
};
#undef SINEW_OP_KINDS

/// Kinds of the table.
inline constexpr std::size_t kNamedOpKinds = kOpKindNames.size();
/// Kinds a profile holds: the table's and room for the kinds that layers declare.
inline constexpr std::size_t kOpKinds = kNamedOpKinds + 36;
static_assert(kOpKinds <= 256, "OpKind is one byte");

namespace detail {
/// The kinds layers declared, in the order they were first used; the Model's threads may declare at once.
struct declared_kinds {
  std::mutex mutex;
  std::array<std::string, kOpKinds - kNamedOpKinds> names;
  std::atomic<std::size_t> count{0};  ///< names published (written before count is raised)
};
inline declared_kinds& declared() {
  static declared_kinds kinds;
  return kinds;
}
}  // namespace detail

/// A kind's name: the table's, or the name a layer declared ("" for a kind no one declared).
constexpr std::string_view op_kind_name(OpKind k) {
  const auto i = std::size_t(k);
  if (i < kNamedOpKinds) return kOpKindNames[i];
  const detail::declared_kinds& d = detail::declared();
  return i - kNamedOpKinds < d.count.load(std::memory_order_acquire) ? std::string_view(d.names[i - kNamedOpKinds])
                                                                      : std::string_view();
}

/// Whether a kind is part of the backward pass (its name says "backward").
constexpr bool is_backward(OpKind k) { return op_kind_name(k).find("backward") != std::string_view::npos; }

/// The kind a node's time goes to unless its op says otherwise, from the kind its layer declares (the spec's
/// kProfile, see layers/layer_spec.hpp): forward, the kind of that name; backward, "<kProfile>_backward", or
/// "<kProfile>_backward_weights" for a Conv2d or Dense (the part every such node computes). `other` for a
/// name the table lacks (profile_kind below declares such a layer's own kinds instead).
constexpr OpKind default_kind(std::string_view profile, Direction d) {
  for (std::size_t k = 0; k < kNamedOpKinds; ++k) {
    const std::string_view name = kOpKindNames[k];
    if (d == Direction::forward) {
      if (name == profile && !is_backward(OpKind(k))) return OpKind(k);
    } else if (name.size() > profile.size() && name.starts_with(profile) && name[profile.size()] == '_') {
      const std::string_view rest = name.substr(profile.size());
      if (rest == "_backward" || rest == "_backward_weights") return OpKind(k);
    }
  }
  return d == Direction::forward ? OpKind::other : OpKind::other_backward;
}

/// Whether a layer's kProfile names a kind of both passes.
constexpr bool is_profile_kind(std::string_view profile) {
  return default_kind(profile, Direction::forward) != OpKind::other &&
         default_kind(profile, Direction::backward) != OpKind::other_backward;
}

/// The kind named `name`, declared if it is not yet (a kind of the table is returned as it is). When the
/// profile has no room left, `other` or `other_backward`.
inline OpKind declare_kind(std::string_view name) {
  for (std::size_t k = 0; k < kNamedOpKinds; ++k)
    if (kOpKindNames[k] == name) return OpKind(k);
  detail::declared_kinds& d = detail::declared();
  const std::lock_guard lock(d.mutex);
  const std::size_t n = d.count.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < n; ++i)
    if (d.names[i] == name) return OpKind(kNamedOpKinds + i);
  const bool backward = name.find("backward") != std::string_view::npos;
  if (n == d.names.size()) return backward ? OpKind::other_backward : OpKind::other;
  d.names[n] = std::string(name);
  d.count.store(n + 1, std::memory_order_release);
  return OpKind(kNamedOpKinds + n);
}

/// The kind of a pass of a layer whose kProfile is `profile`: default_kind for a name of the table (a
/// constant), else the layer's own kinds "<profile>" and "<profile>_backward", declared at first use.
constexpr OpKind profile_kind(std::string_view profile, Direction d) {
  if (is_profile_kind(profile)) return default_kind(profile, d);
  return d == Direction::forward ? declare_kind(profile) : declare_kind(std::string(profile) + "_backward");
}

/// The probe of an unprofiled run: begin() compiles to nothing.
struct NoProbe {
  /// false: the Model skips the probe's overloads
  static constexpr bool kEnabled = false;
  /// Does nothing.
  constexpr void begin(OpKind) const noexcept {}
  /// Does nothing.
  constexpr void resume(OpKind) const noexcept {}
};
inline constexpr NoProbe no_probe{};

/// Profiling off: nothing is measured, nothing is stored.
struct NoProfile {
  /// false: the Model keeps no timer
  static constexpr bool kEnabled = false;
  /// The hooks of OperatorProfile, empty.
  /// @{
  void resize(std::vector<std::string>) {}
  void add(std::size_t, Direction, double) {}
  void add(OpKind, double) {}
  /// @}
};

/// Time per node, direction and operator kind, summed over training steps (or, after record(Passes::evaluation),
/// over evaluation-mode forward passes) until reset().
class OperatorProfile {
 public:
  /// true: the Model times every node and hands ops a probe
  static constexpr bool kEnabled = true;

  /// The passes recorded: one mode's only, so that an inference profile's per-pass figures are not averaged with
  /// training steps, nor the other way round.
  enum class Passes { training, evaluation };

  /// Time and calls of one kind.
  struct Part {
    /// summed over the steps
    double seconds = 0;
    /// calls summed over the steps
    std::size_t calls = 0;
  };
  /// One lowered node's times.
  struct Entry {
    std::string name;  ///< "conv2d+tanh", "avg_pool", ...: the lowered node
    /// @{
    double forward_seconds = 0, backward_seconds = 0;  ///< the op timed whole, by the Model
    /// @}
    /// calls of the op, forward and backward
    /// @{
    std::size_t forward_calls = 0, backward_calls = 0;
    /// @}
    std::array<Part, kOpKinds> kinds{};  ///< the same time split by kind (probe), indexed by OpKind

    /// The split's sum for one direction: the whole time less the probe's clock reads.
    double split_seconds(Direction d) const {
      double s = 0;
      for (std::size_t k = 0; k < kOpKinds; ++k)
        if (is_backward(OpKind(k)) == (d == Direction::backward)) s += kinds[k].seconds;
      return s;
    }
  };

  /// Splits one op call into kinds. begin(k) starts part k and closes the running one; the time before the
  /// first begin() belongs to the first part, and begin() of the running kind changes nothing, so each
  /// part counts one call. end(k) closes the last part, or puts the whole call in k if nothing began.
  class probe {
   public:
    /// true: ops call begin() and end()
    static constexpr bool kEnabled = true;
    /// Times one call of node `node` (OperatorProfile::start builds it).
    probe(OperatorProfile& profile, std::size_t node) : kinds_(&profile.entries_[node].kinds), start_(clock::now()) {}
    /// Starts part k (see the class comment).
    void begin(OpKind k) {
      if (started_) {
        if (k == kind_) return;
        const auto now = clock::now();
        part(kind_).seconds += std::chrono::duration<double>(now - start_).count();
        start_ = now;
      }
      started_ = true;
      kind_ = k;
      ++part(k).calls;
    }
    /// Goes back to part k, which this call began before: its time adds to k without counting a second call
    /// (an op that folds its weight gradient after backward data does weights' work again).
    void resume(OpKind k) {
      if (!started_) return begin(k);
      if (k == kind_) return;
      const auto now = clock::now();
      part(kind_).seconds += std::chrono::duration<double>(now - start_).count();
      start_ = now;
      kind_ = k;
    }
    /// Closes the running part (see the class comment).
    void end(OpKind otherwise) {
      if (!started_) begin(otherwise);
      part(kind_).seconds += std::chrono::duration<double>(clock::now() - start_).count();
      started_ = false;
    }

   private:
    Part& part(OpKind k) { return (*kinds_)[std::size_t(k)]; }
    std::array<Part, kOpKinds>* kinds_;
    OpKind kind_ = OpKind::other;
    bool started_ = false;
    clock::time_point start_;
  };

  /// Called by the Model once with one name per node.
  void resize(std::vector<std::string> names) {
    entries_.clear();
    for (auto& n : names) entries_.push_back({std::move(n)});
    steps_ = 0;
    step_kinds_ = {};
  }
  /// A probe for one call of node `node`.
  probe start(std::size_t node) { return probe(*this, node); }

  /// A node's whole forward or backward time.
  void add(std::size_t node, Direction d, double seconds) {
    Entry& e = entries_[node];
    if (d == Direction::forward) {
      e.forward_seconds += seconds;
      ++e.forward_calls;
    } else {
      e.backward_seconds += seconds;
      ++e.backward_calls;
    }
  }
  /// Time of a step's part outside the nodes: loss (by the Model), weights_update (by the Trainer).
  void add(OpKind k, double seconds) {
    Part& p = step_kinds_[std::size_t(k)];
    p.seconds += seconds;
    ++p.calls;
  }
  /// Counts one training step (the Model, at each recorded forward pass: a training step, or an evaluation pass
  /// under Passes::evaluation).
  void count_step() { ++steps_; }

  /// Records the passes of mode `p` from now on (training by default); what was recorded stays until reset().
  void record(Passes p) noexcept { passes_ = p; }
  /// Whether a pass in training mode (`training`) or evaluation mode is recorded.
  bool records(bool training) const noexcept { return training == (passes_ == Passes::training); }

  /// Forgets every time and step (the node names stay).
  void reset() {
    for (Entry& e : entries_) {
      e.forward_seconds = e.backward_seconds = 0, e.forward_calls = e.backward_calls = 0;
      e.kinds = {};
    }
    step_kinds_ = {};
    steps_ = 0;
  }

  /// Every node's times, in execution order.
  const std::vector<Entry>& nodes() const noexcept { return entries_; }
  /// Recorded steps (training steps, or evaluation passes under Passes::evaluation) since resize() or reset().
  std::size_t steps() const noexcept { return steps_; }

  /// A kind summed over every node and the step-level parts.
  Part total(OpKind k) const {
    Part t = step_kinds_[std::size_t(k)];
    for (const Entry& e : entries_) {
      t.seconds += e.kinds[std::size_t(k)].seconds;
      t.calls += e.kinds[std::size_t(k)].calls;
    }
    return t;
  }

  /// Total seconds per kind name, for the kinds that ran.
  std::map<std::string, double> by_kind() const {
    std::map<std::string, double> m;
    for (std::size_t k = 0; k < kOpKinds; ++k)
      if (const Part t = total(OpKind(k)); t.calls > 0) m[std::string(op_kind_name(OpKind(k)))] = t.seconds;
    return m;
  }

  /// {"steps": S, "passes": "training" or "evaluation",
  ///  "kinds": [{"kind", "seconds_per_step", "calls_per_step", "share"}...],
  ///  "nodes": [{"node", "operator", "forward_seconds_per_step", "backward_seconds_per_step", "forward_calls",
  ///             "backward_calls", "kinds": {kind: seconds_per_step}}...]}; shares are of the kinds' sum.
  Json to_json() const {
    const double per = 1.0 / double(std::max<std::size_t>(steps_, 1));
    auto root = Json::object();
    root["steps"] = steps_;
    root["passes"] = std::string(passes_ == Passes::training ? "training" : "evaluation");
    double sum = 0;
    for (std::size_t k = 0; k < kOpKinds; ++k) sum += total(OpKind(k)).seconds;
    auto kinds = Json::array();
    for (std::size_t k = 0; k < kOpKinds; ++k) {
      const Part t = total(OpKind(k));
      if (t.calls == 0) continue;
      auto j = Json::object();
      j["kind"] = std::string(op_kind_name(OpKind(k)));
      j["seconds_per_step"] = t.seconds * per;
      j["calls_per_step"] = double(t.calls) * per;
      j["share"] = sum > 0 ? t.seconds / sum : 0.0;
      kinds.push_back(std::move(j));
    }
    root["kinds"] = std::move(kinds);
    auto nodes = Json::array();
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      const Entry& e = entries_[i];
      auto j = Json::object();
      j["node"] = i;
      j["operator"] = e.name;
      j["forward_seconds_per_step"] = e.forward_seconds * per;
      j["backward_seconds_per_step"] = e.backward_seconds * per;
      j["forward_calls"] = e.forward_calls;
      j["backward_calls"] = e.backward_calls;
      auto split = Json::object();
      for (std::size_t k = 0; k < kOpKinds; ++k)
        if (e.kinds[k].calls > 0) split[std::string(op_kind_name(OpKind(k)))] = e.kinds[k].seconds * per;
      j["kinds"] = std::move(split);
      nodes.push_back(std::move(j));
    }
    root["nodes"] = std::move(nodes);
    return root;
  }

  /// Per node and kind: node,operator,kind,seconds_per_step,calls_per_step. The step-level parts (loss,
  /// weights_update) have an empty node and the operator "step".
  void write_csv(const std::string& path) const {
    std::ofstream f = open(path);
    const double per = 1.0 / double(std::max<std::size_t>(steps_, 1));
    f << "node,operator,kind,seconds_per_step,calls_per_step\n";
    for (std::size_t i = 0; i < entries_.size(); ++i)
      for (std::size_t k = 0; k < kOpKinds; ++k)
        if (const Part& p = entries_[i].kinds[k]; p.calls > 0)
          f << i << ',' << entries_[i].name << ',' << op_kind_name(OpKind(k)) << ',' << p.seconds * per << ','
            << double(p.calls) * per << '\n';
    for (std::size_t k = 0; k < kOpKinds; ++k)
      if (const Part& p = step_kinds_[k]; p.calls > 0)
        f << ",step," << op_kind_name(OpKind(k)) << ',' << p.seconds * per << ',' << double(p.calls) * per << '\n';
  }

  /// Per kind over the whole network: kind,seconds_per_step,calls_per_step,share.
  void write_kinds_csv(const std::string& path) const {
    std::ofstream f = open(path);
    const double per = 1.0 / double(std::max<std::size_t>(steps_, 1));
    double sum = 0;
    for (std::size_t k = 0; k < kOpKinds; ++k) sum += total(OpKind(k)).seconds;
    f << "kind,seconds_per_step,calls_per_step,share\n";
    for (std::size_t k = 0; k < kOpKinds; ++k)
      if (const Part t = total(OpKind(k)); t.calls > 0)
        f << op_kind_name(OpKind(k)) << ',' << t.seconds * per << ',' << double(t.calls) * per << ','
          << (sum > 0 ? t.seconds / sum : 0.0) << '\n';
  }

 private:
  static std::ofstream open(const std::string& path) {
    std::ofstream f(path);
    if (!f) throw error("profile: cannot open " + path + " for writing");
    return f;
  }

  std::vector<Entry> entries_;
  std::array<Part, kOpKinds> step_kinds_{};
  std::size_t steps_ = 0;
  Passes passes_ = Passes::training;
};

}  // namespace sinew::metrics

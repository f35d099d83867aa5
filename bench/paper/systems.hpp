// bench/paper/systems.hpp: each system's variants, the preset and the one-policy swaps REPRODUCTION.md uses to
// isolate a finding's cause. A target (bench/paper/target.cpp.in) instantiates one system for one net.
//
// Machines (the parameter-server systems only): the hosts, each with one worker and one server; the targets
// named paper_<system>_<net>_<N>hosts instantiate N (run_matrix.py --hosts N), the others the paper's 3.
//
// Adding a swap is one branch here and one row in run_matrix.py's SWAPS (the backend::Mix swaps below are two).
#pragma once

#include "paper/run.hpp"
#include "sinew/backend/mix.hpp"
#include "sinew/presets.hpp"

namespace sinew::bench::paper {

/// TensorFlow (Eigen, ring all-reduce or parameter server, caching loader): the preset, the preset with
/// oneDNN's operators (the cause of its slow backward?), with oneDNN's convolutions and nothing else
/// (backend::Mix: is it the convolution_backward?), and asynchronous with each worker reading only its share
/// (the cause of its slow asynchronous LeNet-5?).
template <NetworkPolicy Net, int Machines = 3>
int tensorflow_main(int argc, char** argv, const std::string& target, const std::string& net) {
  return main_of(argc, argv, target, {"preset", "backend=onednn", "backend=mix-conv-onednn", "sharding=disjoint"},
                 {"sync", "async"},
                 [&](const Settings& s) {
                   const auto go = [&]<class Mode>(Mode, const char* mode) {
                     using TF = presets::TensorFlow<Net, Mode, Machines>;
                     const std::string name = std::string("presets::TensorFlow<Net, ") + mode + ">";
                     if (s.variant == "backend=onednn")
                       return run<TF, typename TF::template with_backend<backend::OneDnn>>(
                           s, {s.variant, name + "::with_backend<backend::OneDnn>", ""}, "tensorflow", net);
                     if (s.variant == "backend=mix-conv-onednn")
                       return run<TF, typename TF::template with_backend<backend::Mix<
                                          backend::Eigen, backend::Use<layer_kind::conv2d, backend::OneDnn>>>>(
                           s,
                           {s.variant,
                            name + "::with_backend<backend::Mix<backend::Eigen, backend::Use<layer_kind::conv2d, "
                                   "backend::OneDnn>>>",
                            ""},
                           "tensorflow", net);
                     if (s.variant == "sharding=disjoint")
                       return run<TF, typename TF::trainer_type>(
                           s, {s.variant, name + " with LoaderOptions::sharding = Sharding::disjoint", "disjoint"},
                           "tensorflow", net);
                     return run<TF, typename TF::trainer_type>(s, {"preset", "", ""}, "tensorflow", net);
                   };
                   return s.mode == "async" ? go(Async{}, "Async") : go(Sync{}, "Sync");
                 });
}

/// PyTorch (oneDNN, bucketed ring overlapping backward, streaming loader): the preset, the preset with
/// TensorFlow's caching loader (the cause of TensorFlow's faster loading?), and with a batch norm that is not
/// oneDNN's (backend::Mix: PyTorch 1.7's CPU batch_norm was its own kernel).
template <NetworkPolicy Net>
int pytorch_main(int argc, char** argv, const std::string& target, const std::string& net) {
  return main_of(argc, argv, target, {"preset", "loader=cached", "backend=mix-bn-eigen"}, {"sync"}, [&](const Settings& s) {
    using PT = presets::PyTorch<Net>;
    if (s.variant == "backend=mix-bn-eigen")
      return run<PT, typename PT::template with_backend<
                         backend::Mix<backend::OneDnn, backend::Use<BatchNorm2d, backend::Eigen>>>>(
          s, {s.variant, "presets::PyTorch<Net>::with_backend<backend::Mix<backend::OneDnn, "
                         "backend::Use<BatchNorm2d, backend::Eigen>>>", ""},
          "pytorch", net);
    if (s.variant == "loader=cached")
      return run<PT, typename PT::template with_loader<data::CachedLoader>>(
          s, {s.variant, "presets::PyTorch<Net>::with_loader<data::CachedLoader>", ""}, "pytorch", net);
    return run<PT, typename PT::trainer_type>(s, {"preset", "", ""}, "pytorch", net);
  });
}

/// MXNet (oneDNN, parameter server with a server beside each worker, streaming loader): PyTorch with one policy
/// swapped, the strategy, so MXNet against PyTorch is itself the swap that isolates the parameter server.
template <NetworkPolicy Net, int Machines = 3>
int mxnet_main(int argc, char** argv, const std::string& target, const std::string& net) {
  return main_of(argc, argv, target, {"preset"}, {"sync", "async"}, [&](const Settings& s) {
    if (s.mode == "async") {
      using MX = presets::MXNet<Net, Async, Machines>;
      return run<MX, typename MX::trainer_type>(s, {"preset", "", ""}, "mxnet", net);
    }
    using MX = presets::MXNet<Net, Sync, Machines>;
    return run<MX, typename MX::trainer_type>(s, {"preset", "", ""}, "mxnet", net);
  });
}

/// ChainerMN (oneDNN, one MPI all-reduce after backward, caching loader): the usability paper's fourth system.
template <NetworkPolicy Net>
int chainermn_main(int argc, char** argv, const std::string& target, const std::string& net) {
  return main_of(argc, argv, target, {"preset"}, {"sync"}, [&](const Settings& s) {
    using CM = presets::ChainerMN<Net>;
    return run<CM, typename CM::trainer_type>(s, {"preset", "", ""}, "chainermn", net);
  });
}

/// CNTK (oneDNN, MPI all-reduce with 1-bit SGD, caching loader): the preset, and the usability paper's CNTK
/// without 1-bit SGD (the swap that isolates the compression; it is ChainerMN's configuration).
template <NetworkPolicy Net>
int cntk_main(int argc, char** argv, const std::string& target, const std::string& net) {
  return main_of(argc, argv, target, {"preset", "one_bit=off"}, {"sync"}, [&](const Settings& s) {
    using CN = presets::CNTK<Net>;
    if (s.variant == "one_bit=off")
      return run<CN, typename CN::without_one_bit>(s, {s.variant, "presets::CNTK<Net>::without_one_bit", ""},
                                                   "cntk", net);
    return run<CN, typename CN::trainer_type>(s, {"preset", "", ""}, "cntk", net);
  });
}

}  // namespace sinew::bench::paper

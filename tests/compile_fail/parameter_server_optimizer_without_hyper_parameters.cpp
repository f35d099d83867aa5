// Must not compile: the servers build one optimizer per shard from the workers' hyper-parameters, which this
// optimizer does not expose.
#include <cstddef>
#include <span>
#include <string_view>

#include "sinew/dist/parameter_server.hpp"
struct opaque {
  static constexpr std::string_view kName = "opaque";
  struct options {
    float lr = 0.1f;
  };
  opaque(options, std::size_t) {}
  void step(std::span<float>, std::span<const float>) {}
  float learning_rate() const { return 0.1f; }
  void set_learning_rate(float) {}
};
void start(sinew::dist::ParameterServer<sinew::comm::example::single_process, 1>& ps, std::span<float> params) {
  opaque o({}, params.size());
  ps.start<sinew::Sync>(params, o);
}

// Must not compile: a checkpoint of a trainer whose optimizer keeps state it does not expose would resume with
// that state lost, so save_checkpoint asks for state() and set_steps(n).
#include <cstddef>
#include <span>
#include <string_view>

#include "sinew/backend/onednn.hpp"
#include "sinew/trainer.hpp"
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
using Net = sinew::Sequential<sinew::Input<1, 4, 4>, sinew::Flatten, sinew::Dense<2>>;
void save(sinew::Trainer<Net, sinew::backend::OneDnn, sinew::dist::Local, sinew::Sync, opaque>& trainer) {
  trainer.save_checkpoint("checkpoint");
}

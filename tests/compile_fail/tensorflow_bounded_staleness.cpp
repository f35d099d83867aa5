// Must not compile: TensorFlow trains Sync or Async, and the preset says so rather than guess a strategy.
#include "sinew/nets/lenet5.hpp"
#include "sinew/presets/tensorflow.hpp"
using TF = sinew::presets::TensorFlow<sinew::nets::LeNet5<>, sinew::BoundedStaleness<2>>;
using T = TF::trainer_type;
T* make() { return nullptr; }

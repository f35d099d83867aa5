// Must not compile: one process has no asynchronous mode.
#include "sinew/backend/onednn.hpp"
#include "sinew/trainer.hpp"
#include "sinew/nets/lenet5.hpp"
using T = sinew::Trainer<sinew::nets::LeNet5<>, sinew::backend::OneDnn, sinew::dist::Local, sinew::Async>;
T* make() { return new T(); }

// Must not compile: a parameter server strategy with no server has nowhere to send the gradients.
#include "sinew/backend/onednn.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/trainer.hpp"
using NoServers = sinew::dist::ParameterServer<sinew::comm::example::single_process, 0>;
using T = sinew::Trainer<sinew::nets::LeNet5<>, sinew::backend::OneDnn, NoServers, sinew::Async>;
T* make() { return new T(); }

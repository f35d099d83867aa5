// Must not compile: the ring all-reduce is synchronous by construction.
#include "sinew/backend/onednn.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/trainer.hpp"
using Ring = sinew::dist::RingAllReduce<sinew::comm::example::single_process>;
using T = sinew::Trainer<sinew::nets::LeNet5<>, sinew::backend::OneDnn, Ring, sinew::Async>;
T* make() { return new T(); }

// Must not compile: compressed gradients with error feedback are exchanged synchronously, every step.
#include "sinew/backend/onednn.hpp"
#include "sinew/compress/one_bit.hpp"
#include "sinew/dist/compressed.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/trainer.hpp"
using Ring = sinew::dist::RingAllReduce<sinew::comm::example::single_process>;
using OneBitRing = sinew::dist::Compressed<Ring, sinew::compress::OneBit>;
using T = sinew::Trainer<sinew::nets::LeNet5<>, sinew::backend::OneDnn, OneBitRing, sinew::Async>;
T* make() { return new T(); }

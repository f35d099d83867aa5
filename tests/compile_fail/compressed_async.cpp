// Must not compile: compressed gradients with error feedback are exchanged synchronously, every step. (The
// Trainer instantiates Strategy::mode<M> as this does; spelled without it, the test compiles in seconds.)
#include "sinew/compress/one_bit.hpp"
#include "sinew/dist/compressed.hpp"
#include "sinew/dist/ring_allreduce.hpp"
using Ring = sinew::dist::RingAllReduce<sinew::comm::example::single_process>;
using OneBitRing = sinew::dist::Compressed<Ring, sinew::compress::OneBit>;
static_assert(sizeof(OneBitRing::mode<sinew::Async>) > 0);

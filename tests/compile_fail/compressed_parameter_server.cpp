// Must not compile: 1-bit SGD under an asynchronous parameter server (its servers apply each worker's gradient
// as it comes; there is no all-gather to carry compressed payloads).
#include "sinew/compress/one_bit.hpp"
#include "sinew/dist/compressed.hpp"
#include "sinew/dist/parameter_server.hpp"
using Server = sinew::dist::ParameterServer<sinew::comm::example::single_process, 1>;
using OneBitServer = sinew::dist::Compressed<Server, sinew::compress::OneBit>;
static_assert(sizeof(OneBitServer) > 0);

// Must not compile: a network with SyncBatchNorm2d under a parameter server, whose workers never meet in a
// collective to sum the layer's statistics (the strategy has no sum_over_workers).
#include "sinew/backend/onednn.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/trainer.hpp"
using Net = sinew::Sequential<sinew::Input<1, 8, 8>, sinew::Conv2d<4, 3>, sinew::SyncBatchNorm2d, sinew::ReLU,
                              sinew::Flatten, sinew::Dense<2>>;
using Server = sinew::dist::ParameterServer<sinew::comm::example::single_process, 1>;
using Train = sinew::Trainer<Net, sinew::backend::OneDnn, Server, sinew::Sync>;
static_assert(sizeof(Train) > 0);

// Must not compile: only a parameter server's servers serve an epoch; with an all-reduce every rank trains.
#include "sinew/backend/onednn.hpp"
#include "sinew/trainer.hpp"
using Net = sinew::Sequential<sinew::Input<1, 4, 4>, sinew::Flatten, sinew::Dense<2>>;
void serve(sinew::Trainer<Net, sinew::backend::OneDnn>& trainer) { trainer.serve_epoch(); }

// Must not compile: two bare projecting Residuals in one module both name their shortcut downsample.*, so
// saving such a network would fail hours into training; the clash is found when the keys are first asked for.
#include "sinew/layers.hpp"
#include "sinew/nets/sequential.hpp"
#include "sinew/nets/state_dict.hpp"

template <int C>
using Block = sinew::Residual<sinew::Chain<sinew::Conv2d<C, 3, 2, 1, false>, sinew::BatchNorm2d>,
                              sinew::ProjectIfNeeded<C, 2>>;
using Net = sinew::Sequential<sinew::Input<3, 16, 16>, sinew::Module<"layer1", Block<8>, Block<16>>>;

int main() { return int(sinew::state_dict_entries<Net>().size()); }

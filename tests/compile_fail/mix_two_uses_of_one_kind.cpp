// Must not compile: two backend::Use of one layer kind (Conv2d<8, 3> is of kind layer_kind::conv2d).
#include "sinew/backend/mix.hpp"
#include "sinew/backend/onednn.hpp"
using M = sinew::backend::Mix<sinew::backend::OneDnn, sinew::backend::Use<sinew::Conv2d<8, 3>, sinew::backend::OneDnn>,
                              sinew::backend::Use<sinew::layer_kind::conv2d, sinew::backend::OneDnn>>;
constexpr auto name = M::kName;

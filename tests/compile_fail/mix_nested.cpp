// Must not compile: a backend::Mix as the base of another Mix (one Mix lists every Use).
#include "sinew/backend/mix.hpp"
#include "sinew/backend/onednn.hpp"
using Inner = sinew::backend::Mix<sinew::backend::OneDnn, sinew::backend::Use<sinew::BatchNorm2d, sinew::backend::OneDnn>>;
using M = sinew::backend::Mix<Inner, sinew::backend::Use<sinew::layer_kind::dense, sinew::backend::OneDnn>>;
constexpr auto name = M::kName;

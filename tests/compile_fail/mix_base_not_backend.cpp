// Must not compile: a backend::Mix without its base (the first parameter must be the backend of every other kind).
#include "sinew/backend/mix.hpp"
#include "sinew/backend/onednn.hpp"
using M = sinew::backend::Mix<sinew::backend::Use<sinew::BatchNorm2d, sinew::backend::OneDnn>>;
constexpr auto name = M::kName;

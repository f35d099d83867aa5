// Must not compile: a backend::Use whose backend has no op for the layer's kind (a deliberately op-less test
// layer: every backend computes every layer sinew ships).
#include "sinew/backend/mix.hpp"
#include "sinew/backend/onednn.hpp"
struct Mystery {
  static constexpr std::string_view kName = "mystery";
  struct kind {};  // a kind of its own, which no backend maps to an op
  static constexpr std::string_view kProfile = "other";
};
using M = sinew::backend::Mix<sinew::backend::OneDnn, sinew::backend::Use<Mystery, sinew::backend::OneDnn>>;
constexpr auto name = M::kName;

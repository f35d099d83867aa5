// Must not compile: a layer kind the OneDnn backend does not implement.
#include "sinew/backend/onednn.hpp"
#include "sinew/model.hpp"
struct Mystery {
  static constexpr std::string_view kName = "mystery";
  struct kind {};  // a kind of its own, which no backend maps to an op
  static constexpr std::string_view kProfile = "other";
  template <sinew::FeatureShape In>
  struct at {
    using output = In;
    static constexpr std::size_t kWeights = 0, kBias = 0;
  };
};
using Net = sinew::Sequential<sinew::Input<1, 4, 4>, Mystery>;
sinew::Model<Net, sinew::backend::OneDnn>* make(sinew::backend::OneDnn::context& c) {
  return new sinew::Model<Net, sinew::backend::OneDnn>(c);
}

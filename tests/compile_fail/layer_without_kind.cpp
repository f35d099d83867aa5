// Must not compile: a user layer that does not declare its kind tag (the layer contract, layers/layer_spec.hpp).
#include "sinew/backend/onednn.hpp"
#include "sinew/model.hpp"
struct Untagged {
  static constexpr std::string_view kName = "untagged";
  static constexpr std::string_view kProfile = "relu";
  template <sinew::FeatureShape In>
  struct at {
    using output = In;
    static constexpr std::size_t kWeights = 0, kBias = 0;
  };
};
using Net = sinew::Sequential<sinew::Input<1, 4, 4>, Untagged>;
sinew::Model<Net, sinew::backend::OneDnn>* make(sinew::backend::OneDnn::context& c) {
  return new sinew::Model<Net, sinew::backend::OneDnn>(c);
}

// sinew from vcpkg: one forward and backward pass of a small network on the OneDnn backend.
#include <sinew/backend/onednn.hpp>
#include <sinew/model.hpp>
#include <sinew/nets/sequential.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  using Net = sinew::Sequential<sinew::Input<1, 4, 4>, sinew::Flatten, sinew::Dense<8>, sinew::ReLU, sinew::Dense<2>>;
  sinew::backend::OneDnn::context ctx({.threads = 1});
  sinew::Model<Net, sinew::backend::OneDnn> model(ctx);
  std::vector<float> x(4 * 16, 0.5f);
  std::vector<std::int32_t> y{0, 1, 0, 1};
  model.forward(x, 4);
  const auto loss = model.loss(y);
  model.backward();
  const bool ok = std::isfinite(loss.loss) && loss.loss > 0;
  std::printf("vcpkg consumer: %s, loss %.3f, %zu parameters\n", ok ? "ok" : "wrong", loss.loss, Net::kParams);
  return ok ? 0 : 1;
}

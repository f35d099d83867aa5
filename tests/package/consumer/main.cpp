// Built against the installed sinew package: one training step of LeNet-5 on random data.
#include <sinew/sinew.hpp>

#include <cstdio>
#include <vector>

int main() {
  using Net = sinew::nets::LeNet5<>;
  sinew::backend::OneDnn::context ctx({.threads = 1});
  sinew::Model<Net, sinew::backend::OneDnn> model(ctx);
  std::vector<float> x(4 * 32 * 32, 0.5f);
  std::vector<std::int32_t> y{0, 1, 2, 3};
  model.forward(x, 4);
  const auto loss = model.loss(y);
  model.backward();
  std::printf("consumer: %s, loss %.3f, %zu parameters\n", loss.loss > 0 ? "ok" : "bad loss", loss.loss,
              Net::kParams);
  return loss.loss > 0 ? 0 : 1;
}

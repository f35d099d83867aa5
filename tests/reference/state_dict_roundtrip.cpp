// state_dict_roundtrip NET IN OUT: loads IN (a safetensors file of NET's state_dict, e.g. written from the
// torchvision model by torch_roundtrip.py) into sinew's flat parameter and buffer arrays and saves them to OUT.
// torch_roundtrip.py then loads OUT into the torchvision model with load_state_dict(strict=True). Needs no
// backend: only the names and the layout of the flat arrays are exercised.
#include <cstdio>
#include <exception>
#include <optional>
#include <string_view>
#include <vector>

#include "sinew/io.hpp"
#include "sinew/nets.hpp"

namespace {
using namespace sinew;
using namespace sinew::nets;
using Cifar = Input<3, 32, 32>;

template <class Net>
int round_trip(const char* in, const char* out) {
  std::vector<float> params(Net::kParamSpan), buffers(Net::kBufferSpan);
  const std::optional<std::uint64_t> batches = io::load_safetensors<Net>(in, params, buffers);
  io::save_safetensors<Net>(out, params, buffers, batches.value_or(0));
  std::printf("%s -> %s: %zu tensors\n", in, out, state_dict_entries<Net>().size());
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s NET IN.safetensors OUT.safetensors\n", argv[0]);
    return 2;
  }
  const std::string_view net = argv[1];
  try {
    if (net == "lenet5") return round_trip<LeNet5<Cifar, 10>>(argv[2], argv[3]);
    if (net == "resnet18") return round_trip<ResNet18<Cifar, 10>>(argv[2], argv[3]);
    if (net == "resnet18_cifar") return round_trip<ResNet18<Cifar, 10, CifarStem>>(argv[2], argv[3]);
    if (net == "resnet34") return round_trip<ResNet34<Cifar, 10>>(argv[2], argv[3]);
    if (net == "resnet50") return round_trip<ResNet50<Cifar, 10>>(argv[2], argv[3]);
    if (net == "alexnet") return round_trip<AlexNet<Input<3, 64, 64>, 10>>(argv[2], argv[3]);
    if (net == "vgg16") return round_trip<VGG16<Cifar, 10>>(argv[2], argv[3]);
    if (net == "vgg16_bn") return round_trip<VGG16BN<Cifar, 10>>(argv[2], argv[3]);
    if (net == "mobilenet_v2") return round_trip<MobileNetV2<Cifar, 10>>(argv[2], argv[3]);
    if (net == "resnext50_32x4d") return round_trip<ResNeXt50_32x4d<Cifar, 10>>(argv[2], argv[3]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown net %s\n", argv[1]);
  return 2;
}

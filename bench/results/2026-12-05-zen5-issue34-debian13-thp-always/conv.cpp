// Does oneDNN's convolution backward data create for a shape given on the command line? PyTorch 2.6's oneDNN 3.6
// divides by zero creating it for ResNet-50's 1x1 stride-2 downsample on a 4x4 image on this VM.
//   conv N IC IH OC K S PAD LAYOUT(any|nchw|nhwc)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
int main(int argc, char** argv) {
  using namespace dnnl;
  using tag = memory::format_tag;
  using dt = memory::data_type;
  long N = atol(argv[1]), IC = atol(argv[2]), IH = atol(argv[3]), OC = atol(argv[4]), K = atol(argv[5]),
       S = atol(argv[6]), P = atol(argv[7]);
  tag t = !strcmp(argv[8], "nchw") ? tag::nchw : !strcmp(argv[8], "nhwc") ? tag::nhwc : tag::any;
  long OH = (IH + 2 * P - K) / S + 1;
  engine eng(engine::kind::cpu, 0);
  const memory::dims src{N, IC, IH, IH}, wei{OC, IC, K, K}, dst{N, OC, OH, OH}, st{S, S}, pad{P, P};
  memory::desc sm(src, dt::f32, t), dm(dst, dt::f32, t), wm(wei, dt::f32, tag::any);
#if DNNL_VERSION_MAJOR >= 3
  auto fwd = convolution_forward::primitive_desc(eng, prop_kind::forward_training, algorithm::convolution_direct,
                                                 sm, wm, dm, st, pad, pad);
  auto bwd = convolution_backward_data::primitive_desc(eng, algorithm::convolution_direct, sm, wm, dm, st, pad, pad,
                                                       fwd);
  auto bww = convolution_backward_weights::primitive_desc(eng, algorithm::convolution_direct, sm, wm, dm, st, pad,
                                                          pad, fwd);
#else
  auto fwd = convolution_forward::primitive_desc(
      {prop_kind::forward_training, algorithm::convolution_direct, sm, wm, dm, st, pad, pad}, eng);
  auto bwd = convolution_backward_data::primitive_desc({algorithm::convolution_direct, sm, wm, dm, st, pad, pad},
                                                       eng, fwd);
  auto bww = convolution_backward_weights::primitive_desc(
      {algorithm::convolution_direct, sm, wm, dm, st, pad, pad}, eng, fwd);
#endif
  std::printf("ok: forward %s, backward data %s, backward weights %s\n", fwd.impl_info_str(), bwd.impl_info_str(),
              bww.impl_info_str());
}

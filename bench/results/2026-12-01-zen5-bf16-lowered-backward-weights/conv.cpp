// ResNet-18's bf16 3x3 layers on 8x8 and 4x4 images (batch 42) alone on oneDNN's convolutions: forward, backward
// weights and backward data, with the layouts oneDNN picks (any) and with NHWC; best of 5 x 5 runs after 3.
// Build and run: g++ -O2 -std=c++17 conv.cpp -ldnnl -o conv && OMP_NUM_THREADS=2 ./conv
#include <dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag; using dt = memory::data_type;
static double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
template<class F> double best(F f){ for(int i=0;i<3;i++) f(); double b=1e9; for(int r=0;r<5;r++){double t=now(); for(int i=0;i<5;i++) f(); b=std::min(b,(now()-t)/5);} return b*1e3;}
int main(){ setvbuf(stdout,nullptr,_IONBF,0);
  engine eng(engine::kind::cpu,0); stream s(eng);
  int N=42;
  struct S{int c,h;}; S shapes[]={{256,8},{512,4}};
  for(auto sh:shapes) for(tag lay: {tag::any, tag::acdb}) {
    memory::dims src{N,sh.c,sh.h,sh.h}, w{sh.c,sh.c,3,3}, st{1,1}, pd{1,1};
    memory::desc s_md(src,dt::bf16,lay), w_md(w,dt::bf16,tag::any), d_md(src,dt::bf16,lay), dw_md(w,dt::f32,tag::any);
    memory::desc ds_md(src,dt::f32,lay);
#if DNNL_VERSION_MAJOR >= 3
    auto fpd = convolution_forward::primitive_desc(eng,prop_kind::forward_training, algorithm::convolution_direct, s_md,w_md,d_md,st,pd,pd);
    auto wpd = convolution_backward_weights::primitive_desc(eng,algorithm::convolution_direct,s_md,dw_md,d_md,st,pd,pd,fpd);
    auto dpd = convolution_backward_data::primitive_desc(eng,algorithm::convolution_direct,ds_md,w_md,d_md,st,pd,pd,fpd);
#else
    auto fpd = convolution_forward::primitive_desc(convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, s_md,w_md,d_md,st,pd,pd),eng);
    auto wpd = convolution_backward_weights::primitive_desc(convolution_backward_weights::desc(algorithm::convolution_direct,s_md,dw_md,d_md,st,pd,pd),eng,fpd);
    auto dpd = convolution_backward_data::primitive_desc(convolution_backward_data::desc(algorithm::convolution_direct,ds_md,w_md,d_md,st,pd,pd),eng,fpd);
#endif
    memory S_(fpd.src_desc(),eng), W_(fpd.weights_desc(),eng), D_(fpd.dst_desc(),eng), DW(wpd.diff_weights_desc(),eng), DS(dpd.diff_src_desc(),eng), DD(wpd.diff_dst_desc(),eng), S2(wpd.src_desc(),eng), W2(dpd.weights_desc(),eng), DD2(dpd.diff_dst_desc(),eng);
    for(auto m:{S_,W_,D_,S2,DD,W2,DD2}){ auto*p=(uint16_t*)m.get_data_handle(); for(size_t i=0;i<m.get_desc().get_size()/2;i++) p[i]=0x3c00+ (i%7);} 
    printf("impl %s | %s | %s\n",fpd.impl_info_str(),wpd.impl_info_str(),dpd.impl_info_str());
    convolution_forward f(fpd); convolution_backward_weights bw(wpd); convolution_backward_data bd(dpd);
    double tf=best([&]{f.execute(s,{{DNNL_ARG_SRC,S_},{DNNL_ARG_WEIGHTS,W_},{DNNL_ARG_DST,D_}}); s.wait();});
    double tw=best([&]{bw.execute(s,{{DNNL_ARG_SRC,S2},{DNNL_ARG_DIFF_DST,DD},{DNNL_ARG_DIFF_WEIGHTS,DW}}); s.wait();});
    double td=best([&]{bd.execute(s,{{DNNL_ARG_DIFF_SRC,DS},{DNNL_ARG_WEIGHTS,W2},{DNNL_ARG_DIFF_DST,DD2}}); s.wait();});
    double fl=2.0*N*sh.h*sh.h*sh.c*sh.c*9/1e9;
    printf("c=%3d %2dx%-2d %-4s fwd %.3f ms %4.0f GF (%s) | bww %.3f ms %4.0f GF (%s) | bwd %.3f ms %4.0f GF (%s)\n",sh.c,sh.h,sh.h,lay==tag::any?"any":"nhwc",tf,fl/tf*1e3,fpd.impl_info_str(),tw,fl/tw*1e3,wpd.impl_info_str(),td,fl/td*1e3,dpd.impl_info_str());
  }
}

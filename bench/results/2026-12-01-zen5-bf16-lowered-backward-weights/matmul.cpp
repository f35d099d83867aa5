// The weights' gradient of ResNet-18's bf16 512-channel 3x3 layer on 4x4 images (batch 42) as one oneDNN matmul,
// dW [O, C*9] = dy^T [O, pixels] x patches [pixels, C*9], in each orientation of its operands (and the transposed
// product, dW^T = patches^T x dy), then a plain gather of the patches; best of 5 x 5 runs after 3.
// Build and run: g++ -O3 -march=native -fopenmp -std=c++17 matmul.cpp -ldnnl -o matmul && OMP_NUM_THREADS=2 ./matmul
#include <dnnl.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag; using dt = memory::data_type;
static double now(){return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();}
template<class F> double best(F f){ for(int i=0;i<3;i++) f(); double b=1e9; for(int r=0;r<5;r++){double t=now(); for(int i=0;i<5;i++) f(); b=std::min(b,(now()-t)/5);} return b*1e3;}
int main(){ setvbuf(stdout,nullptr,_IONBF,0);
  engine eng(engine::kind::cpu,0); stream s(eng);
  const int N=42, O=512, C=512, H=4, K=9; const long NP=N*H*H, CK=C*K;
  struct V{const char* name; memory::dims a_str, b_str;};
  // A = dy^T: dy stored [NP, O] row-major -> A[O, NP] strides {1, O}
  // B: either P [NP, CK] row-major (strides {CK,1}) or P^T stored [CK, NP] (strides {1, NP})
  V vs[]={{"A=dy^T(nhwc) B=P",{1,O},{CK,1}},{"A=dy^T(nhwc) B=P^T-stored",{1,O},{1,NP}},{"A=dy(O-major) B=P^T-stored",{NP,1},{1,NP}},{"A=dy(O-major) B=P",{NP,1},{CK,1}}};
  for(auto v:vs){
    memory::desc a({O,NP},dt::bf16,v.a_str), b({NP,CK},dt::bf16,v.b_str), c({O,CK},dt::f32,tag::ab);
    #if DNNL_VERSION_MAJOR >= 3
    auto pd = matmul::primitive_desc(eng,a,b,c);
#else
    auto pd = matmul::primitive_desc(matmul::desc(a,b,c),eng);
#endif
    memory A(a,eng),B(b,eng),Cm(c,eng);
    for(auto m:{A,B}){ auto*p=(uint16_t*)m.get_data_handle(); for(size_t i=0;i<m.get_desc().get_size()/2;i++) p[i]=0x3c00+(i%7);} 
    matmul mm(pd);
    double t=best([&]{mm.execute(s,{{DNNL_ARG_SRC,A},{DNNL_ARG_WEIGHTS,B},{DNNL_ARG_DST,Cm}}); s.wait();});
    printf("%-28s %.3f ms %5.0f GF (%s)\n",v.name,t,2.0*O*NP*CK/t/1e6,pd.impl_info_str());
  }
  for(int tr=0;tr<2;tr++){
    memory::desc a({CK,NP},dt::bf16,tag::ab), b({NP,O},dt::bf16,tag::ab), c({CK,O},dt::f32, tr? memory::dims{1,CK} : memory::dims{O,1});
#if DNNL_VERSION_MAJOR >= 3
    auto pd = matmul::primitive_desc(eng,a,b,c);
#else
    auto pd = matmul::primitive_desc(matmul::desc(a,b,c),eng);
#endif
    if(std::strncmp(pd.impl_info_str(),"ref",3)==0){ printf("dW^T = P^T x dy, C strided into oihw: only oneDNN's reference kernel (%s), not timed\n",pd.impl_info_str()); continue; }
    memory A(a,eng),B(b,eng),Cm(c,eng);
    for(auto m:{A,B}){ auto*p=(uint16_t*)m.get_data_handle(); for(size_t i=0;i<m.get_desc().get_size()/2;i++) p[i]=0x3c00+(i%7);}
    matmul mm(pd);
    double t=best([&]{mm.execute(s,{{DNNL_ARG_SRC,A},{DNNL_ARG_WEIGHTS,B},{DNNL_ARG_DST,Cm}}); s.wait();});
    printf("dW^T = P^T x dy, C %s %.3f ms %5.0f GF (%s)\n", tr?"strided into oihw":"plain [CK,O]", t,2.0*O*NP*CK/t/1e6,pd.impl_info_str());
  }
  // im2col into P^T stored [C*9, NP] from an NCHW bf16 src
  std::vector<uint16_t> src(size_t(N)*C*H*H,0x3c00), pt(size_t(CK)*NP);
  double t=best([&]{
    #pragma omp parallel for num_threads(2)
    for(int c=0;c<C;c++) for(int kh=0;kh<3;kh++) for(int kw=0;kw<3;kw++){
      uint16_t* row=&pt[(size_t(c)*9+kh*3+kw)*NP];
      for(int n=0;n<N;n++){ const uint16_t* pl=&src[(size_t(n)*C+c)*H*H];
        for(int oh=0;oh<H;oh++){ int ih=oh+kh-1; for(int ow=0;ow<H;ow++){ int iw=ow+kw-1;
          *row++ = (ih>=0&&ih<H&&iw>=0&&iw<H)? pl[ih*H+iw] : 0; }}}}
  });
  printf("im2col P^T %.3f ms\n",t);
}

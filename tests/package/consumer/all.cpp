// Built against the installed package's sinew::sinew (find_package(sinew) without components): the header
// that includes everything compiles, with every backend and MPI.
#include <sinew/sinew.hpp>

#include <cstdio>

int main() {
  using Net = sinew::nets::LeNet5<>;
  static_assert(sinew::BackendPolicy<sinew::backend::OneDnn> && sinew::BackendPolicy<sinew::backend::Eigen>);
  const bool ok = Net::kParams == 61706;
  std::printf("consumer all: %s, LeNet-5 has %zu parameters\n", ok ? "ok" : "wrong", Net::kParams);
  return ok ? 0 : 1;
}

// main() for the MPI tests: every rank runs every test in the same order (collectives need all ranks);
// rank 0 prints GoogleTest's usual report, the other ranks only their failures, prefixed with the rank; the
// run fails on every rank if any test failed on any rank.
#include <gtest/gtest.h>

#include <cstdio>
#include <span>

#include "sinew/comm/mpi.hpp"

namespace {
class failure_printer : public ::testing::EmptyTestEventListener {
 public:
  explicit failure_printer(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (result.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                   result.line_number(), result.message());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
  }

 private:
  int rank_;
};
}  // namespace

int main(int argc, char** argv) {
  // MPI first: parameterised tests may name themselves after the number of ranks ("ring_np3_float_1MiB").
  sinew::comm::Mpi world;  // initialises MPI for the process (see comm/mpi.hpp)
  ::testing::InitGoogleTest(&argc, argv);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (world.rank() == 0) {
    std::printf("[ mpi      ] %d rank%s\n", world.size(), world.size() == 1 ? "" : "s");
  } else {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new failure_printer(world.rank()));
  }
  float failed = RUN_ALL_TESTS() == 0 ? 0.0f : 1.0f;
  world.allreduce_sum(std::span<float>(&failed, 1));
  if (world.rank() == 0 && failed > 0) std::printf("[ mpi      ] tests failed on %g rank(s)\n", double(failed));
  return failed > 0 ? 1 : 0;
}

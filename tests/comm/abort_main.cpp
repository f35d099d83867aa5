// Run by ctest under mpiexec: the last rank aborts while the others wait in a barrier. The test passes when
// the job ends (MPI_Abort ends every rank; the TIMEOUT catches a hang) and prints the rank's message.
#include "sinew/comm/mpi.hpp"

int main() {
  sinew::comm::Mpi world;
  if (world.rank() == world.size() - 1) world.abort(3, "the test asked to abort");
  world.barrier();
  return 0;
}

// Must not compile: MPI_Allreduce combines every rank's gradient every step, so no rank can run ahead.
#include "sinew/backend/onednn.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/trainer.hpp"
using Native = sinew::dist::MpiAllReduce<sinew::comm::example::single_process>;
using T = sinew::Trainer<sinew::nets::LeNet5<>, sinew::backend::OneDnn, Native, sinew::BoundedStaleness<2>>;
T* make() { return new T(); }

// sinew/comm.hpp: communicators (the Communicator concept, comm::Mpi), the start-up agreement check, and
// failing together (comm/failure.hpp).
#pragma once
#include "sinew/comm/agreement.hpp"
#include "sinew/comm/communicator_spec.hpp"
#include "sinew/comm/failure.hpp"
#include "sinew/comm/mpi.hpp"
#include "sinew/comm/ring_allreduce.hpp"

// sinew/comm.hpp: communicators (the Communicator concept, comm::Mpi) and the start-up agreement check.
#pragma once
#include "sinew/comm/agreement.hpp"
#include "sinew/comm/communicator_spec.hpp"
#include "sinew/comm/mpi.hpp"

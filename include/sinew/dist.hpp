// sinew/dist.hpp: distribution strategies (all-reduce, parameter server) and sync modes.
#pragma once
#include "sinew/dist/buckets.hpp"
#include "sinew/dist/compressed.hpp"
#include "sinew/dist/local.hpp"
#include "sinew/dist/mpi_allreduce.hpp"
#include "sinew/dist/options.hpp"
#include "sinew/dist/parameter_server.hpp"
#include "sinew/dist/ring_allreduce.hpp"
#include "sinew/dist/strategy_spec.hpp"
#include "sinew/dist/sync_mode.hpp"
#include "sinew/nets/tensor_layout.hpp"

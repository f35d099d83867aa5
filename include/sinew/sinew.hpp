// sinew/sinew.hpp: everything. Include the area aggregators instead to compile less.
#pragma once
#include "sinew/backend.hpp"
#include "sinew/comm.hpp"
#include "sinew/core.hpp"
#include "sinew/data.hpp"
#include "sinew/dist.hpp"
#include "sinew/layers.hpp"
#include "sinew/metrics.hpp"
#include "sinew/model.hpp"
#include "sinew/nets.hpp"
#include "sinew/optim.hpp"
#include "sinew/tensor.hpp"
#include "sinew/trainer.hpp"

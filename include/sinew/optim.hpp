// sinew/optim.hpp: optimizers and learning-rate schedules.
#pragma once
#include "sinew/optim/adam.hpp"
#include "sinew/optim/optimizer_spec.hpp"
#include "sinew/optim/rmsprop.hpp"
#include "sinew/optim/schedule.hpp"
#include "sinew/optim/sgd.hpp"

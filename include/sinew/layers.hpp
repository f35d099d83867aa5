// sinew/layers.hpp: every layer spec.
#pragma once
#include "sinew/layers/activation.hpp"
#include "sinew/layers/batch_norm.hpp"
#include "sinew/layers/conv2d.hpp"
#include "sinew/layers/dense.hpp"
#include "sinew/layers/dropout.hpp"
#include "sinew/layers/flatten.hpp"
#include "sinew/layers/global_pooling.hpp"
#include "sinew/layers/input.hpp"
#include "sinew/layers/layer_spec.hpp"
#include "sinew/layers/loss.hpp"
#include "sinew/layers/pooling.hpp"
#include "sinew/layers/residual.hpp"

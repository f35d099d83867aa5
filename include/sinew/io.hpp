// sinew/io.hpp: weights in and out (safetensors, under PyTorch's state_dict names).
#pragma once
#include "sinew/io/safetensors.hpp"

// sinew/io.hpp: weights in and out (safetensors, under PyTorch's state_dict names), and whole runs (checkpoints).
#pragma once
#include "sinew/io/checkpoint.hpp"
#include "sinew/io/directory_lock.hpp"
#include "sinew/io/safetensors.hpp"

// sinew/tensor.hpp: shapes and aligned storage.
#pragma once
#include "sinew/tensor/buffer.hpp"
#include "sinew/tensor/shape.hpp"

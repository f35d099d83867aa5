// sinew/backend.hpp: the backend contract, every backend, and backend::Mix (kinds of one backend on another).
#pragma once
#include "sinew/backend/backend_spec.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/backend/onednn_bf16.hpp"
#include "sinew/backend/eigen.hpp"
#include "sinew/backend/mix.hpp"

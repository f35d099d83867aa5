// sinew/backend.hpp: the backend contract and every backend.
#pragma once
#include "sinew/backend/backend_spec.hpp"
#include "sinew/backend/onednn.hpp"
#include "sinew/backend/eigen.hpp"

// sinew/core.hpp: errors, static diagnostics, small utilities.
#pragma once
#include "sinew/core/affinity.hpp"
#include "sinew/core/diagnostics.hpp"
#include "sinew/core/error.hpp"
#include "sinew/core/fixed_string.hpp"
#include "sinew/core/rng.hpp"

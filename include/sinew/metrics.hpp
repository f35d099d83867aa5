// sinew/metrics.hpp: timers, the step breakdown, memory, flop and traffic counts, progress lines and JSON reports.
#pragma once
#include "sinew/metrics/flops.hpp"
#include "sinew/metrics/json.hpp"
#include "sinew/metrics/memory.hpp"
#include "sinew/metrics/profile.hpp"
#include "sinew/metrics/progress.hpp"
#include "sinew/metrics/timeline.hpp"
#include "sinew/metrics/timer.hpp"
#include "sinew/metrics/traffic.hpp"

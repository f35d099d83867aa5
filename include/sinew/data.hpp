// sinew/data.hpp: the data area — datasets, their readers, and the loaders that batch them.
#pragma once

#include "sinew/data/any_loader.hpp"
#include "sinew/data/byte_loader.hpp"
#include "sinew/data/cached_loader.hpp"
#include "sinew/data/cifar.hpp"
#include "sinew/data/cifar_records.hpp"
#include "sinew/data/dataset.hpp"
#include "sinew/data/idx.hpp"
#include "sinew/data/idx_records.hpp"
#include "sinew/data/image_file.hpp"
#include "sinew/data/image_folder.hpp"
#include "sinew/data/loader_options.hpp"
#include "sinew/data/loader_spec.hpp"
#include "sinew/data/record_source_spec.hpp"
#include "sinew/data/resize.hpp"
#include "sinew/data/shuffle.hpp"
#include "sinew/data/streaming_loader.hpp"

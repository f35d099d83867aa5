// sinew/nets.hpp: network composition and the model zoo.
#pragma once
#include "sinew/nets/alexnet.hpp"
#include "sinew/nets/lenet5.hpp"
#include "sinew/nets/mobilenet_v2.hpp"
#include "sinew/nets/network_spec.hpp"
#include "sinew/nets/resnet.hpp"
#include "sinew/nets/sequential.hpp"
#include "sinew/nets/state_dict.hpp"
#include "sinew/nets/tensor_layout.hpp"
#include "sinew/nets/vgg.hpp"

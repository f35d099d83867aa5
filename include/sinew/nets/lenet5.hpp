// sinew/nets/lenet5.hpp: LeNet-5 (LeCun et al. 1998) as the distributed-training papers benchmark it:
// tanh activations and average pooling, 32 x 32 input (pad 28 x 28 MNIST images by 2). Its state_dict keys are
// those of the torch.nn.Sequential in bench/pytorch/lenet5.py (0.weight, 3.weight, 7.weight, 9.weight, 11.bias).
#pragma once

#include "sinew/layers.hpp"
#include "sinew/nets/sequential.hpp"

namespace sinew::nets {

/// LeNet-5 on In (1x32x32 for padded MNIST, 3x32x32 for CIFAR: 62,006 parameters) with Classes outputs.
template <class In = Input<1, 32, 32>, int Classes = 10>
using LeNet5 = Sequential<In,
                          Conv2d<6, 5>, Tanh, AvgPool<2>,   // 6 x 28 x 28 -> 6 x 14 x 14
                          Conv2d<16, 5>, Tanh, AvgPool<2>,  // 16 x 10 x 10 -> 16 x 5 x 5
                          Flatten,                          // 400
                          Dense<120>, Tanh,
                          Dense<84>, Tanh,
                          Dense<Classes>>;

}  // namespace sinew::nets

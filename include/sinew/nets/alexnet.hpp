// sinew/nets/alexnet.hpp: AlexNet in torchvision's layout (features, 6x6 adaptive average pool, classifier
// with dropout). alexnet(num_classes=10) has 57,044,810 parameters. On the 3x64x64 CIFAR images the
// seeds feed it, the features end at 256 x 1 x 1 and the adaptive pool replicates that to 6 x 6, as PyTorch.
// Tensors carry torchvision's state_dict names (features.0.weight, classifier.1.weight).
#pragma once

#include "sinew/layers.hpp"
#include "sinew/nets/sequential.hpp"

namespace sinew::nets {

/// DropoutPercent is torchvision's `dropout` argument (0.5 by default) as a percentage.
template <class In = Input<3, 224, 224>, int Classes = 1000, int DropoutPercent = 50>
using AlexNet = Sequential<In,
                           Module<"features",
                                  Conv2d<64, 11, 4, 2>, ReLU, MaxPool<3, 2>,
                                  Conv2d<192, 5, 1, 2>, ReLU, MaxPool<3, 2>,
                                  Conv2d<384, 3, 1, 1>, ReLU,
                                  Conv2d<256, 3, 1, 1>, ReLU,
                                  Conv2d<256, 3, 1, 1>, ReLU, MaxPool<3, 2>>,
                           AdaptiveAvgPool<6, 6>, Flatten,
                           Module<"classifier",
                                  Dropout<DropoutPercent>, Dense<4096>, ReLU,
                                  Dropout<DropoutPercent>, Dense<4096>, ReLU,
                                  Dense<Classes>>>;

}  // namespace sinew::nets

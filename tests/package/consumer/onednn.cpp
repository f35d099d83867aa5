// Built against the installed package's sinew::onednn alone: a OneDnn Trainer, whose translation unit parses
// oneDNN and neither Eigen's Tensor module (the Eigen backend's) nor MPI.
#include <sinew/backend/onednn.hpp>
#include <sinew/trainer.hpp>

#include "train_two_steps.hpp"

#ifdef EIGEN_CXX11_TENSOR_TENSOR_H
#error "a OneDnn Trainer parsed Eigen's Tensor module"
#endif
#if __has_include(<mpi.h>)
#error "sinew::onednn put MPI on the include path"
#endif

int main() { return train_two_steps<sinew::backend::OneDnn>(); }

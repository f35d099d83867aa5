// Built against the installed package's sinew::eigen alone: an Eigen Trainer, whose translation unit parses
// Eigen's Tensor module and oneDNN's C API (dnnl.h, for its sgemm), but neither oneDNN's C++ API nor MPI.
#include <sinew/backend/eigen.hpp>
#include <sinew/trainer.hpp>

#include "train_two_steps.hpp"

#ifdef ONEAPI_DNNL_DNNL_HPP
#error "an Eigen Trainer parsed oneDNN's C++ API"
#endif
#ifndef ONEAPI_DNNL_DNNL_H
#error "an Eigen Trainer did not parse oneDNN's C API (its matrix kernel is dnnl_sgemm)"
#endif
#if __has_include(<mpi.h>)
#error "sinew::eigen put MPI on the include path"
#endif

int main() { return train_two_steps<sinew::backend::Eigen>(); }

# Every dependency of sinew, found the same way when building this repository and when a consumer
# calls find_package(sinew): sinewConfig.cmake includes this file. Each comes from a Debian 12 package.
include(CMakeFindDependencyMacro)
find_dependency(Eigen3 3.4 NO_MODULE)                     # libeigen3-dev
find_dependency(dnnl 2.6)                                 # libdnnl-dev (oneDNN)
find_dependency(MPI COMPONENTS CXX)                       # libopenmpi-dev
find_dependency(Boost 1.74 COMPONENTS mpi serialization)  # libboost-mpi-dev
find_dependency(xsimd 8)                                  # libxsimd-dev
# Debian 12's xsimd target links "xtl" although xsimd 8 is used here without it and Debian ships no xtl
# package: drop that link so consumers do not fail with "cannot find -lxtl".
if(TARGET xsimd AND NOT TARGET xtl)
  get_target_property(_sinew_xsimd_links xsimd INTERFACE_LINK_LIBRARIES)
  if(_sinew_xsimd_links)
    list(REMOVE_ITEM _sinew_xsimd_links xtl)
    set_target_properties(xsimd PROPERTIES INTERFACE_LINK_LIBRARIES "${_sinew_xsimd_links}")
  endif()
endif()
find_dependency(range-v3)                                 # librange-v3-dev
find_dependency(ZLIB)                                     # zlib1g-dev: reads .gz datasets
find_dependency(libjpeg-turbo 2)                          # libturbojpeg0-dev: JPEG in data::ImageFolder
find_dependency(PNG)                                      # libpng-dev: PNG in data::ImageFolder
find_dependency(OpenMP COMPONENTS CXX)                    # the thread pool oneDNN is built on
find_dependency(Threads)

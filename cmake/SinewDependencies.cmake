# Every dependency of sinew, found the same way when building this repository and when a consumer
# calls find_package(sinew): sinewConfig.cmake includes this file. Each comes from a Debian 12 package, and a
# missing one is reported as one sentence naming that package (scripts/install-deps installs them all):
# the project's own configure stops with it, a consumer's find_package(sinew) reports it as sinew's
# NOT_FOUND_MESSAGE.
include(CMakeFindDependencyMacro)

# sinew_need(<package> <debian-package> [find_package arguments...])
# Finds <package> quietly; the first one missing sets sinew_NOT_FOUND_MESSAGE and the rest are skipped.
macro(sinew_need _sinew_package _sinew_debian)
  if(NOT DEFINED sinew_NOT_FOUND_MESSAGE)
    find_package(${_sinew_package} ${ARGN} QUIET)
    if(NOT ${_sinew_package}_FOUND)
      string(CONCAT sinew_NOT_FOUND_MESSAGE
             "sinew needs ${_sinew_package}, which was not found: install the Debian 12 package "
             "${_sinew_debian} (scripts/install-deps installs every dependency).")
    endif()
  endif()
endmacro()

sinew_need(Eigen3 libeigen3-dev 3.4 NO_MODULE)
# Debian builds oneDNN with its OpenCL GPU runtime, so dnnl-config.cmake calls find_package(OpenCL REQUIRED);
# the headers come with ocl-icd-opencl-dev, only a Recommends of libdnnl-dev. Look first, to name the package.
sinew_need(OpenCL ocl-icd-opencl-dev)
sinew_need(dnnl libdnnl-dev 2.6)
sinew_need(MPI "libopenmpi-dev and openmpi-bin" COMPONENTS CXX)
sinew_need(Boost libboost-mpi-dev 1.74 COMPONENTS mpi serialization)
sinew_need(xsimd libxsimd-dev 8)
# Debian 12's xsimd target links "xtl" although xsimd 8 is used here without it and Debian ships no xtl
# package: drop that link so consumers do not fail with "cannot find -lxtl".
if(TARGET xsimd AND NOT TARGET xtl)
  get_target_property(_sinew_xsimd_links xsimd INTERFACE_LINK_LIBRARIES)
  if(_sinew_xsimd_links)
    list(REMOVE_ITEM _sinew_xsimd_links xtl)
    set_target_properties(xsimd PROPERTIES INTERFACE_LINK_LIBRARIES "${_sinew_xsimd_links}")
  endif()
endif()
sinew_need(range-v3 librange-v3-dev)
sinew_need(ZLIB zlib1g-dev)                       # reads .gz datasets
sinew_need(nlohmann_json nlohmann-json3-dev 3.11) # JSON: safetensors headers, checkpoints, reports (sinew core)
# Debian 12's libjpeg-turbo CMake package (in libturbojpeg0-dev) imports libjpeg's files too and stops the
# configure with a page about a "faulty installation package" when libjpeg62-turbo-dev is missing: look first.
find_file(_sinew_libjpeg_static libjpeg.a PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} /usr/lib NO_CACHE)
if(NOT _sinew_libjpeg_static AND EXISTS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/libjpeg-turbo
   AND NOT DEFINED sinew_NOT_FOUND_MESSAGE)
  string(CONCAT sinew_NOT_FOUND_MESSAGE "sinew needs libjpeg-turbo's libjpeg files, which were not found: install "
         "the Debian 12 package libjpeg62-turbo-dev (scripts/install-deps installs every dependency).")
endif()
sinew_need(libjpeg-turbo libturbojpeg0-dev 2)     # JPEG in data::ImageFolder
sinew_need(PNG libpng-dev)                        # PNG in data::ImageFolder
sinew_need(OpenMP "g++ (libgomp)" COMPONENTS CXX) # the thread pool oneDNN is built on
sinew_need(Threads libc6-dev)

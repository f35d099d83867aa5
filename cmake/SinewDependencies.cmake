# What each component of sinew needs, found the same way when building this repository and when a consumer
# calls find_package(sinew COMPONENTS ...): sinewConfig.cmake includes this file and looks only for the
# components asked for.
#
#   core    layers, nets, optimizers, data, metrics, io, the Trainer: xsimd, nlohmann_json, zlib, libjpeg-turbo,
#           libpng, range-v3, OpenMP, threads
#   onednn  backend::OneDnn: oneDNN, and Eigen's Core module (the activation kernels' vectorised tanh/sigmoid)
#   eigen   backend::Eigen: Eigen (its Tensor module), and oneDNN for its matrix kernel (dnnl_sgemm, as
#           TensorFlow's x86 builds contract: backend/eigen/gemm.hpp)
#   mpi     comm::Mpi: MPI and Boost.MPI
#
# Each comes from a Debian 12 or 13 package (scripts/install-deps installs them all) or from vcpkg (the sinew
# port's features). xsimd and oneDNN are accepted in the majors sinew is written against: xsimd 8 (Debian 12) to 13
# (Debian 13, vcpkg), oneDNN 2.6 (Debian 12) and 3 (Debian 13: 3.7, vcpkg); their differences live in one header
# each (core/detail/xsimd_compat.hpp, backend/onednn/compat.hpp). A missing one is one sentence naming the component and the package, left in
# sinew_<component>_NOT_FOUND_MESSAGE: the project's own configure stops with it, a consumer's
# find_package(sinew) reports it as sinew's NOT_FOUND_MESSAGE when that component is required.
include(CMakeFindDependencyMacro)

set(SINEW_COMPONENTS core onednn eigen mpi)

# sinew_need(<component> <package> <debian-package> [find_package arguments...])
# Finds <package> quietly; the first one missing sets sinew_<component>_NOT_FOUND_MESSAGE and the component's
# other packages are skipped.
macro(sinew_need _sinew_component _sinew_package _sinew_debian)
  if(NOT DEFINED sinew_${_sinew_component}_NOT_FOUND_MESSAGE)
    find_package(${_sinew_package} ${ARGN} QUIET)
    if(NOT ${_sinew_package}_FOUND)
      string(CONCAT sinew_${_sinew_component}_NOT_FOUND_MESSAGE
             "sinew's component ${_sinew_component} needs ${_sinew_package}, which was not found: install the "
             "Debian package ${_sinew_debian} (scripts/install-deps installs every dependency), or with vcpkg "
             "the port's feature sinew[${_sinew_component}].")
    endif()
  endif()
endmacro()

# sinew_need_majors(<component> <package> <debian-package> <lowest version> <highest major> [arguments...])
# As sinew_need, for a package whose config file accepts only its own major (xsimd's and oneDNN's do): found
# without a version, then its version checked against the range sinew is written against.
macro(sinew_need_majors _sinew_component _sinew_package _sinew_debian _sinew_lowest _sinew_highest_major)
  sinew_need(${_sinew_component} ${_sinew_package} ${_sinew_debian} ${ARGN})
  if(${_sinew_package}_FOUND AND NOT DEFINED sinew_${_sinew_component}_NOT_FOUND_MESSAGE)
    string(REGEX MATCH "^[0-9]+" _sinew_major "${${_sinew_package}_VERSION}")
    if(${_sinew_package}_VERSION VERSION_LESS ${_sinew_lowest} OR _sinew_major GREATER ${_sinew_highest_major})
      string(CONCAT sinew_${_sinew_component}_NOT_FOUND_MESSAGE
             "sinew's component ${_sinew_component} needs ${_sinew_package} ${_sinew_lowest} to "
             "${_sinew_highest_major}.x, and found ${${_sinew_package}_VERSION}: install Debian 12's or 13's "
             "${_sinew_debian}, or point CMAKE_PREFIX_PATH at a ${_sinew_package} in that range.")
    endif()
  endif()
endmacro()

# sinew_need_dnnl(<component>): oneDNN for <component> (onednn and eigen both need it).
# Debian builds oneDNN with its OpenCL GPU runtime, so its dnnl-config.cmake calls find_package(OpenCL
# REQUIRED), which no QUIET stops; the headers come with ocl-icd-opencl-dev, only a Recommends of
# libdnnl-dev. Look first there, to name the package (other builds of oneDNN, vcpkg's, need no OpenCL).
macro(sinew_need_dnnl _sinew_dnnl_component)
  set(_sinew_debian_dnnl /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/dnnl/dnnl-config.cmake)
  if(EXISTS ${_sinew_debian_dnnl})
    file(STRINGS ${_sinew_debian_dnnl} _sinew_dnnl_ocl REGEX "DNNL_GPU_RUNTIME \"OCL\"")
    if(_sinew_dnnl_ocl)
      sinew_need(${_sinew_dnnl_component} OpenCL ocl-icd-opencl-dev)
    endif()
  endif()
  sinew_need_majors(${_sinew_dnnl_component} dnnl libdnnl-dev 2.6 3)
endmacro()

# sinew_find_component(<component>): finds what <component> needs (a macro: the packages' variables and
# targets land in the caller's scope).
macro(sinew_find_component _sinew_c)
  if("${_sinew_c}" STREQUAL "core")
    sinew_need_majors(core xsimd libxsimd-dev 8 13)
    # Debian 12's xsimd target links "xtl" although xsimd 8 is used here without it and Debian 12 ships no xtl
    # package: drop that link so consumers do not fail with "cannot find -lxtl".
    if(TARGET xsimd AND NOT TARGET xtl)
      get_target_property(_sinew_xsimd_links xsimd INTERFACE_LINK_LIBRARIES)
      if(_sinew_xsimd_links)
        list(REMOVE_ITEM _sinew_xsimd_links xtl)
        set_target_properties(xsimd PROPERTIES INTERFACE_LINK_LIBRARIES "${_sinew_xsimd_links}")
      endif()
    endif()
    sinew_need(core nlohmann_json nlohmann-json3-dev 3 CONFIG)
    sinew_need(core ZLIB zlib1g-dev)                       # reads .gz datasets
    # Debian 12's libjpeg-turbo CMake package (in libturbojpeg0-dev) imports libjpeg's files too and stops the
    # configure with a page about a "faulty installation package" when libjpeg62-turbo-dev is missing: look first.
    find_file(_sinew_libjpeg_static libjpeg.a PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} /usr/lib NO_CACHE)
    if(NOT _sinew_libjpeg_static AND EXISTS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/cmake/libjpeg-turbo
       AND NOT DEFINED sinew_core_NOT_FOUND_MESSAGE)
      string(CONCAT sinew_core_NOT_FOUND_MESSAGE "sinew's component core needs libjpeg-turbo's libjpeg files, "
             "which were not found: install the Debian 12 package libjpeg62-turbo-dev (scripts/install-deps "
             "installs every dependency).")
    endif()
    sinew_need(core libjpeg-turbo libturbojpeg0-dev 2)     # JPEG in data::ImageFolder
    sinew_need(core PNG libpng-dev)                        # PNG in data::ImageFolder
    # range-v3 for the stages of a sharded pipeline (data/shard_views.hpp); its config file accepts only its own
    # exact version, so none is asked (Debian 12 and 13 ship 0.12).
    sinew_need(core range-v3 librange-v3-dev CONFIG)
    sinew_need(core OpenMP "g++ (libgomp)" COMPONENTS CXX) # parallel loops, and the runtime oneDNN is built on
    sinew_need(core Threads libc6-dev)
  elseif("${_sinew_c}" STREQUAL "onednn")
    sinew_need_dnnl(onednn)
    sinew_need(onednn Eigen3 libeigen3-dev 3.4 NO_MODULE)
  elseif("${_sinew_c}" STREQUAL "eigen")
    sinew_need(eigen Eigen3 libeigen3-dev 3.4 NO_MODULE)
    sinew_need_dnnl(eigen)   # dnnl_sgemm, the Eigen backend's matrix kernel
  elseif("${_sinew_c}" STREQUAL "mpi")
    sinew_need(mpi MPI "libopenmpi-dev and openmpi-bin" COMPONENTS CXX)
    sinew_need(mpi Boost libboost-mpi-dev 1.74 CONFIG COMPONENTS mpi serialization)
  else()
    string(REPLACE ";" ", " _sinew_known "${SINEW_COMPONENTS}")
    set(sinew_${_sinew_c}_NOT_FOUND_MESSAGE
        "sinew has no component \"${_sinew_c}\": its components are ${_sinew_known} (sinew::sinew is all of them).")
  endif()
endmacro()

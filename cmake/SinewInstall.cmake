# Install the headers and export the component targets with a package config and version file, so that
#   find_package(sinew CONFIG REQUIRED [COMPONENTS core onednn eigen mpi])
# works from an installed prefix (tests/package checks each component, and the vcpkg port installs through
# this file). One export set per component: the config includes only the targets of the components found.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Header-only, so the package files are the same on every architecture: share/, not lib/.
set(SINEW_CMAKE_DIR ${CMAKE_INSTALL_DATADIR}/cmake/sinew)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sinew DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(_component IN LISTS SINEW_COMPONENTS ITEMS all)
  set(_target sinew_${_component})
  if(_component STREQUAL "all")
    set(_target sinew)
  endif()
  install(TARGETS ${_target} EXPORT sinew-${_component}-targets)
  install(EXPORT sinew-${_component}-targets NAMESPACE sinew:: DESTINATION ${SINEW_CMAKE_DIR})
endforeach()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/sinewConfig.cmake.in
  ${PROJECT_BINARY_DIR}/sinewConfig.cmake INSTALL_DESTINATION ${SINEW_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sinewConfigVersion.cmake
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES
  ${PROJECT_BINARY_DIR}/sinewConfig.cmake
  ${PROJECT_BINARY_DIR}/sinewConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/SinewDependencies.cmake
  DESTINATION ${SINEW_CMAKE_DIR})

# Install the headers and export sinew::sinew with a package config and version file, so that
#   find_package(sinew CONFIG REQUIRED)
# works from an installed prefix (tests/package checks this).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SINEW_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/sinew)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sinew DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS sinew EXPORT sinewTargets)
install(EXPORT sinewTargets NAMESPACE sinew:: DESTINATION ${SINEW_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/sinewConfig.cmake.in
  ${PROJECT_BINARY_DIR}/sinewConfig.cmake INSTALL_DESTINATION ${SINEW_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sinewConfigVersion.cmake
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES
  ${PROJECT_BINARY_DIR}/sinewConfig.cmake
  ${PROJECT_BINARY_DIR}/sinewConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/SinewDependencies.cmake
  DESTINATION ${SINEW_CMAKE_DIR})

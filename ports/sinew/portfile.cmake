# sinew is header-only: configure its CMake project without tests, examples or benchmarks, install the
# headers and the package files (one export set per component), and let vcpkg.json's features bring in the
# dependencies of the components asked for. The package config looks only for the components a consumer names.
# A release sets REF to its tag and SHA512 to the archive's hash (vcpkg prints it when SHA512 is 0); REPO names
# the repository the releases are published from.
vcpkg_from_github(
    OUT_SOURCE_PATH SOURCE_PATH
    REPO sinew-dev/sinew
    REF "v${VERSION}"
    SHA512 0
    HEAD_REF main
)

set(VCPKG_BUILD_TYPE release)   # header-only: one configuration is enough
set(VCPKG_FIXUP_ELF_RPATH OFF)  # no ELF files to fix up

vcpkg_cmake_configure(
    SOURCE_PATH "${SOURCE_PATH}"
    OPTIONS
        -DSINEW_BUILD_TESTS=OFF
        -DSINEW_BUILD_EXAMPLES=OFF
        -DSINEW_BUILD_BENCH=OFF
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(PACKAGE_NAME sinew CONFIG_PATH share/cmake/sinew)

file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")

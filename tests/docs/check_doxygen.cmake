# cmake -DDOXYGEN=... -DDOXYFILE=... -DLOG=... -DSOURCE_DIR=... -P check_doxygen.cmake
# Runs Doxygen over the headers and fails listing every warning: an undocumented public name, or a comment
# Doxygen cannot read.
get_filename_component(out_dir ${LOG} DIRECTORY)
file(MAKE_DIRECTORY ${out_dir})
file(REMOVE ${LOG})
execute_process(COMMAND ${DOXYGEN} ${DOXYFILE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "doxygen failed (${rc}):\n${out}${err}")
endif()
file(READ ${LOG} log)
string(REPLACE "${SOURCE_DIR}" "" log "${log}")
string(STRIP "${log}" log)
if(log STREQUAL "")
  message(STATUS "doxygen: every public name of include/sinew is documented")
  return()
endif()
string(REGEX MATCHALL "is not documented" undocumented "${log}")
list(LENGTH undocumented count)
message(NOTICE "${log}")  # as Doxygen wrote it, one warning per line (FATAL_ERROR would rewrap it)
message(FATAL_ERROR "doxygen: ${count} public names have no comment (add a /// line above each; what counts as "
                    "public: docs/Doxyfile.in); any other line above is a comment Doxygen cannot read")

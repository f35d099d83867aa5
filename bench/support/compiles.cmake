# ctest's check that a benchmark left out of the default build still compiles (bench/CMakeLists.txt):
#   cmake -DCOMMANDS=<build>/compile_commands.json -DSOURCE=<absolute path> -P compiles.cmake
# compiles SOURCE with the very command CMake wrote for it (its target's flags, definitions and include
# directories), syntax-only: the compiler parses it and instantiates every template it uses, as a build would,
# and generates no code. Warnings fail the check, as they would fail a review of the build's output.
if(NOT COMMANDS OR NOT SOURCE)
  message(FATAL_ERROR "usage: cmake -DCOMMANDS=<compile_commands.json> -DSOURCE=<file> -P compiles.cmake")
endif()
if(NOT EXISTS "${COMMANDS}")
  message(FATAL_ERROR "${COMMANDS} does not exist: configure the build first")
endif()
file(READ "${COMMANDS}" _json)
string(JSON _count LENGTH "${_json}")
math(EXPR _last "${_count} - 1")
foreach(_i RANGE ${_last})
  string(JSON _file GET "${_json}" ${_i} file)
  if(_file STREQUAL SOURCE)
    string(JSON _command GET "${_json}" ${_i} command)
    string(JSON _directory GET "${_json}" ${_i} directory)
    break()
  endif()
endforeach()
if(NOT DEFINED _command)
  message(FATAL_ERROR "${COMMANDS} has no command for ${SOURCE}")
endif()
# The object file and its dependency file are the build's, not this check's.
string(REGEX REPLACE " -o [^ ]+" "" _command "${_command}")
string(REGEX REPLACE " -M[TF] [^ ]+" "" _command "${_command}")
string(REPLACE " -MD " " " _command "${_command}")
execute_process(COMMAND sh -c "${_command} -fsyntax-only -Werror" WORKING_DIRECTORY "${_directory}"
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} does not compile (exit ${_rc}); the command: ${_command} -fsyntax-only -Werror")
endif()

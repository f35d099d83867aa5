# cmake -DGUIDE=docs/guide.md -DOUT=guide_blocks.cpp -P extract_guide_blocks.cmake
#
# Writes every ```cpp block of the guide into one translation unit:
#   - its #include lines go to the top of the file (each once), so a block may be a whole program;
#   - the rest goes into `namespace guide_line_N { ... }` (N: the line of the block's fence), behind a #line
#     directive, so a compiler error names the guide's own line. A function called main there is an ordinary
#     function: the blocks are compiled, not run;
#   - a block fenced ```cpp continued reopens the namespace of the block before it, so it may use that
#     block's aliases and functions.
# Blocks in other languages (```sh, ```text, ```python) are left alone (tests/docs/run_guide_python.py runs
# the Python ones).
file(READ "${GUIDE}" text)
# CMake lists split at ';' and treat '[' ']' specially: hide them while the text is a list of lines.
string(REPLACE ";" "@GUIDE_SEMICOLON@" text "${text}")
string(REPLACE "[" "@GUIDE_LBRACKET@" text "${text}")
string(REPLACE "]" "@GUIDE_RBRACKET@" text "${text}")
string(REPLACE "\n" ";" lines "${text}")

set(includes "")
set(body "")
set(in_block FALSE)
set(namespace "")
set(blocks 0)
set(number 0)
foreach(line IN LISTS lines)
  math(EXPR number "${number} + 1")
  if(NOT in_block)
    if(line MATCHES "^```cpp( continued)?[ ]*$")
      set(in_block TRUE)
      math(EXPR blocks "${blocks} + 1")
      if(NOT CMAKE_MATCH_1 OR namespace STREQUAL "")
        set(namespace "guide_line_${number}")
      endif()
      math(EXPR first "${number} + 1")
      string(APPEND body "namespace ${namespace} {\n#line ${first} \"${GUIDE}\"\n")
    endif()
  elseif(line MATCHES "^```[ ]*$")
    set(in_block FALSE)
    string(APPEND body "}  // namespace ${namespace}\n")
  elseif(line MATCHES "^[ ]*#[ ]*include")
    string(FIND "${includes}" "${line}\n" seen)
    if(seen EQUAL -1)
      string(APPEND includes "${line}\n")
    endif()
    string(APPEND body "\n")  # keeps the #line numbering
  else()
    string(APPEND body "${line}\n")
  endif()
endforeach()
if(in_block)
  message(FATAL_ERROR "${GUIDE}: a ```cpp block is not closed")
endif()
if(blocks EQUAL 0)
  message(FATAL_ERROR "${GUIDE}: no ```cpp block found")
endif()

set(result "// Generated from ${GUIDE} by tests/docs/extract_guide_blocks.cmake: ${blocks} blocks. Do not edit.\n")
string(APPEND result "${includes}\n${body}\n")
string(APPEND result "namespace guide_blocks { extern const int kCount = ${blocks}; }\n")
string(REPLACE "@GUIDE_SEMICOLON@" ";" result "${result}")
string(REPLACE "@GUIDE_LBRACKET@" "[" result "${result}")
string(REPLACE "@GUIDE_RBRACKET@" "]" result "${result}")
# Rewritten only when it changes, so that touching the guide's prose recompiles nothing.
file(WRITE "${OUT}.new" "${result}")
file(COPY_FILE "${OUT}.new" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.new")

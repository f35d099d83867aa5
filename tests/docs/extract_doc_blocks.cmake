# cmake -DPAGES="README.md|docs/guide.md|..." -DROOT=<source dir> -DOUT=doc_blocks.cpp -P extract_doc_blocks.cmake
#
# Writes every ```cpp block of the pages (paths relative to ROOT, separated by '|') into one translation unit,
# so that all the documentation costs one compilation:
#   - its #include lines go to the top of the file (each once), so a block may be a whole program;
#   - the rest goes into `namespace doc_<page>_line_N { ... }` (<page>: the page's path with every character
#     that cannot be in a name made '_'; N: the line of the block's fence), behind a #line directive, so a
#     compiler error names the page's own line. A function called main there is an ordinary function: the
#     blocks are compiled, not run;
#   - a block fenced ```cpp continued reopens the namespace of the block before it on the same page, so it may
#     use that block's aliases and functions.
# Blocks in other languages (```sh, ```text, ```python) are left alone (tests/docs/run_guide_python.py runs
# the guide's Python ones). A page without a ```cpp block is fine; all of them together must have one.
string(REPLACE "|" ";" pages "${PAGES}")

set(includes "")
set(body "")
set(blocks 0)
set(summary "")
foreach(page IN LISTS pages)
  set(file "${ROOT}/${page}")
  string(MAKE_C_IDENTIFIER "${page}" page_id)
  file(READ "${file}" text)
  # CMake lists split at ';' and treat '[' ']' specially: hide them while the text is a list of lines.
  string(REPLACE ";" "@DOC_SEMICOLON@" text "${text}")
  string(REPLACE "[" "@DOC_LBRACKET@" text "${text}")
  string(REPLACE "]" "@DOC_RBRACKET@" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")

  set(in_block FALSE)
  set(namespace "")
  set(page_blocks 0)
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(NOT in_block)
      if(line MATCHES "^```cpp( continued)?[ ]*$")
        set(in_block TRUE)
        math(EXPR page_blocks "${page_blocks} + 1")
        if(CMAKE_MATCH_1 AND namespace STREQUAL "")
          message(FATAL_ERROR "${page}:${number}: a ```cpp continued block with no ```cpp block before it")
        endif()
        if(NOT CMAKE_MATCH_1)
          set(namespace "doc_${page_id}_line_${number}")
        endif()
        math(EXPR first "${number} + 1")
        string(APPEND body "namespace ${namespace} {\n#line ${first} \"${file}\"\n")
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
    message(FATAL_ERROR "${page}: a ```cpp block is not closed")
  endif()
  math(EXPR blocks "${blocks} + ${page_blocks}")
  string(APPEND summary "{\"${page}\", ${page_blocks}}, ")
endforeach()
if(blocks EQUAL 0)
  message(FATAL_ERROR "${PAGES}: no ```cpp block found")
endif()

set(result "// Generated from the documentation's pages by tests/docs/extract_doc_blocks.cmake: ${blocks} blocks.\n")
string(APPEND result "// Do not edit.\n${includes}\n${body}\n")
string(APPEND result "#include <utility>\n")
string(APPEND result "namespace doc_blocks {\n")
string(APPEND result "extern const int kCount = ${blocks};\n")
string(APPEND result "extern const std::pair<const char*, int> kPages[] = {${summary}{nullptr, 0}};\n")
string(APPEND result "}  // namespace doc_blocks\n")
string(REPLACE "@DOC_SEMICOLON@" ";" result "${result}")
string(REPLACE "@DOC_LBRACKET@" "[" result "${result}")
string(REPLACE "@DOC_RBRACKET@" "]" result "${result}")
# Rewritten only when it changes, so that touching the pages' prose recompiles nothing.
file(WRITE "${OUT}.new" "${result}")
file(COPY_FILE "${OUT}.new" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.new")

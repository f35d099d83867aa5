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
#
# Tables of a struct's fields are compiled too, so that their rows keep the struct's order (designated
# initializers written in a table's order must compile). A comment line before the table says whose fields:
#   <!-- table fields: sinew::data::LoaderOptions -->
#       every `name` in backticks in a row's first cell is a field, and the rows' names, in order, make one
#       designated initializer of that type: LoaderOptions{.batch_size = {}, .shuffle = {}, ...};
#   <!-- table fields: sinew::ROW::options, column 2 -->
#       each row is its own type, ROW being the first `name` in its first cell, and the fields are the names
#       in its second cell.
string(REPLACE "|" ";" pages "${PAGES}")

# Ends a "table fields" table: the single-type form's one designated initializer, and the state reset.
macro(_sinew_end_table)
  if(NOT table_fields STREQUAL "")
    list(JOIN table_fields ", " _inits)
    string(APPEND body "namespace doc_${page_id}_table_${table_line} {\n#line ${table_line} \"${file}\"\n"
                       "[[maybe_unused]] inline ${table_type} fields{${_inits}}@DOC_SEMICOLON@\n}\n")
    math(EXPR tables "${tables} + 1")
  endif()
  set(table_type "")
  set(table_fields "")
  set(table_seen FALSE)
endmacro()
set(tables 0)

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
  set(table_type "")    # from a "table fields" comment: the struct of the table that follows
  set(table_column 1)
  set(table_fields "")  # the single-type form: the fields of the rows so far
  set(table_line 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(NOT in_block AND line MATCHES "^<!-- table fields: ([A-Za-z0-9_:]+)(, column ([0-9]))? -->")
      set(table_type "${CMAKE_MATCH_1}")
      set(table_column 1)
      if(CMAKE_MATCH_3)
        set(table_column "${CMAKE_MATCH_3}")
      endif()
      set(table_fields "")
      set(table_line ${number})
      set(table_seen FALSE)
      set(table_header TRUE)
      continue()
    endif()
    if(NOT in_block AND NOT table_type STREQUAL "")
      if(line MATCHES "^\\|")
        set(table_seen TRUE)
        if(line MATCHES "^\\|[-| ]+\\|[ ]*$" OR table_header)
          set(table_header FALSE)
          continue()  # the separator; the header is the row before it
        endif()
        string(REGEX MATCHALL "[^|]+" cells "${line}")
        list(GET cells 0 first_cell)
        math(EXPR index "${table_column} - 1")
        list(GET cells ${index} field_cell)
        string(REGEX MATCHALL "`[A-Za-z_][A-Za-z0-9_]*`" names "${field_cell}")
        set(inits "")
        foreach(name IN LISTS names)
          string(REPLACE "`" "" name "${name}")
          list(APPEND inits ".${name} = {}")
        endforeach()
        if(table_type MATCHES "ROW")
          string(REGEX MATCH "`[A-Za-z_][A-Za-z0-9_:]*`" row "${first_cell}")
          string(REPLACE "`" "" row "${row}")
          string(REPLACE "ROW" "${row}" type "${table_type}")
          list(JOIN inits ", " inits)
          string(APPEND body "namespace doc_${page_id}_table_${number} {\n#line ${number} \"${file}\"\n"
                             "[[maybe_unused]] inline ${type} fields{${inits}}@DOC_SEMICOLON@\n}\n")
          math(EXPR tables "${tables} + 1")
        else()
          list(APPEND table_fields ${inits})
        endif()
        continue()
      endif()
      if(line STREQUAL "" AND NOT table_seen)
        continue()  # between the comment and its table
      endif()
      _sinew_end_table()
    endif()
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
  if(NOT table_type STREQUAL "")
    _sinew_end_table()
  endif()
  math(EXPR blocks "${blocks} + ${page_blocks}")
  string(APPEND summary "{\"${page}\", ${page_blocks}}, ")
endforeach()
if(blocks EQUAL 0)
  message(FATAL_ERROR "${PAGES}: no ```cpp block found")
endif()

set(result "// Generated from the documentation's pages by tests/docs/extract_doc_blocks.cmake: ${blocks} blocks, ${tables} tables of fields.\n")
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

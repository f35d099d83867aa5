# docs/timeline/'s SVG pictures are what tools/trace_to_svg.py draws from the traces beside them: renders each
# again (the standard library's SVG, no matplotlib) and compares. Fails when the renderer breaks or a picture
# no longer matches its trace (redraw it with the command in docs/timeline/README.md).
foreach(kind ring mpi)
  set(trace ${SOURCE_DIR}/docs/timeline/resnet18-${kind}-2x1.json)
  set(out ${OUT_DIR}/resnet18-${kind}-2x1.svg)
  execute_process(COMMAND ${PYTHON} ${SOURCE_DIR}/tools/trace_to_svg.py ${trace} ${out} --step 4 --title
                          "ResNet-18, 3x32x32, batch 42 per rank, 2 ranks x 1 thread, ${kind} all-reduce: step 4 (shared, loaded 2-core Zen 4)"
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "tools/trace_to_svg.py failed on ${trace} (exit ${status})")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${out} ${SOURCE_DIR}/docs/timeline/resnet18-${kind}-2x1.svg
                  RESULT_VARIABLE differ)
  if(NOT differ EQUAL 0)
    message(FATAL_ERROR "docs/timeline/resnet18-${kind}-2x1.svg is not what tools/trace_to_svg.py draws from ${trace} "
                        "now (${out}): redraw it (docs/timeline/README.md)")
  endif()
endforeach()

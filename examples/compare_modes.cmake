# Runs an example with KILN_JIT=0 and KILN_JIT=1 and fails unless both succeed and print the same
# text (bitwise-equal results print identically), ignoring lines that name the mode itself.
# Usage: cmake -DPROGRAM=path -P compare_modes.cmake
foreach(mode 0 1)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env KILN_JIT=${mode} ${PROGRAM}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} failed with KILN_JIT=${mode} (exit ${rc}):\n${out}\n${err}")
  endif()
  string(REGEX REPLACE "[^\n]*KILN_JIT=[^\n]*\n?" "" out "${out}")
  set(out_${mode} "${out}")
endforeach()
if(NOT out_0 STREQUAL out_1)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/eager.txt "${out_0}")
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/recorded.txt "${out_1}")
  message(FATAL_ERROR "${PROGRAM}: output differs between KILN_JIT=0 and KILN_JIT=1 "
                      "(see eager.txt and recorded.txt in ${CMAKE_CURRENT_BINARY_DIR})")
endif()
message(STATUS "${PROGRAM}: identical output with KILN_JIT=0 and KILN_JIT=1")

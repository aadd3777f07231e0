# The install test (ctest -L install), run as
#   cmake -DKILN_SOURCE_DIR=... -DKILN_BINARY_DIR=... -DWORK_DIR=... -DGENERATOR=... -P this
# (optional: -DBUILD_TYPE=, -DCXX_COMPILER=, -DCXX_LAUNCHER=, -DSANITIZE=ON for an asan build)
# 1. cmake --install the current build into WORK_DIR/prefix;
# 2. configure, build and run tests/install/consumer against it with find_package(kiln CONFIG);
# 3. configure, build and run tests/install/subdir_consumer, which add_subdirectory()s the kiln
#    source tree (it compiles the library again: the slow part, so only that target, -j2).
cmake_minimum_required(VERSION 3.25)

foreach(var KILN_SOURCE_DIR KILN_BINARY_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_install_test.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT DEFINED BUILD_TYPE OR BUILD_TYPE STREQUAL "")
  set(BUILD_TYPE Release)
endif()

function(run step)
  message(STATUS "install test: ${step}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: '${step}' failed (${rc}):\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

# The consumers use kiln's compiler; a sanitizer build of kiln needs sanitizer flags on them too.
set(common -G "${GENERATOR}" -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
if(DEFINED CXX_COMPILER AND NOT CXX_COMPILER STREQUAL "")
  list(APPEND common "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
# The release build's launcher (ccache): the add_subdirectory build then reuses its objects.
if(DEFINED CXX_LAUNCHER AND NOT CXX_LAUNCHER STREQUAL "")
  list(APPEND common "-DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER}")
endif()
if(SANITIZE)
  list(APPEND common "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -fno-omit-frame-pointer"
       "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
set(here "${KILN_SOURCE_DIR}/tests/install")

run("cmake --install" ${CMAKE_COMMAND} --install "${KILN_BINARY_DIR}" --prefix "${prefix}"
    --config ${BUILD_TYPE})
foreach(f include/kiln/kiln.h include/kiln/runtime/tensor.h lib/cmake/kiln/kilnConfig.cmake)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "install test: ${f} was not installed")
  endif()
endforeach()

run("configure find_package consumer" ${CMAKE_COMMAND} -S "${here}/consumer"
    -B "${WORK_DIR}/consumer" ${common} "-DCMAKE_PREFIX_PATH=${prefix}")
run("build find_package consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/consumer" -j 2)
run("run find_package consumer" "${WORK_DIR}/consumer/consumer")
message(STATUS "${last_output}")

# The add_subdirectory consumer compiles the library again, at -O0, the kernel files too
# (KILN_KERNEL_OPT empty; they are -O3 in every build type by default): ccache cannot reuse the
# release build's unity objects (their sources are generated files under another build folder,
# and ccache keys them by path), and -O0 compiles the 20 unity batches in about a third of the
# time of -O3 and the six kernel objects in a quarter (440 -> ~240 s of CPU, 2026-11-29). What
# this step checks, that kiln builds and links as a subproject, does not depend on the
# optimization level.
set(subdir_common ${common})
list(FILTER subdir_common EXCLUDE REGEX "^-DCMAKE_BUILD_TYPE=")
run("configure add_subdirectory consumer" ${CMAKE_COMMAND} -S "${here}/subdir_consumer"
    -B "${WORK_DIR}/subdir" ${subdir_common} -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0"
    "-DKILN_KERNEL_OPT=" "-DKILN_SOURCE_DIR=${KILN_SOURCE_DIR}")
run("build add_subdirectory consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/subdir"
    --target consumer -j 2)
run("run add_subdirectory consumer" "${WORK_DIR}/subdir/consumer")
message(STATUS "${last_output}")

file(REMOVE_RECURSE "${WORK_DIR}")
message(STATUS "install test: both consumers built and ran")

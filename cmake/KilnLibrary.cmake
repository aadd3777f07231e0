# The static library kiln::kiln. Sources are listed per layer; files named *_kernels.cpp under
# ops/cpu are compiled once per ISA (see ops/cpu/isa.h).
file(GLOB KILN_RUNTIME_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/runtime/*.cpp
     ${PROJECT_SOURCE_DIR}/runtime/autograd/*.cpp ${PROJECT_SOURCE_DIR}/runtime/cuda/*.cpp)
file(GLOB KILN_TRACER_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tracer/*.cpp
     ${PROJECT_SOURCE_DIR}/tracer/hop/*.cpp)
file(GLOB KILN_JIT_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/jit/*.cpp
     ${PROJECT_SOURCE_DIR}/jit/*/*.cpp)
file(GLOB KILN_OPS_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/ops/*.cpp
     ${PROJECT_SOURCE_DIR}/ops/optim/*.cpp
     ${PROJECT_SOURCE_DIR}/ops/cpu/*.cpp)
file(GLOB KILN_ISA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/ops/cpu/*_kernels.cpp)
list(REMOVE_ITEM KILN_OPS_SOURCES ${KILN_ISA_SOURCES})

set(KILN_WARNINGS -Wall -Wextra)

add_library(kiln STATIC ${KILN_RUNTIME_SOURCES} ${KILN_OPS_SOURCES} ${KILN_TRACER_SOURCES}
                        ${KILN_JIT_SOURCES})
add_library(kiln::kiln ALIAS kiln)
# -ffp-contract=off everywhere: kiln's vector math (ops/cpu/vecmath/) must never be fused into FMAs
# (the same bits on every ISA and in the JIT). -fno-math-errno: kiln never reads errno, and with
# it GCC could not vectorize std::sqrt (a library call per negative lane: eager sqrt ran at 6 ns
# an element); it changes no result (no approximations: that would take -funsafe-math).
set(KILN_FP_FLAGS -ffp-contract=off -fno-math-errno -fno-trapping-math)
target_compile_options(kiln PRIVATE ${KILN_WARNINGS} ${KILN_FP_FLAGS})
target_include_directories(kiln PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:include>
  $<INSTALL_INTERFACE:include/kiln>)
# OpenBLAS is loaded with dlopen on the first BLAS call, never linked (ops/cpu/openblas_library.h:
# kiln picks its kernels first); only its header, and its library's path as a fallback name.
target_link_libraries(kiln PUBLIC fmt::fmt spdlog::spdlog TBB::tbb TBB::tbbmalloc PRIVATE asmjit::asmjit
                      kiln_xsmm ${CMAKE_DL_LIBS})
target_include_directories(kiln SYSTEM PRIVATE ${OpenBLAS_INCLUDE_DIRS})
set_source_files_properties(${PROJECT_SOURCE_DIR}/ops/cpu/openblas_library.cpp PROPERTIES
                            COMPILE_DEFINITIONS "KILN_OPENBLAS_LIBRARY=\"${KILN_OPENBLAS_LIBRARY}\"")
target_compile_features(kiln PUBLIC cxx_std_20)
set_target_properties(kiln PROPERTIES UNITY_BUILD ${KILN_UNITY} UNITY_BUILD_BATCH_SIZE 8)

# CUDA (docs/cuda.md): libcuda and libnvrtc are loaded with dlopen at run time, never linked, and
# kiln declares the few driver/NVRTC types it uses itself, so no CUDA file is needed to build.
# KILN_WITH_CUDA=OFF leaves the backend out (cuda_is_available() says so). When the toolkit's
# headers are found, runtime/cuda/abi_check.cpp checks kiln's declarations against them.
option(KILN_WITH_CUDA "Load the CUDA driver and NVRTC at run time (needs no CUDA to build)" ON)
find_path(KILN_CUDA_INCLUDE_DIR NAMES cuda.h nvrtc.h
          HINTS ENV CUDA_HOME ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES include NO_CACHE)
if(KILN_WITH_CUDA)
  set(KILN_WITH_CUDA_VALUE 1)
else()
  set(KILN_WITH_CUDA_VALUE 0)
endif()
# Only the files that read the switch get the definition (a kiln-wide one would rebuild
# everything when it flips).
set_source_files_properties(${PROJECT_SOURCE_DIR}/runtime/cuda/driver.cpp
                            ${PROJECT_SOURCE_DIR}/runtime/cuda/nvrtc_library.cpp
                            ${PROJECT_SOURCE_DIR}/runtime/cuda/cublas_library.cpp
                            PROPERTIES COMPILE_DEFINITIONS KILN_WITH_CUDA=${KILN_WITH_CUDA_VALUE})
if(KILN_WITH_CUDA AND KILN_CUDA_INCLUDE_DIR)
  message(STATUS "kiln: CUDA declarations checked against ${KILN_CUDA_INCLUDE_DIR}")
  # cuBLAS ships in its own package: its header may be missing where cuda.h is present.
  if(EXISTS ${KILN_CUDA_INCLUDE_DIR}/cublas_api.h)
    set(KILN_CUBLAS_HEADERS_VALUE 1)
  else()
    set(KILN_CUBLAS_HEADERS_VALUE 0)
  endif()
  set_source_files_properties(${PROJECT_SOURCE_DIR}/runtime/cuda/abi_check.cpp PROPERTIES
                              COMPILE_DEFINITIONS
                              "KILN_CUDA_HEADERS=1;KILN_CUBLAS_HEADERS=${KILN_CUBLAS_HEADERS_VALUE}"
                              INCLUDE_DIRECTORIES ${KILN_CUDA_INCLUDE_DIR})
endif()
# dlopen/dlsym/dlinfo (in libc since glibc 2.34; libdl before).
target_link_libraries(kiln PRIVATE ${CMAKE_DL_LIBS})

# One object library per ISA for the kernel files.
set(KILN_ISA_FLAGS_isa_baseline "")
set(KILN_ISA_FLAGS_isa_avx2 -mavx2 -mfma -mf16c)
set(KILN_ISA_FLAGS_isa_avx512 -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq
    -mprefer-vector-width=512)
# -O3 for the kernels in every build type (a Debug build of a program keeps fast kernels), except
# under a sanitizer: there they take the preset's -O1, as the rest of the library does. Under
# ASan + UBSan, ops/cpu/reduce_kernels.cpp compiled in 136 s at -O3 and 64 s at -O1 (2026-11-28,
# Intel VM): the three ISA copies of the kernel files were a quarter of CI's asan build. The
# kernels' bits do not depend on the level (-ffp-contract=off, no fast-math).
# KILN_KERNEL_OPT overrides it; empty leaves the kernels at the build type's level. The
# add_subdirectory install test builds the library at -O0 that way (tests/install): the six
# kernel objects took 262 s of its 440 s of CPU at -O3, about 60 at -O0.
if(KILN_SANITIZE OR KILN_SANITIZE_THREAD)
  set(kiln_kernel_opt_default "")
else()
  set(kiln_kernel_opt_default -O3)
endif()
set(KILN_KERNEL_OPT "${kiln_kernel_opt_default}"
    CACHE STRING "Optimization flags of the CPU kernel files (empty: the build type's)")
set(KILN_ISA_OPT ${KILN_KERNEL_OPT})
foreach(isa isa_baseline isa_avx2 isa_avx512)
  add_library(kiln_${isa} OBJECT ${KILN_ISA_SOURCES})
  target_compile_definitions(kiln_${isa} PRIVATE KILN_ISA_NS=${isa})
  target_compile_options(kiln_${isa} PRIVATE ${KILN_WARNINGS} ${KILN_ISA_OPT} ${KILN_FP_FLAGS}
                         ${KILN_ISA_FLAGS_${isa}})
  target_include_directories(kiln_${isa} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(kiln_${isa} PRIVATE fmt::fmt spdlog::spdlog TBB::tbb)
  set_target_properties(kiln_${isa} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  target_sources(kiln PRIVATE $<TARGET_OBJECTS:kiln_${isa}>)
endforeach()

# The build's fingerprint (runtime/build_fingerprint.h): a generated file, made again whenever a
# library source or header, asmjit's library or the toolchain changes.
file(GLOB_RECURSE KILN_FINGERPRINTED_FILES CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/runtime/*.h ${PROJECT_SOURCE_DIR}/runtime/*.cpp
     ${PROJECT_SOURCE_DIR}/ops/*.h ${PROJECT_SOURCE_DIR}/ops/*.cpp
     ${PROJECT_SOURCE_DIR}/tracer/*.h ${PROJECT_SOURCE_DIR}/tracer/*.cpp
     ${PROJECT_SOURCE_DIR}/jit/*.h ${PROJECT_SOURCE_DIR}/jit/*.cpp
     ${PROJECT_SOURCE_DIR}/include/*.h)
string(TOUPPER "${CMAKE_BUILD_TYPE}" kiln_build_type)
string(JOIN " " kiln_toolchain ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}
       "${CMAKE_BUILD_TYPE}" ${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${kiln_build_type}}
       ${KILN_FP_FLAGS} ${KILN_KERNEL_OPT} sanitize=${KILN_SANITIZE}/${KILN_SANITIZE_THREAD})
set(KILN_FINGERPRINT_SOURCE ${CMAKE_CURRENT_BINARY_DIR}/generated/kiln_build_fingerprint.cpp)
add_custom_command(
  OUTPUT ${KILN_FINGERPRINT_SOURCE}
  COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -DASMJIT=$<TARGET_FILE:asmjit::asmjit>
          "-DTOOLCHAIN=${kiln_toolchain}" -DOUT=${KILN_FINGERPRINT_SOURCE}
          -P ${PROJECT_SOURCE_DIR}/cmake/KilnFingerprint.cmake
  DEPENDS ${KILN_FINGERPRINTED_FILES} ${PROJECT_SOURCE_DIR}/cmake/KilnFingerprint.cmake
          ${PROJECT_SOURCE_DIR}/CMakeLists.txt ${PROJECT_SOURCE_DIR}/cmake/KilnLibrary.cmake
          $<TARGET_FILE:asmjit::asmjit>
  COMMENT "kiln: the build's fingerprint" VERBATIM)
target_sources(kiln PRIVATE ${KILN_FINGERPRINT_SOURCE})
set_source_files_properties(${KILN_FINGERPRINT_SOURCE} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)

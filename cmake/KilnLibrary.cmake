# The static library kiln::kiln. Sources are listed per layer; files named *_kernels.cpp under
# ops/cpu are compiled once per ISA (see ops/cpu/isa.h).
file(GLOB KILN_RUNTIME_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/runtime/*.cpp
     ${PROJECT_SOURCE_DIR}/runtime/autograd/*.cpp)
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
# (the same bits on every ISA and in the JIT).
target_compile_options(kiln PRIVATE ${KILN_WARNINGS} -ffp-contract=off)
target_include_directories(kiln PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:include>
  $<INSTALL_INTERFACE:include/kiln>)
target_link_libraries(kiln PUBLIC fmt::fmt spdlog::spdlog TBB::tbb TBB::tbbmalloc PRIVATE kiln_openblas
                      asmjit::asmjit)
target_compile_features(kiln PUBLIC cxx_std_20)

# One object library per ISA for the kernel files.
set(KILN_ISA_FLAGS_isa_baseline "")
set(KILN_ISA_FLAGS_isa_avx2 -mavx2 -mfma -mf16c)
set(KILN_ISA_FLAGS_isa_avx512 -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq
    -mprefer-vector-width=512)
foreach(isa isa_baseline isa_avx2 isa_avx512)
  add_library(kiln_${isa} OBJECT ${KILN_ISA_SOURCES})
  target_compile_definitions(kiln_${isa} PRIVATE KILN_ISA_NS=${isa})
  target_compile_options(kiln_${isa} PRIVATE ${KILN_WARNINGS} -O3 -ffp-contract=off
                         ${KILN_ISA_FLAGS_${isa}})
  target_include_directories(kiln_${isa} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(kiln_${isa} PRIVATE fmt::fmt spdlog::spdlog TBB::tbb)
  set_target_properties(kiln_${isa} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  target_sources(kiln PRIVATE $<TARGET_OBJECTS:kiln_${isa}>)
endforeach()

# Debian packages only: libspdlog-dev (brings libfmt-dev), libtbb-dev, libopenblas-dev,
# libasmjit-dev, libxsmm-dev.
find_package(fmt CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(TBB CONFIG REQUIRED)
find_package(OpenBLAS CONFIG REQUIRED)
find_package(asmjit CONFIG REQUIRED)  # libasmjit-dev: static, non-PIC, the 1.9 camelCase API

# The library file (a list when OpenBLAS links others; the first is OpenBLAS).
list(GET OpenBLAS_LIBRARIES 0 KILN_OPENBLAS_LIBRARY)
if(NOT TARGET kiln_openblas)
  add_library(kiln_openblas INTERFACE IMPORTED GLOBAL)
  set_target_properties(kiln_openblas PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "${OpenBLAS_LIBRARIES}")
endif()

# libxsmm-dev: static archives only (libxsmm.a, non-PIC like asmjit's) and no CMake package.
# libxsmmnoblas.a stands in for the BLAS that libxsmm's own fallback would call: kiln never asks
# libxsmm for a product it cannot generate (ops/cpu/xsmm_gemm.h), and OpenBLAS is dlopened.
if(NOT TARGET kiln_xsmm)
  find_path(KILN_XSMM_INCLUDE_DIR libxsmm.h REQUIRED)
  find_library(KILN_XSMM_LIBRARY NAMES libxsmm.a xsmm REQUIRED)
  find_library(KILN_XSMM_NOBLAS_LIBRARY NAMES libxsmmnoblas.a xsmmnoblas REQUIRED)
  find_package(Threads REQUIRED)
  add_library(kiln_xsmm INTERFACE IMPORTED GLOBAL)
  set_target_properties(kiln_xsmm PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${KILN_XSMM_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${KILN_XSMM_LIBRARY};${KILN_XSMM_NOBLAS_LIBRARY};Threads::Threads;rt;${CMAKE_DL_LIBS};m")
endif()

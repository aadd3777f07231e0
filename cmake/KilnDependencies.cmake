# Debian packages only: libspdlog-dev (brings libfmt-dev), libtbb-dev, libopenblas-dev,
# libasmjit-dev.
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

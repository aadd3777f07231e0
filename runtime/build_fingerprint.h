// The fingerprint of this build of the kiln library: 32 hex digits of a SHA-256 over the
// library's sources, headers and build files, the asmjit library file and the toolchain (compiler,
// version, flags), computed at build time by cmake/KilnFingerprint.cmake (the definition is a
// generated file in the build tree). Two programs linking a library built from the same sources
// with the same toolchain share it; any change to kiln's code, asmjit or the flags changes it. The
// CPU kernel disk cache keys its entries with it (jit/cpu/disk_cache.h): unlike the program's own
// build id, relinking a program (its own code changed) keeps its kernels.
#pragma once
#include <string_view>

namespace kiln {

std::string_view build_fingerprint();

}  // namespace kiln

// NVRTC: CUDA C++ source to CUBIN for one GPU architecture, through the libnvrtc that
// runtime/cuda/nvrtc_library.h loads at run time (no GPU or driver needed: CI compiles here).
//
// Options (measured in ../shared/notes: compile straight to CUBIN, PTX would cost ~150 ms in the
// driver at load): --gpu-architecture=sm_XX, --std=c++17, -default-device (unqualified
// functions are __device__), --fmad=false (no FMA contraction: kiln's numerical contract, as
// -ffp-contract=off on the CPU). Kernels are extern "C" so their names are not mangled.
//
// A failure throws kiln::Error naming the kernel, the architecture, NVRTC's result and its log;
// with KILN_DUMP asking for code, the source (.cu) and the log (.log) go to the dump folder too.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kiln::jit::cuda {

// "sm_90" for 90.
std::string sm_arch(int sm);
// The options kiln compiles every kernel for sm_<sm> with (the architecture first).
std::vector<std::string> nvrtc_options(int sm);
// The architectures the loaded NVRTC can target (90 for sm_90); throws when NVRTC is missing.
std::vector<int> nvrtc_supported_archs();

// Compiles `source` with `options` (which must name an sm_XX architecture) and returns the
// CUBIN. `name` (a kernel or op name) is used in the error and the dump files' names.
std::vector<char> nvrtc_compile(std::string_view source, std::string_view name,
                                const std::vector<std::string>& options);

// "13.0" (throws when NVRTC is missing).
std::string nvrtc_version();

}  // namespace kiln::jit::cuda

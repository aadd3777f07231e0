// A kernel's CUBIN for sm_<sm>: from the CUBIN cache (memory, then disk), else compiled by NVRTC
// with nvrtc_options(sm) and stored. The cache key holds the full source, the architecture, the
// options and the loaded NVRTC's fingerprint (version and build), so a new NVRTC, architecture or
// option never reuses an old binary.
#pragma once
#include <string_view>

#include "jit/cuda/disk_cache.h"

namespace kiln::jit::cuda {

Cubin compile_cubin(std::string_view source, std::string_view name, int sm,
                    CubinDiskCache& cache = cubin_cache());

}  // namespace kiln::jit::cuda

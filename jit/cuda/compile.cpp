#include "jit/cuda/compile.h"

#include "jit/cuda/nvrtc.h"
#include "runtime/cuda/nvrtc_library.h"

namespace kiln::jit::cuda {

Cubin compile_cubin(std::string_view source, std::string_view name, int sm, CubinDiskCache& cache) {
  kiln::cuda::nvrtc();  // a missing NVRTC is an error even when the cache holds the kernel
  CubinKey key{std::string(source), sm_arch(sm), nvrtc_options(sm),
               kiln::cuda::nvrtc_status().fingerprint()};
  return cache.get_or_compile(key, [&] { return nvrtc_compile(source, name, key.options); });
}

}  // namespace kiln::jit::cuda

// One launch of a CUDA loop kernel, without a device: the argument words (render.h,
// CudaArgLayout) and how much work there is. Dims are coalesced (size-1 dims dropped, a dim
// merged into the next inner one where every operand steps through both as through one; a row
// kernel's rows' dims and row's dims apart, each keeping at least one dim), params converted
// with Scalar::to into their value types, the dense loop's vector form flagged where it applies
// (render.h). cuda_target.cpp launches from it; tests run it too.
#pragma once
#include <cstdint>
#include <vector>

#include "jit/target.h"

namespace kiln::jit::cuda {

inline constexpr unsigned kCudaBlockThreads = 256;

struct CudaLaunch {
  std::vector<uint64_t> words;
  int64_t work = 0;       // elements (pointwise) or rows (row kernels); 0: nothing to launch
  int64_t per_block = 0;  // of them per 256-thread block: 1024 (the dense loop: 4 per thread),
                          // 256 (the strided loop), 8 (a warp per row) or 1 (a block per row)
  bool capped = true;     // at most 16 blocks per SM, looping (the dense loop: one trip each)
  // A row kernel's split of long rows (render_reduce.h), where it applies: phase 1 runs
  // `split_items` (row, chunk) blocks writing 256 lane values each into a scratch buffer of
  // `scratch_bytes`, phase 2 the rows as usual, combining them. 0: one launch, phase 0.
  int64_t split_items = 0;
  int64_t scratch_bytes = 0;
};

// Sets the scratch buffer and the phase (1 or 2) of a split launch's words.
void set_split_phase(CudaLaunch& l, const LoopKernel& k, void* scratch, int phase);

// Raises kiln::Error for a launch that does not fit `k` (operand, stride or param counts,
// reduced dims) or keeps more than kCudaMaxDims dims.
CudaLaunch cuda_launch_words(const LoopKernel& k, const LaunchArgs& args);

}  // namespace kiln::jit::cuda

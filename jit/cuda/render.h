// Renders one loop kernel (jit/loop/loop_kernel.h) to CUDA C++ for NVRTC: the CUDA target's
// counterpart of jit/cpu/render.h. The source includes no CUDA header (NVRTC compiles a header-free
// kernel in tens of milliseconds): a small prelude defines the helpers the expressions use.
//
// The kernel takes one argument, an array of 64-bit words (CudaArgLayout). A launch of rank 1
// with fewer than 2^31 elements (the launcher, cuda_target.cpp, coalesces dims first, so a
// contiguous or broadcast operand of any rank runs as rank 1) takes the dense loop, with 32-bit
// indices: where every operand is contiguous (or broadcast) and aligned, its vector form, each
// thread computing four consecutive elements moved as 16-byte packs; else each thread computing
// kCudaDenseUnroll elements a block apart per trip, all their loads first. Any other launch walks
// the index space with a grid-stride loop: element i is split into per-dim indices (innermost last)
// over the launch's sizes, and each operand's address is its base plus the sum of index * byte
// stride. In both, an expression may read `i`, the element's row-major index in the index space
// (kiln_i64).
//
// Semantics are those of the eager kernels (ops/cpu/pointwise_functors.h): integers wrap,
// maximum/minimum/relu/clamp propagate NaN, round is half to even, sign of NaN and -0 is +0,
// abs keeps -0, casts follow x86 (float -> int truncates, NaN or out of range gives the
// integer minimum; int -> float rounds to nearest even). + - * / sqrt are IEEE (NVRTC's defaults,
// with --fmad=false: no contraction), so they give the CPU's bits; the transcendentals use CUDA's
// own math library (docs/cuda.md states their error bound against the CPU).
//
// A row kernel (one with Reduce expressions, loop_kernel.h) is rendered by render_reduce.h: one
// warp per row of at most 2048 elements, else one block of 256 threads per row, each Reduce a
// pass over the row in expression order combined in a fixed tree of the row length alone (never
// of the launch geometry); then the element stores, and the row stores once per row.
#pragma once
#include <cstdint>
#include <string>

#include "jit/loop/loop_kernel.h"

namespace kiln::jit::cuda {

// The most dims a launch may have after coalescing.
inline constexpr int kCudaMaxDims = 12;
// Elements per thread and loop trip in the dense loop's scalar form (rank 1 but not the vector
// form: a strided or unaligned operand, and the last n % 4 elements).
inline constexpr int kCudaDenseUnroll = 1;

// The argument words of a kernel with `operands` operands and `params` params:
//   [0] element count (a row kernel: the number of rows), [1] rank (| kVecFlag; a row kernel:
//   the rank of the rows' dims), [2] a row kernel's row length, [3] the rank of its row's dims
//   (0 and 0 in a pointwise kernel), [4, 4 + D) sizes (a row kernel: the rows' dims, then the
//   row's), then per operand its base address and D byte strides, then one word per param (the
//   value's bits: a Float32 in the low 32 bits), then a row kernel's split of long rows
//   (render_reduce.h): the scratch address, the chunk length, the phase (0: whole rows).
struct CudaArgLayout {
  int operands = 0;
  int params = 0;
  static constexpr int kCount = 0, kRank = 1, kRowLen = 2, kRowRank = 3, kSizes = 4;
  // Or'ed into the rank word: the launch may take the dense loop's vector form (render.cpp).
  static constexpr uint64_t kVecFlag = uint64_t{1} << 8;
  int ptr(int j) const { return kSizes + kCudaMaxDims + j * (1 + kCudaMaxDims); }
  int stride(int j, int d) const { return ptr(j) + 1 + d; }
  int param(int p) const { return ptr(operands) + p; }
  static constexpr int kSplitScratch = 0, kSplitChunk = 1, kSplitPhase = 2;
  int split(int i) const { return param(params) + i; }
  int words() const { return split(3); }
};

struct RenderedCuda {
  std::string source;
  std::string name;  // the extern "C" kernel's name
};

// `name` names the kernel (an op name or a hash); the source depends only on `k` and it.
RenderedCuda render_cuda_kernel(const LoopKernel& k, const std::string& name);

}  // namespace kiln::jit::cuda

// Row kernels (loop_kernel.h "Row kernels") rendered to CUDA C++: the CUDA counterpart of
// jit/cpu/render_reduce.cpp. The launch's dims are the rows' dims then the row's (CudaArgLayout).
//
// Geometry: a row of at most 2048 elements runs on one warp (8 rows per block of 256), a longer
// one on a whole block. Short rows are the common case of softmax and layer_norm (a warp keeps
// every thread busy from 32 elements up and needs no barrier); a long row needs the block's
// 256 threads to keep enough loads in flight. The choice depends on the row length alone.
//
// Order (fixed by the row length n, so two runs, any grid and any device give the same bits):
// 256 lanes, lane l taking elements l, l + 256, l + 512, ... in order, in pieces of 8 folded
// left to right, the pieces combined by a binary counter (pairwise for a power-of-two count);
// then a tree over the lanes: level s = 128, 64, ..., 1 combines lane l with lane l + s where
// that lane holds elements (l + s < n). A warp holds lanes 4t + i + 128h (i < 4, h < 2) in
// thread t (a lane has at most 8 elements there: one piece), so that a thread's elements come in
// groups of four consecutive ones, loaded as one 16-byte pack where the row is contiguous and
// aligned; level 128 is within the thread, levels 64..4 warp shuffles, 2 and 1 within thread 0.
// A block holds lane t in thread t (levels 128..32 through shared memory, 16..1 shuffles). An
// empty row gives the identity (0, 1, -inf or the integer minimum, +inf or the integer maximum).
//
// Passes: each Reduce re-reads the row from global memory (the cache holds rows of the common
// sizes), evaluating its element value's prologue, in expression order, 8 elements per thread at
// once (all their loads first); the row values follow each pass in every thread of the row; a
// last pass stores the element values (each thread two groups of four consecutive elements per
// trip, as packs where it can), and thread 0 of the row stores the row values.
//
// Split (few long rows: launch_words.cpp decides): a kernel with one Reduce may run a row of
// more than 2048 elements on several blocks, in chunks of 2048 C elements (C a power of two),
// without changing a bit. In a full chunk every lane has exactly C pieces, aligned at a multiple
// of C, so the lane's cascade over them is one perfect tree: the very node its binary counter
// builds over those pieces. Phase 1 (one block per row and chunk) writes each lane's cascade
// result for its chunk to a scratch buffer; phase 2 (a block per row) pushes a lane's full
// chunks through a cascade (building the counter's larger nodes), folds the stack onto the last,
// partial chunk's value where the lane has elements there (that value is the fold of the nodes
// the counter builds from those pieces), and runs the block tree and the rest of the kernel.
#pragma once
#include <string>

#include "jit/cuda/render.h"

namespace kiln::jit::cuda {

// `k` has Reduce expressions (verified by the caller).
RenderedCuda render_cuda_row_kernel(const LoopKernel& k, const std::string& name);

// Whether `k`'s long rows may be split over several blocks: one Reduce (render_reduce.h,
// "Split"); its value type then sizes the scratch's lane values.
bool row_kernel_splits(const LoopKernel& k);
DType row_kernel_reduce_type(const LoopKernel& k);

}  // namespace kiln::jit::cuda

// ElementwiseLoop: walks the common (broadcast) index space of an output and its inputs, with
// strides in bytes, merging dims that are contiguous for every operand, and calls an inner loop
// over the innermost dim. The range can be split for parallel execution. An input that runs the
// other way (a transpose: its innermost stride a cache line or more, the next dim's smaller) is
// walked in tiles by run(): rows of kTileCols elements over kTileRows rows at a time, so each
// of the input's lines serves many rows before it leaves the cache. Few columns a tile: the
// input's lines of one tile sit a row apart, often 4 KiB, in one L1 set of 8 ways (2-core Zen
// 3, x.t().contiguous() of [8192, 1024] Float32: 31 ms row by row, 21 in 32 x 64 tiles, 16 in
// 128 x 8). Inner loops never depend on the order (overlapping operands go through a copy).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "runtime/small_vector.h"
#include "runtime/tensor.h"

namespace kiln {

// Inner loop: ptrs[0] is the output, ptrs[1..] the inputs; strides in bytes; n elements.
// `params` are the op's numeric arguments (clamp bounds, fill value, exponent).
using InnerLoop = void (*)(char* const* ptrs, const int64_t* strides, int64_t n,
                           const Scalar* params);

class ElementwiseLoop {
 public:
  static constexpr int kMaxOperands = 4;

  // Operand 0 is `out`; the inputs are broadcast to out's shape. A null entry in `scalars`
  // stands for nothing; a non-null one replaces the input at that position by a single value
  // (stride 0 everywhere).
  ElementwiseLoop(const Tensor& out, std::span<const Tensor> inputs,
                  std::span<const void* const> scalars = {});

  int64_t numel() const { return numel_; }
  // Runs inner over the linear index range [begin, end) of the (coalesced) index space.
  void run_range(int64_t begin, int64_t end, InnerLoop inner, const Scalar* params) const;
  // Runs the whole space, in parallel when it is large.
  void run(InnerLoop inner, const Scalar* params) const;

  static constexpr int64_t kTileRows = 128, kTileCols = 8;
  // Whether an input with these byte strides along the innermost dim and the next one runs the
  // other way: each innermost element on a line of its own, the next dim the faster (the rule
  // tiles() applies, and the CPU JIT's pointwise launches: jit/cpu/cpu_kernel.cpp).
  static bool transposed_input(int64_t inner, int64_t next) {
    return std::abs(inner) >= 64 && next != 0 && std::abs(next) < std::abs(inner);
  }
  // Whether run() walks the last two dims in tiles (an input transposed against the output).
  // Its output rows are then short runs of many rows: no place for non-temporal stores, whose
  // write-combining buffers want whole lines written one after another.
  bool tiles() const;
  // A copy of one dtype of `bytes` (4 or 8) per element where tiles() holds and the input is
  // dense along the next dim (a plain transpose): runs it in tiles of 128 x 128 elements, each
  // in SSE2 blocks (4 x 4 or 2 x 2: contiguous runs of the input read, transposed in registers,
  // written as contiguous runs of the output). False (nothing done) where it does not apply.
  bool run_transposed_copy(size_t bytes) const;

 private:
  void run_tiles(InnerLoop inner, const Scalar* params) const;
  template <class F>
  void for_each_tile(int64_t tile_rows, int64_t tile_cols, const F& f) const;

  int nops_ = 0;
  int ndim_ = 0;
  int64_t numel_ = 1;
  DimVector sizes_;  // innermost last
  std::array<DimVector, kMaxOperands> strides_;
  std::array<char*, kMaxOperands> base_{};
};

}  // namespace kiln

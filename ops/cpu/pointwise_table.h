// The table of pointwise inner loops, one per (op, compute dtype), plus dtype casts, filled by
// the per-ISA kernel file for each ISA; pointwise_table() returns the active ISA's.
#pragma once
#include "ops/cpu/elementwise_loop.h"
#include "ops/cpu/isa.h"
#include "runtime/dtype.h"
#include "runtime/op_list.h"

namespace kiln {

// Contiguous outputs of at least this many bytes are written with non-temporal stores (the
// *_nt loops), as the JIT's kernels do (jit/cpu/cpu_kernel.h, the same threshold).
inline constexpr int64_t kStreamingBytes = int64_t{8} << 20;

struct PointwiseTable {
  InnerLoop op[kNumOps][kNumDTypes] = {};       // null where the op lacks that dtype
  InnerLoop cast[kNumDTypes][kNumDTypes] = {};  // [from][to]: out = static_cast<To>(in)
  // The same loops with streaming (non-temporal) stores for a contiguous output: same bits.
  InnerLoop op_nt[kNumOps][kNumDTypes] = {};
  InnerLoop cast_nt[kNumDTypes][kNumDTypes] = {};
  InnerLoop fill[kNumDTypes] = {};         // out = params[0]
  InnerLoop where[kNumDTypes] = {};        // out = cond ? a : b (ptrs: out, cond, a, b)
  InnerLoop masked_fill[kNumDTypes] = {};  // out = mask ? params[0] : x (out, x, mask)
};

const PointwiseTable& pointwise_table();

// True when `out` is written with the streaming loops: contiguous and at least kStreamingBytes.
inline bool streams_output(const TensorImpl* out) {
  return out->is_contiguous() && out->numel() * int64_t(itemsize(out->dtype())) >= kStreamingBytes;
}

#define KILN_DECLARE_FILL(ns)                   \
  namespace ns {                                \
  void fill_pointwise_table(PointwiseTable& t); \
  }
KILN_FOR_EACH_ISA_NS(KILN_DECLARE_FILL)
#undef KILN_DECLARE_FILL

}  // namespace kiln

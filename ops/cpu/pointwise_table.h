// The table of pointwise inner loops, one per (op, compute dtype), plus dtype casts, filled by
// the per-ISA kernel file for each ISA; pointwise_table() returns the active ISA's.
#pragma once
#include "ops/cpu/elementwise_loop.h"
#include "ops/cpu/isa.h"
#include "runtime/dtype.h"
#include "runtime/op_list.h"

namespace kiln {

struct PointwiseTable {
  InnerLoop op[kNumOps][kNumDTypes] = {};       // null where the op lacks that dtype
  InnerLoop cast[kNumDTypes][kNumDTypes] = {};  // [from][to]: out = static_cast<To>(in)
  InnerLoop fill[kNumDTypes] = {};              // out = params[0]
  InnerLoop where[kNumDTypes] = {};             // out = cond ? a : b (ptrs: out, cond, a, b)
  InnerLoop masked_fill[kNumDTypes] = {};       // out = mask ? params[0] : x (out, x, mask)
};

const PointwiseTable& pointwise_table();

#define KILN_DECLARE_FILL(ns)                   \
  namespace ns {                                \
  void fill_pointwise_table(PointwiseTable& t); \
  }
KILN_FOR_EACH_ISA_NS(KILN_DECLARE_FILL)
#undef KILN_DECLARE_FILL

}  // namespace kiln

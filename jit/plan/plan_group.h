// The planner's working state (jit/plan/planner.cpp): fusion groups and the drafts of steps,
// shared with the helpers it calls (group_kernel.h, recompute_chains.h).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "tracer/graph.h"

namespace kiln::jit::planning {

using tracer::ValueId;

// A fusion group while planning: its nodes (in order) and the shape they share.
struct Group {
  std::vector<int32_t> nodes;
  DimVector sizes;
  std::vector<ValueId> reads;  // values computed outside the group that it loads
  // A row kernel (docs/jit.md "Reductions"): it reduces the last `reduced_dims` dims of `sizes`;
  // `row_sizes` is `sizes` with those dims 1 (a keepdim result), `drop_sizes` without them;
  // `row_vals` its values of either shape (one per row: reductions, and what is computed from
  // them alone).
  int reduced_dims = 0;
  // A column kernel (loop_kernel.h "Column kernels"): the reduced dims are the `reduced_dims`
  // before the last `inner_dims` (0: a row kernel). `epilogue`: its element values computed
  // from its row values (no reduction of the group may read them: one reducing pass).
  int inner_dims = 0;
  std::vector<ValueId> epilogue;
  DimVector row_sizes, drop_sizes;
  bool row_shape(const DimVector& s) const {
    return reduced_dims > 0 && (s == row_sizes || s == drop_sizes);
  }
  std::vector<ValueId> row_vals;
  bool is_row(ValueId v) const {
    return std::find(row_vals.begin(), row_vals.end(), v) != row_vals.end();
  }
  // It draws random numbers (rand, dropout): a row kernel never does (the row renderer has no
  // element index), so a drawing group takes no reduction and a row group no drawing node.
  bool draws = false;
  // Values an earlier kernel computes that this one computes again from that kernel's inputs
  // instead of loading them (recompute_element_chains): their nodes are in `nodes` too.
  std::vector<ValueId> recomputed;
  bool recomputes(ValueId v) const {
    return std::find(recomputed.begin(), recomputed.end(), v) != recomputed.end();
  }
};

// One planned step: an eager node or a group.
struct Draft {
  int32_t node = -1;
  int32_t group = -1;
};

}  // namespace kiln::jit::planning

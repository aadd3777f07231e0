#include "jit/plan/group_kernel.h"

#include "jit/cpu/cpu_target.h"
#include "jit/loop/common_exprs.h"
#include "jit/loop/row_pass_order.h"
#include "jit/lower/lower_reduce.h"
#include "jit/lower/lowering.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"

namespace kiln::jit::planning {

using tracer::Graph;
using tracer::Node;

std::unique_ptr<KernelStep> build_group_kernel(const Graph& g, const Group& grp,
                                               const std::vector<const tracer::ValueMeta*>& meta,
                                               const std::vector<int32_t>& last_reader,
                                               const std::vector<tracer::ScalarPosition>& runtime,
                                               const std::vector<int32_t>& random_index,
                                               int32_t my_step) {
  auto step = std::make_unique<KernelStep>();
  LoopKernel k;
  std::vector<int32_t> expr_of(static_cast<size_t>(g.num_values()), -1);
  std::vector<int32_t> input_of(static_cast<size_t>(g.num_values()), -1);
  std::vector<int32_t> row_load_of;  // per value: its row load (row nodes of row kernels)
  for (int32_t j : grp.nodes) {
    const Node& n = g.nodes[j];
    SmallVector<int32_t, 4> in;
    SmallVector<const tracer::ValueMeta*, 4> in_meta;
    const bool view = op_def(n.op).flags & kIsView;  // a row value's other shape (the same)
    const bool reduction =
        grp.reduced_dims > 0 && !n.inputs.empty() &&
        (grp.inner_dims > 0 ? column_reduction_dims(n, *meta[n.inputs[0]]).reduced > 0
                            : row_reduction_dims(n, *meta[n.inputs[0]]) > 0);
    // A row value computed from loads (not a reduction, not a view of a row value) reads
    // them as row loads: each is constant along the row (make_jit_plan's row_input).
    const bool row_node =
        grp.reduced_dims > 0 && grp.inner_dims == 0 && grp.is_row(n.output) && !view && !reduction;
    for (ValueId v : n.inputs) {
      const bool external = input_of[v] >= 0 || expr_of[v] < 0;  // not computed here
      if (external && input_of[v] < 0) {  // an input of the kernel, in its storage dtype
        step->inputs.push_back(v);
        k.inputs.push_back(meta[v]->dtype);
        input_of[v] = k.num_inputs() - 1;
      }
      if (row_node && external) {
        row_load_of.resize(static_cast<size_t>(g.num_values()), -1);
        if (row_load_of[v] < 0) row_load_of[v] = k.load_row(input_of[v]);
        in.push_back(row_load_of[v]);
      } else {
        if (expr_of[v] < 0) expr_of[v] = k.load(input_of[v]);
        in.push_back(expr_of[v]);
      }
      in_meta.push_back(meta[v]);
    }
    ScalarSource src;
    for (size_t r = 0; r < runtime.size(); ++r) {
      if (runtime[r].node != j) continue;
      src.param[runtime[r].index] = k.num_params();
      step->params.push_back(static_cast<int32_t>(r));
      k.params.push_back(DType::Float64);  // the lowering sets its type
    }
    if (random_index[j] >= 0) {  // its Philox words: four Int32 params
      src.philox = k.num_params();
      for (int32_t w = 0; w < 4; ++w) {
        step->params.push_back(philox_param(random_index[j], w));
        k.params.push_back(DType::Int32);
      }
    }
    if (n.inputs.empty()) step->sizes = n.meta.sizes;  // rand: the group's shape
    if (view)
      expr_of[n.output] = in[0];
    else if (reduction)
      expr_of[n.output] = lower_reduction(k, n, in[0], grp.inner_dims > 0);
    else
      expr_of[n.output] =
          lower_node(k, n, {in_meta.data(), in_meta.size()}, {in.data(), in.size()}, src);
    step->nodes.push_back(j);
  }
  step->reduced_dims = grp.reduced_dims;
  step->inner_dims = grp.inner_dims;
  // Stored: what a later step or the graph's outputs read.
  for (int32_t j : grp.nodes) {
    const ValueId v = g.nodes[j].output;
    if (grp.recomputes(v)) continue;  // the kernel computing it first stores it if needed
    if (last_reader[v] == -2 || last_reader[v] > my_step) {
      step->outputs.push_back(v);
      k.stores.push_back(expr_of[v]);
    }
  }
  // Nothing to store: every value it computes is recomputed by the kernels reading it
  // (recompute_element_chains) or read by none. No step.
  if (k.stores.empty()) return nullptr;
  if (grp.reduced_dims > 0) {  // row values are stored once per row, in the node's own shape
    const std::vector<uint8_t> row = k.row_values();
    // Every value of such a group has its shape or a row shape (the planner's row values); the
    // kernel stores an element value with the group's shape, so a row-shaped one must lower to
    // a row value (the planner asks lowers_to_row_value). Else the plan would hand a result of
    // the group's shape to a tensor of the row shape: a codegen failure instead (the nodes run
    // eagerly).
    for (size_t o = 0; o < step->outputs.size(); ++o)
      KILN_CHECK(row[k.stores[o]] || meta[step->outputs[o]]->sizes == grp.sizes,
                 "fused kernel: value %{} of shape {} lowers to an element value of the row "
                 "kernel's shape {}",
                 step->outputs[o], shape_str(meta[step->outputs[o]]->sizes), shape_str(grp.sizes));
    for (size_t o = 0; o < step->outputs.size(); ++o)
      step->row_output.push_back(!row[k.stores[o]]                                          ? 0
                                 : meta[step->outputs[o]]->sizes.size() == grp.sizes.size() ? 1
                                                                                            : 2);
  }
  // Nodes lowered one by one repeat work (layer_norm's mean and var both sum the row): merged,
  // the kernel has less to compile and, for a Reduce, a pass fewer over each row.
  k = merge_common_exprs(k);
  // A cheap Reduce lowered after a costly one goes first, so the last pass's costly values are
  // kept for the element pass (row_pass_order.h).
  if (grp.reduced_dims > 0) k = order_row_passes(k);
  CpuLaunchHint hint;  // for the variant rendered now (cpu_target.h)
  hint.elements = 1;
  for (int64_t s : step->sizes.empty() ? grp.sizes : step->sizes) hint.elements *= s;
  hint.columns = grp.inner_dims > 0;
  step->kernel = cpu_target().compile(k, hint);
  return step;
}

}  // namespace kiln::jit::planning

#include "jit/plan/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "jit/cpu/cpu_target.h"
#include "jit/loop/common_exprs.h"
#include "jit/lower/lower_reduce.h"
#include "jit/lower/lowering.h"
#include "jit/passes/passes.h"
#include "jit/plan/blas_step.h"
#include "jit/plan/gathered_step.h"
#include "jit/plan/group_kernel.h"
#include "jit/plan/lone_reductions.h"
#include "jit/plan/plan_group.h"
#include "jit/plan/product_batch.h"
#include "jit/plan/recompute_chains.h"
#include "jit/plan/validating_plan.h"
#include "runtime/config.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"
#include "runtime/logging.h"

namespace kiln::jit {

using planning::Draft;
using planning::Group;
using tracer::Graph;
using tracer::Node;
using tracer::ValueId;

namespace {

// Per value: whether it is read, not a graph output, and every reader is a reduction
// (`reduces(node)`, asked of one-input nodes) or an elementwise node whose own value is such a
// value (of the same shape, where `same_shape`): what only feeds those reductions.
template <class Reduces>
std::vector<uint8_t> only_feeding_reductions(const Graph& g,
                                             const std::vector<const tracer::ValueMeta*>& meta,
                                             bool same_shape, const Reduces& reduces) {
  const size_t nv = meta.size();
  std::vector<uint8_t> feeds(nv, 0), read(nv, 0), readers_ok(nv, 1);
  for (tracer::ValueId v : g.outputs) readers_ok[v] = 0;
  for (size_t jj = g.nodes.size(); jj-- > 0;) {
    const tracer::Node& n = g.nodes[jj];
    feeds[n.output] = read[n.output] && readers_ok[n.output];
    const bool reduction = n.inputs.size() == 1 && reduces(n);
    const bool elementwise =
        (op_def(n.op).flags & kWritesAnyLayout) && n.subgraphs.empty() && feeds[n.output];
    for (tracer::ValueId v : n.inputs) {
      read[v] = 1;
      readers_ok[v] =
          readers_ok[v] &&
          (reduction || (elementwise && (!same_shape || meta[v]->sizes == n.meta.sizes)));
    }
  }
  return feeds;
}

std::atomic<bool> g_warned_codegen{false};
std::atomic<int64_t> g_codegen_failures{0};

}  // namespace

void rearm_codegen_warning() { g_warned_codegen = false; }

int64_t codegen_failures() { return g_codegen_failures.load(); }

std::unique_ptr<JitPlan> make_jit_plan(Graph g, const tracer::RuntimeScalars& runtime) {
  const size_t nv = static_cast<size_t>(g.num_values());
  std::vector<const tracer::ValueMeta*> meta(nv, nullptr);
  for (const auto& in : g.inputs) meta[in.id] = &in.meta;
  for (const Node& n : g.nodes) meta[n.output] = &n.meta;

  std::vector<ScalarSource> promoted(g.nodes.size());
  std::vector<std::vector<EagerPatch>> patches(g.nodes.size());
  for (size_t r = 0; r < runtime.size(); ++r) {
    promoted[runtime[r].node].param[runtime[r].index] = static_cast<int32_t>(r);
    patches[runtime[r].node].push_back({runtime[r].index, static_cast<int32_t>(r)});
  }
  std::vector<int32_t> random_index(g.nodes.size(), -1);
  {
    const std::vector<int32_t> rn = tracer::random_nodes(g);
    for (size_t i = 0; i < rn.size(); ++i) random_index[rn[i]] = static_cast<int32_t>(i);
  }

  // Values only column reductions consume, directly or through elementwise nodes, and no graph
  // output: kept out of a column kernel's epilogue (which would store them for the reduction's
  // kernel to read back), they become that reduction's prologue instead (var's centered squares,
  // jit/passes/column_split.h).
  const std::vector<uint8_t> feeds_column_reductions = only_feeding_reductions(
      g, meta, false,
      [&](const Node& n) { return column_reduction_dims(n, *meta[n.inputs[0]]).reduced > 0; });
  // Values read only by row reductions over their own shape, or by elementwise nodes of their
  // shape whose values are read so: the prologues of row reductions. Such a value, started on
  // its own, may join an earlier row kernel of its shape instead (below: `x.sum(-1) +
  // y.sum(-1)`, a cosine similarity's three sums: one kernel, not three).
  const std::vector<uint8_t> feeds_row_reductions = only_feeding_reductions(
      g, meta, true, [&](const Node& n) { return row_reduction_dims(n, *meta[n.inputs[0]]) > 0; });

  std::vector<uint8_t> is_output(nv, 0);
  for (ValueId v : g.outputs) is_output[v] = 1;
  const std::vector<uint8_t> lone_sum = planning::lone_sums_of_leaves(g, meta);

  // Group.
  std::vector<Group> groups;
  std::vector<Draft> drafts;
  std::vector<int32_t> step_of(nv, -1);  // the draft computing each value (-1: a graph input)
  // Whether value v, read by a row kernel over `sizes` reducing the last r dims, moves along
  // the row as one contiguous run or not at all (a broadcast): the only rows the CPU target
  // renders (a transposed or strided row stays an eager step rather than fail at launch).
  auto row_friendly = [&](ValueId v, const DimVector& sizes, int r) {
    const tracer::ValueMeta& m = *meta[v];
    const int64_t lead = static_cast<int64_t>(sizes.size()) - static_cast<int64_t>(m.sizes.size());
    bool all_one = true, all_full = true;
    for (size_t d = sizes.size() - static_cast<size_t>(r); d < sizes.size(); ++d) {
      const int64_t i = static_cast<int64_t>(d) - lead;
      const int64_t sz = i >= 0 ? m.sizes[i] : 1;
      all_one = all_one && sz == 1;
      all_full = all_full && sz == sizes[d];
    }
    if (all_one) return true;
    if (!all_full) return false;
    if (m.strides.empty()) return true;  // a value computed row-major
    int64_t expected = 1;
    bool expanded = true;  // stride 0 over the whole row: a broadcast in memory (expand)
    for (size_t d = m.sizes.size(); d-- > m.sizes.size() - static_cast<size_t>(r);) {
      if (m.sizes[d] == 1) continue;
      expanded = expanded && m.strides[d] == 0;
      if (m.strides[d] != expected) expected = -1;
      if (expected >= 0) expected *= m.sizes[d];
    }
    // An expanded value (autograd's gradient of a sum or a mean: ones expanded) is read as a
    // broadcast along the row, which the row renderer loads once per row.
    return expected >= 0 || expanded;
  };
  // Whether value v, read by a column kernel over `sizes` reducing the `r` dims before the last
  // `inner`, moves along the columns as one contiguous run or not at all (a broadcast), and
  // along the reduced dims as one run of any stride or not at all: the column layouts the CPU
  // target renders.
  auto col_friendly = [&](ValueId v, const DimVector& sizes, int r, int inner) {
    const tracer::ValueMeta& m = *meta[v];
    const int64_t rank = static_cast<int64_t>(sizes.size());
    const int64_t lead = rank - static_cast<int64_t>(m.sizes.size());
    auto block = [&](int64_t d0, int64_t d1, bool unit) {  // dims [d0, d1) of the index space
      bool all_one = true, all_full = true;
      for (int64_t d = d0; d < d1; ++d) {
        const int64_t sz = d - lead >= 0 ? m.sizes[d - lead] : 1;
        all_one = all_one && sz == 1;
        all_full = all_full && sz == sizes[d];
      }
      if (all_one) return true;
      if (!all_full) return false;
      if (m.strides.empty()) return true;  // a value computed row-major
      int64_t expected = unit ? 1 : -1;    // the stride the next non-1 dim must have
      for (int64_t d = d1; d-- > d0;) {
        const int64_t i = d - lead;
        if (i < 0 || m.sizes[i] == 1) continue;
        if (expected >= 0 && m.strides[i] != expected) return false;
        expected = m.strides[i] * m.sizes[i];
      }
      return true;
    };
    const int64_t r1 = rank - inner;
    return block(r1, rank, true) && block(r1 - r, r1, false);
  };
  // Whether v is row-major (computed so, or dense in that order): eager reduces such a value in
  // the column order, others as gathered rows (ops/cpu/reduce_plan.cpp).
  auto row_major = [&](ValueId v) { return reduces_in_column_order(*meta[v]); };
  // A node of a row kernel's row shape (not its index space) joins it only when it computes
  // a float from that kernel's row values alone: it is then a row value too. (An integer one
  // joins only as an element node, where row values have the index space's shape: a reduction
  // over a dim of size 1. The row renderer stores Int64, Int32 and Bool row values.)
  // Since late 2026-11-30 it may also read a float value computed before the kernel whose
  // sizes are 1 over the reduced dims (where the rows are longer than one element): a row load,
  // read once per row (loop_kernel.h). A gradient `g / norm` with g of shape [N, 1] is one.
  // A mask computed from row values (`norm >= eps`: clamp's gradient) is a row value too, read
  // by row nodes only (a Bool reduction's result, all / any, is only stored).
  std::vector<uint8_t> reduced(nv, 0);  // per value: a reduction's result
  for (const Node& n : g.nodes)
    reduced[n.output] =
        n.inputs.size() == 1 && (row_reduction_dims(n, *meta[n.inputs[0]]) > 0 ||
                                 column_reduction_dims(n, *meta[n.inputs[0]]).reduced > 0);
  // `node_sizes`: the reading node's shape, which its inputs broadcast against. A row load reads
  // v right-aligned to the index space; against a row shape without the reduced dims (a sum
  // without keepdim) v's dims line up one reduced dim count further left, so only a v of one
  // element reads the same either way (JitFuzz seed 26459355: `x.sum(-1) * c` with c [N, 1]
  // read c along the wrong dim).
  auto row_input = [&](const Group& grp, ValueId v, int32_t s, const DimVector& node_sizes) {
    const DType t = meta[v]->dtype;
    if (step_of[v] == s)
      return grp.is_row(v) && (is_floating(t) || (t == DType::Bool && !reduced[v]));
    if (!is_floating(t) || step_of[v] > s || grp.inner_dims != 0 || grp.row_sizes == grp.sizes)
      return false;
    const DimVector& vs = meta[v]->sizes;
    if (vs.size() > grp.sizes.size()) return false;
    if (node_sizes.size() != grp.sizes.size() &&
        std::any_of(vs.begin(), vs.end(), [](int64_t d) { return d != 1; }))
      return false;
    const size_t lead = grp.sizes.size() - vs.size();
    for (size_t d = grp.sizes.size() - static_cast<size_t>(grp.reduced_dims); d < grp.sizes.size();
         ++d)
      if (d >= lead && vs[d - lead] != 1) return false;
    return true;
  };
  // Whether a group computes or loads a 64-bit value: the CPU renders a kernel at the lanes of
  // its widest type (jit/cpu/render.cpp kernel_lanes), so a 64-bit row value joining a 32-bit
  // row kernel would halve the lanes of every element it computes. Such a row value (a Float32
  // logsumexp cast to Float64, cross_entropy's row losses) starts a kernel over the rows instead.
  auto has_64bit = [&](const Group& grp) {
    auto wide = [](DType t) { return itemsize(t) == 8; };
    return std::any_of(grp.nodes.begin(), grp.nodes.end(),
                       [&](int32_t j) { return wide(g.nodes[j].meta.dtype); }) ||
           std::any_of(grp.reads.begin(), grp.reads.end(),
                       [&](ValueId v) { return wide(meta[v]->dtype); });
  };
  // Whether pointwise node n, computed from row values alone, lowers to a row value by the
  // loop IR's rule (LoopKernel::row_values), which the kernels decide each store by: there a
  // non-float constant or param is an element value (integer pow(x, 0) lowers to a lone Int32
  // 1), so a Bool or integer op with a scalar (`logical_not(x.var()) * true` computes in Int32
  // with an Int32 1) is an element value although its inputs are row values. Such a node taken
  // as a row value was stored with the group's shape, not its own: a [1, 2, 2] result handed to
  // a 0-dim tensor (RecordFuzz seed 26037881, docs/tracer.md). Lowered alone on row loads of its
  // inputs, as build_group_kernel lowers it on its group's row values. The answer depends on the
  // node alone: kept per node (the fit test and the row-value marking both ask).
  std::vector<int8_t> row_lowering(g.nodes.size(), -1);  // -1: not asked yet
  auto lowers_to_row_value = [&](const Node& n) {
    const size_t j = static_cast<size_t>(&n - g.nodes.data());
    if (row_lowering[j] >= 0) return row_lowering[j] != 0;
    LoopKernel k;
    SmallVector<int32_t, 4> in;
    SmallVector<const tracer::ValueMeta*, 4> in_meta;
    for (ValueId v : n.inputs) {
      k.inputs.push_back(meta[v]->dtype);
      in.push_back(k.load_row(k.num_inputs() - 1));
      in_meta.push_back(meta[v]);
    }
    ScalarSource src;
    for (int i = 0; i < 2; ++i)
      if (promoted[j].param[i] >= 0) {
        src.param[i] = k.num_params();
        k.params.push_back(DType::Float64);  // the lowering sets its type
      }
    if (random_index[j] >= 0) {  // its Philox words (a drawing node is an element value)
      src.philox = k.num_params();
      for (int w = 0; w < 4; ++w) k.params.push_back(DType::Int32);
    }
    bool row = true;  // a lowering error: build_group_kernel meets it and runs the group eagerly
    try {
      const int32_t r =
          lower_node(k, n, {in_meta.data(), in_meta.size()}, {in.data(), in.size()}, src);
      row = k.row_values()[static_cast<size_t>(r)] != 0;
    } catch (const std::exception&) {
    }
    row_lowering[j] = row ? 1 : 0;
    return row;
  };
  auto row_node_fits = [&](const Group& grp, const Node& n, int32_t s) {
    if (!is_floating(n.meta.dtype) && n.meta.dtype != DType::Bool) return false;
    if (itemsize(n.meta.dtype) == 8 && !has_64bit(grp)) return false;
    for (ValueId v : n.inputs)
      if (!row_input(grp, v, s, n.meta.sizes)) return false;
    return lowers_to_row_value(n);
  };
  // Pointwise node n and column kernel draft s: a node of the index space joins when it reads
  // only column-friendly values, and row values of the keepdim shape (or dropped dims when
  // they lead: [C] against [N, C]) but no index or flag (the epilogue).
  auto fits_column_kernel = [&](const Group& grp, const Node& n, int32_t s) {
    if (n.meta.sizes != grp.sizes) return grp.row_shape(n.meta.sizes) && row_node_fits(grp, n, s);
    const size_t lead = grp.sizes.size() - static_cast<size_t>(grp.reduced_dims + grp.inner_dims);
    for (ValueId v : n.inputs) {
      if (step_of[v] == s) {
        if (!grp.is_row(v)) {
          if (meta[v]->sizes != grp.sizes) return false;
          continue;
        }
        const bool aligned =
            meta[v]->sizes == grp.row_sizes || (lead == 0 && meta[v]->sizes == grp.drop_sizes);
        if (!aligned || !is_floating(meta[v]->dtype)) return false;
      } else if (!col_friendly(v, grp.sizes, grp.reduced_dims, grp.inner_dims)) {
        return false;
      }
    }
    return true;
  };
  // Whether pointwise node n may join draft s's group as far as its row kernel goes: every value
  // it reads from the group is an element value of the index space or a row value (a reduction
  // without keepdim has neither shape: broadcasting it would line it up with the wrong dims).
  auto fits_row_kernel = [&](const Group& grp, const Node& n, int32_t s) {
    if (grp.reduced_dims == 0) return true;
    if (grp.inner_dims > 0) return fits_column_kernel(grp, n, s);
    if (n.meta.sizes != grp.sizes) return grp.row_shape(n.meta.sizes) && row_node_fits(grp, n, s);
    bool element = false;  // else it computes from row values alone: a row value itself
    for (ValueId v : n.inputs) {
      // An index or flag row value (argmax, all / any) is only stored.
      if (step_of[v] == s && grp.is_row(v) && !is_floating(meta[v]->dtype)) return false;
      // A row value broadcasts over the row with keepdim's shape, or with no dims left at all
      // (a full reduction: one row); [N] against [N, D] would line N up with D.
      const bool row_ok =
          grp.is_row(v) && (meta[v]->sizes == grp.row_sizes || grp.drop_sizes.empty());
      if (step_of[v] == s && meta[v]->sizes != grp.sizes && !row_ok) return false;
      if (step_of[v] != s && !row_friendly(v, grp.sizes, grp.reduced_dims)) return false;
      element = element || step_of[v] != s || !grp.is_row(v);
    }
    return element || is_floating(n.meta.dtype);
  };
  // Whether value x of draft s is computed through a transcendental function from one of its
  // group's row values (softmax's `exp(x - max) / sum`). A row kernel's later pass over x
  // computes that function again per element: the row renderer keeps only the last reducing
  // pass's costly values, for the element pass (render_reduce.h row_stash).
  std::vector<int32_t> producer(nv, -1);
  for (size_t j = 0; j < g.nodes.size(); ++j)
    producer[static_cast<size_t>(g.nodes[j].output)] = static_cast<int32_t>(j);
  auto costly_from_row_values = [&](const Group& grp, int32_t s, ValueId x) {
    std::vector<std::pair<ValueId, bool>> todo = {{x, false}};
    std::vector<uint8_t> seen(nv, 0);
    while (!todo.empty()) {
      const auto [v, through] = todo.back();
      todo.pop_back();
      const int32_t j = producer[static_cast<size_t>(v)];
      if (j < 0 || step_of[v] != s || seen[static_cast<size_t>(v)] > through) continue;
      seen[static_cast<size_t>(v)] = through ? 2 : 1;
      const Node& p = g.nodes[static_cast<size_t>(j)];
      if (p.op == OpId::Softmax || p.op == OpId::LogSoftmax) return true;
      const bool c = through || planning::transcendental(p.op);
      for (ValueId u : p.inputs) {
        if (c && grp.is_row(u)) return true;
        todo.push_back({u, c});
      }
    }
    return false;
  };
  // A reduction of the last r dims (inner == 0), or of the r dims before the last `inner` (a
  // column kernel): into the group computing its input (or already loading it) when that group
  // has its input's shape, reduces the same dims or none yet, and loads only row- (column-)
  // friendly values; else into a new group; false: it stays an eager step.
  auto place_reduction = [&](int32_t j, int r, int inner) {
    const Node& n = g.nodes[j];
    const ValueId x = n.inputs[0];
    const DimVector& xs = meta[x]->sizes;
    auto friendly = [&](ValueId v) {
      return inner > 0 ? col_friendly(v, xs, r, inner) : row_friendly(v, xs, r);
    };
    // A graph output may be written back into an input (an in-place update of a leaf); when
    // an input it could be written into has a row that is not one contiguous run (a transposed
    // leaf), eager reduces that memory in an order its layout sets (ops/cpu/reduce_plan.h). As
    // the interpreter does, reduce what holds the value then: an eager step.
    if (std::find(g.outputs.begin(), g.outputs.end(), x) != g.outputs.end())
      for (const tracer::GraphInput& in : g.inputs)
        if (in.meta.sizes == xs && in.meta.dtype == meta[x]->dtype &&
            !(inner > 0 ? row_major(in.id) : row_friendly(in.id, xs, r)))
          return false;
    auto ok = [&](int32_t s) {
      if (s < 0 || drafts[s].group < 0) return false;
      const Group& grp = groups[drafts[s].group];
      if (grp.sizes != xs ||
          (grp.reduced_dims != 0 && (grp.reduced_dims != r || grp.inner_dims != inner)) ||
          step_of[x] > s || grp.draws)
        return false;
      // A column kernel reduces a value it loads in eager's column order only if row-major, and
      // never one computed from its own results (one reducing pass).
      if (inner > 0 && step_of[x] != s && !row_major(x)) return false;
      if (std::find(grp.epilogue.begin(), grp.epilogue.end(), x) != grp.epilogue.end())
        return false;
      for (ValueId v : grp.reads)
        if (!friendly(v)) return false;
      // argmax / argmin take two passes (the extreme, then its first index: a pass that may
      // stop early and keeps nothing), each computing x again: over a value computed through
      // a transcendental from the kernel's row values (`softmax(x).argmax(-1)`: two more exps
      // per element, 1.3x slower than eager's two ops) the kernel stores x and a kernel of
      // its own reduces it.
      if ((n.op == OpId::Argmax || n.op == OpId::Argmin) && inner == 0 && step_of[x] == s &&
          grp.reduced_dims > 0 && costly_from_row_values(grp, s, x))
        return false;
      return true;
    };
    // The group computing x; else the latest group already loading x; else the latest
    // reducing group of x's shape over the same dims after x is computed: a reduction of
    // another input beside it (x.sum(-1) + y.sum(-1)) is one more pass there, or for a column
    // kernel one more Reduce in its one reducing pass, of a row-major x (floats only there: the
    // column renderer declines a kernel storing integer sums beside float loads, render_cols.h
    // column_kernel_ok, which would take the integer sums down with it).
    // When x's own group is pointwise and another group loads x anyway (it is stored, or
    // recomputed: recompute_element_chains), the other two come first: the pointwise group would
    // become one more kernel over the same rows (layer_norm's backward takes the mean of `g * w`
    // and the bias gradient sums `g`: both join the kernels that read them).
    auto loads_x = [&](size_t s, bool reducing) {
      if (!ok(static_cast<int32_t>(s))) return false;
      const Group& grp = groups[drafts[s].group];
      return (!reducing || grp.reduced_dims > 0) &&
             std::find(grp.reads.begin(), grp.reads.end(), x) != grp.reads.end();
    };
    auto floats_only = [&](const Group& grp) {
      return std::all_of(grp.row_vals.begin(), grp.row_vals.end(),
                         [&](ValueId v) { return is_floating(meta[v]->dtype); });
    };
    const bool beside_ok =
        friendly(x) &&
        (inner == 0 || (row_major(x) && is_floating(meta[x]->dtype) && is_floating(n.meta.dtype)));
    auto latest = [&](bool reducing_only) {
      for (size_t s = drafts.size(); s-- > 0 && static_cast<int32_t>(s) > step_of[x];)
        if (loads_x(s, reducing_only)) return static_cast<int32_t>(s);
      for (size_t s = drafts.size(); beside_ok && s-- > 0 && static_cast<int32_t>(s) > step_of[x];)
        if (ok(static_cast<int32_t>(s)) && groups[drafts[s].group].reduced_dims == r &&
            (inner == 0 || floats_only(groups[drafts[s].group])))
          return static_cast<int32_t>(s);
      return -1;
    };
    const bool pointwise_x = step_of[x] >= 0 && drafts[step_of[x]].group >= 0 &&
                             groups[drafts[step_of[x]].group].reduced_dims == 0;
    bool loaded_elsewhere = false;
    for (const Group& grp : groups)
      loaded_elsewhere =
          loaded_elsewhere || std::find(grp.reads.begin(), grp.reads.end(), x) != grp.reads.end();
    int32_t target = pointwise_x && loaded_elsewhere ? latest(true) : -1;
    if (target < 0 && ok(step_of[x])) target = step_of[x];
    if (target < 0) target = latest(false);
    if (target < 0) {
      if (!friendly(x) || (inner > 0 && !row_major(x))) return false;
      groups.push_back(Group{{}, xs, {}, 0, 0, {}, {}, {}, {}, false, {}});
      drafts.push_back({-1, static_cast<int32_t>(groups.size()) - 1});
      target = static_cast<int32_t>(drafts.size()) - 1;
    }
    Group& grp = groups[drafts[target].group];
    if (grp.reduced_dims == 0) {
      grp.reduced_dims = r;
      grp.inner_dims = inner;
      const size_t r1 = xs.size() - static_cast<size_t>(inner), r0 = r1 - static_cast<size_t>(r);
      grp.row_sizes = xs;
      grp.drop_sizes.clear();
      for (size_t d = 0; d < xs.size(); ++d) {
        if (d >= r0 && d < r1)
          grp.row_sizes[d] = 1;
        else
          grp.drop_sizes.push_back(xs[d]);
      }
    }
    grp.nodes.push_back(j);
    if (grp.row_shape(n.meta.sizes)) grp.row_vals.push_back(n.output);
    if (step_of[x] != target && std::find(grp.reads.begin(), grp.reads.end(), x) == grp.reads.end())
      grp.reads.push_back(x);
    step_of[n.output] = target;
    return true;
  };
  // Moving drafts up. A node may join kernel draft t only when every value it reads is computed
  // before t runs; a value a later draft computes from what is ready before t (the targets' count
  // of a cross_entropy's backward, a constant range, a mask of the targets) can be computed
  // before t instead: move_up(t, v) moves the drafts after t that v depends on to just before t,
  // in their order, when none of them depends on t or on a draft after t that stays, and none
  // draws (random nodes keep their order). Any topological order computes the same values; the
  // executor decides buffer reuse and writes into destinations from the final order. After a
  // move, `moved(i)` is the new index of draft i.
  std::vector<int32_t> moved_to;
  auto moved = [&](int32_t i) { return i >= 0 ? moved_to[static_cast<size_t>(i)] : i; };
  auto draft_reads = [&](int32_t d) -> std::span<const ValueId> {
    if (drafts[d].group >= 0) return groups[drafts[d].group].reads;
    const Node& dn = g.nodes[static_cast<size_t>(drafts[d].node)];
    return {dn.inputs.data(), dn.inputs.size()};
  };
  auto move_up = [&](int32_t t, ValueId v) {
    std::vector<uint8_t> in_d(drafts.size(), 0);
    std::vector<int32_t> todo = {step_of[v]};
    while (!todo.empty()) {
      const int32_t d = todo.back();
      todo.pop_back();
      if (d < t || in_d[d]) continue;
      if (d == t) return false;
      const bool draws =
          drafts[d].group >= 0 ? groups[drafts[d].group].draws : random_index[drafts[d].node] >= 0;
      if (draws) return false;
      in_d[d] = 1;
      for (ValueId r : draft_reads(d)) todo.push_back(step_of[r]);
    }
    std::vector<Draft> order;
    moved_to.assign(drafts.size(), -1);
    auto place = [&](size_t d) {
      moved_to[d] = static_cast<int32_t>(order.size());
      order.push_back(drafts[d]);
    };
    for (size_t d = 0; d < drafts.size(); ++d) {
      if (static_cast<int32_t>(d) == t)
        for (size_t m = d + 1; m < drafts.size(); ++m)
          if (in_d[m]) place(m);
      if (!in_d[d]) place(d);
    }
    drafts = std::move(order);
    for (int32_t& st : step_of) st = moved(st);
    return true;
  };
  // The row kernel whose row value view node n only reshapes (see below), or -1.
  auto row_alias_step = [&](const Node& n) -> int32_t {
    if ((n.op != OpId::Unsqueeze && n.op != OpId::Squeeze) || n.inputs.size() != 1 ||
        is_output[n.output])
      return -1;
    const int32_t s = step_of[n.inputs[0]];
    if (s < 0 || drafts[s].group < 0) return -1;
    const Group& grp = groups[drafts[s].group];
    return grp.inner_dims == 0 && grp.is_row(n.inputs[0]) && grp.row_shape(n.meta.sizes) ? s : -1;
  };
  for (size_t jj = 0; jj < g.nodes.size(); ++jj) {
    const auto j = static_cast<int32_t>(jj);
    const Node& n = g.nodes[jj];
    SmallVector<const tracer::ValueMeta*, 4> in_meta;
    for (ValueId v : n.inputs) in_meta.push_back(meta[v]);
    const std::span<const tracer::ValueMeta* const> metas(in_meta.data(), in_meta.size());
    const SmallVector<ValueId, 4>& reads_of_node = n.inputs;
    if (lone_sum[jj]) {  // nothing to fuse: eager's sum is as fast (lone_reductions.h)
      drafts.push_back({j, -1});
      step_of[n.output] = static_cast<int32_t>(drafts.size()) - 1;
      continue;
    }
    if (const int r = n.inputs.size() == 1 ? row_reduction_dims(n, *meta[n.inputs[0]]) : 0;
        r > 0 && place_reduction(j, r, 0))
      continue;
    if (const ColumnDims c =
            n.inputs.size() == 1 ? column_reduction_dims(n, *meta[n.inputs[0]]) : ColumnDims{};
        c.reduced > 0 && place_reduction(j, c.reduced, c.inner))
      continue;
    // An unsqueeze or squeeze of a row value that gives it the row kernel's other row shape
    // (keepdim's, or without the reduced dims) is that row value: it joins the kernel, which
    // computes nothing for it. Autograd's `g.unsqueeze(d)` of a reduction's value (logsumexp's,
    // std's gradient) then stays in the forward's row kernel instead of a view step after it.
    // The two shapes differ by 1s the region key fixes, so this holds in every recording.
    if (const int32_t s = row_alias_step(n); s >= 0) {
      Group& grp = groups[drafts[s].group];
      grp.nodes.push_back(j);
      grp.row_vals.push_back(n.output);
      step_of[n.output] = s;
      continue;
    }
    if (!lowers(n, metas, promoted[jj], cpu_target())) {
      drafts.push_back({j, -1});
      step_of[n.output] = static_cast<int32_t>(drafts.size()) - 1;
      continue;
    }
    // The latest group this node may join: one computing an input of it, or one already
    // reading an input of it whose shape is the group's (not broadcast into it). Either way the
    // node's shape follows, in every recording, from a value of the group's own shape.
    int32_t target = -1;
    auto consider = [&](int32_t s) {
      const Group& grp = groups[drafts[s].group];
      if (grp.sizes == n.meta.sizes || (grp.row_shape(n.meta.sizes) && row_node_fits(grp, n, s)))
        target = std::max(target, s);
    };
    for (ValueId v : reads_of_node) {
      const int32_t s = step_of[v];
      if (s >= 0 && drafts[s].group >= 0) consider(s);
    }
    for (size_t s = drafts.size(); s-- > 0 && static_cast<int32_t>(s) > target;) {
      if (drafts[s].group < 0) continue;
      const std::vector<ValueId>& reads = groups[drafts[s].group].reads;
      for (ValueId v : reads_of_node)
        if (meta[v]->sizes == groups[drafts[s].group].sizes &&
            std::find(reads.begin(), reads.end(), v) != reads.end()) {
          consider(static_cast<int32_t>(s));
          break;
        }
    }
    // Producer groups of the node's shape other than the target: merged into the earliest of
    // them when everything they read is ready before it runs (m.mul_(0.9).add_(g * 0.1): the
    // two products are one kernel). The node ties their shapes together in every recording.
    // A pointwise group also merges into a row kernel of its index space when it reads only
    // values computed before that kernel, each loaded row-friendly, and draws nothing: a
    // cross_entropy's comparison of the class indices with the targets joins the kernel of its
    // logits, whose values it masks (else the mask's kernel would compute the logits again).
    for (ValueId v : reads_of_node) {
      int32_t s = step_of[v];
      if (s < 0 || drafts[s].group < 0 || s >= target) continue;
      Group& early = groups[drafts[s].group];
      if (early.sizes != n.meta.sizes) continue;
      Group& late = groups[drafts[target].group];
      if (late.reduced_dims > 0) continue;
      bool ready = true;
      if (early.reduced_dims > 0) {
        ready = early.inner_dims == 0 && !late.draws;
        for (ValueId r : late.reads) {
          if (ready && step_of[r] >= s && step_of[r] != target && move_up(s, r)) {
            s = moved(s);
            target = moved(target);
          }
          ready = ready && step_of[r] < s && row_friendly(r, early.sizes, early.reduced_dims);
        }
      }
      for (ValueId r : late.reads) ready = ready && step_of[r] <= s;
      if (!ready) continue;
      early.draws = early.draws || late.draws;
      for (int32_t k : late.nodes) {
        early.nodes.push_back(k);
        step_of[g.nodes[k].output] = s;
      }
      for (ValueId r : late.reads)
        if (std::find(early.reads.begin(), early.reads.end(), r) == early.reads.end())
          early.reads.push_back(r);
      late.nodes.clear();
      late.reads.clear();
      target = s;
    }
    if (target >= 0) {
      for (ValueId v : reads_of_node)
        if (step_of[v] > target) {  // an input computed after that kernel runs: move it up?
          if (!move_up(target, v)) {
            target = -1;
            break;
          }
          target = moved(target);
        }
    }
    if (target >= 0 && !fits_row_kernel(groups[drafts[target].group], n, target)) target = -1;
    if (target >= 0 && feeds_column_reductions[n.output]) {  // not an epilogue (above)
      const Group& grp = groups[drafts[target].group];
      bool epilogue = false;
      if (grp.inner_dims > 0 && n.meta.sizes == grp.sizes)
        for (ValueId v : reads_of_node)
          epilogue = epilogue ||
                     (step_of[v] == target &&
                      (grp.is_row(v) || std::find(grp.epilogue.begin(), grp.epilogue.end(), v) !=
                                            grp.epilogue.end()));
      if (epilogue) target = -1;
    }
    if (target >= 0 && random_index[jj] >= 0 && groups[drafts[target].group].reduced_dims > 0)
      target = -1;
    // A node that would start a kernel of its own and only feeds row reductions of its shape
    // (a prologue: `(y * y).sum(-1)` beside `(x * x).sum(-1)`) joins the latest row kernel of
    // that shape that runs after its inputs are computed: one more pass there, no kernel of its
    // own, no store (what it feeds joins the same kernel).
    if (target < 0 && feeds_row_reductions[n.output] && random_index[jj] < 0)
      for (size_t s = drafts.size(); target < 0 && s-- > 0;) {
        if (drafts[s].group < 0) continue;
        const Group& grp = groups[drafts[s].group];
        if (grp.reduced_dims == 0 || grp.inner_dims != 0 || grp.draws || grp.sizes != n.meta.sizes)
          continue;
        bool ready = true;
        for (ValueId v : reads_of_node)
          ready = ready && step_of[v] <= static_cast<int32_t>(s) &&
                  (step_of[v] == static_cast<int32_t>(s) ||
                   row_friendly(v, grp.sizes, grp.reduced_dims));
        if (ready && fits_row_kernel(grp, n, static_cast<int32_t>(s)))
          target = static_cast<int32_t>(s);
        break;  // only the latest row kernel of that shape: no reordering past it
      }
    if (target < 0) {
      groups.push_back(Group{{}, n.meta.sizes, {}, 0, 0, {}, {}, {}, {}, false, {}});
      drafts.push_back({-1, static_cast<int32_t>(groups.size()) - 1});
      target = static_cast<int32_t>(drafts.size()) - 1;
    }
    Group& grp = groups[drafts[target].group];
    grp.nodes.push_back(j);
    grp.draws = grp.draws || random_index[jj] >= 0;
    if (grp.row_shape(n.meta.sizes)) {  // a row value? (by the IR's rule)
      bool row = true;
      for (ValueId v : reads_of_node) row = row && row_input(grp, v, target, n.meta.sizes);
      if (row && lowers_to_row_value(n)) grp.row_vals.push_back(n.output);
    }
    if (grp.inner_dims > 0 && !grp.is_row(n.output))  // computed from the group's results?
      for (ValueId v : reads_of_node)
        if (step_of[v] == target &&
            (grp.is_row(v) ||
             std::find(grp.epilogue.begin(), grp.epilogue.end(), v) != grp.epilogue.end())) {
          grp.epilogue.push_back(n.output);
          break;
        }
    for (ValueId v : reads_of_node)
      if (step_of[v] != target &&
          std::find(grp.reads.begin(), grp.reads.end(), v) == grp.reads.end())
        grp.reads.push_back(v);
    step_of[n.output] = target;
  }
  // A pointwise kernel reading a matmul's product moves up to run right after it, where it
  // becomes the BLAS step's epilogue (per row block, while the block is in cache), when
  // everything it reads is computed by then: an optimizer's `w - lr * dW` recorded after the
  // rest of the backward (mlp_train's SGD step of W2). The steps in between neither read its
  // results (they come before them in the graph) nor see a change: the executor decides writes
  // into destinations and buffer reuse from the final order.
  for (size_t s = 0; s + 2 < drafts.size(); ++s) {
    if (drafts[s].group >= 0 || !is_cpu_matmul(g, g.nodes[drafts[s].node])) continue;
    const ValueId product = g.nodes[drafts[s].node].output;
    auto reads_product = [&](size_t t) {
      if (drafts[t].group < 0) return false;
      const Group& grp = groups[drafts[t].group];
      return !grp.nodes.empty() &&
             std::find(grp.reads.begin(), grp.reads.end(), product) != grp.reads.end();
    };
    size_t t = s + 1;
    while (t < drafts.size() && !reads_product(t)) ++t;
    if (t == s + 1 || t == drafts.size()) continue;  // already next, or no reader
    const Group& grp = groups[drafts[t].group];
    const bool ready = std::all_of(grp.reads.begin(), grp.reads.end(), [&](ValueId v) {
      return step_of[v] <= static_cast<int32_t>(s);
    });
    if (grp.reduced_dims > 0 || grp.draws || !ready) continue;
    std::rotate(drafts.begin() + static_cast<std::ptrdiff_t>(s + 1),
                drafts.begin() + static_cast<std::ptrdiff_t>(t),
                drafts.begin() + static_cast<std::ptrdiff_t>(t + 1));
    const auto s1 = static_cast<int32_t>(s + 1), t1 = static_cast<int32_t>(t);
    for (int32_t& d : step_of) d = d == t1 ? s1 : (d >= s1 && d < t1 ? d + 1 : d);
  }
  // A region without kernels is still planned when it has a matmul: its BLAS step splits the
  // product over the threads (jit/plan/blas_step.h).
  const bool has_matmul = std::any_of(g.nodes.begin(), g.nodes.end(),
                                      [&](const Node& n) { return is_cpu_matmul(g, n); });
  // Bodies of higher-order nodes are planned as regions of their own (body_plans.h): a region of
  // layer calls has no kernel itself, but its bodies do.
  bool any_body = false;
  BodyPlans body_plans = plan_bodies(g, planner(), &any_body);
  if (groups.empty() && !has_matmul && !any_body) return nullptr;

  std::vector<int32_t> producer_of(nv, -1);
  for (size_t j = 0; j < g.nodes.size(); ++j)
    producer_of[g.nodes[j].output] = static_cast<int32_t>(j);
  planning::recompute_element_chains(
      g, meta, producer_of, groups, drafts, step_of, [&](const Group& grp, ValueId v) {
        if (grp.reduced_dims == 0) return true;
        return grp.inner_dims > 0 ? col_friendly(v, grp.sizes, grp.reduced_dims, grp.inner_dims)
                                  : row_friendly(v, grp.sizes, grp.reduced_dims);
      });
  // The last draft reading each value (-2: a graph output).
  std::vector<int32_t> last_reader(nv, -1);
  for (size_t jj = 0; jj < g.nodes.size(); ++jj)
    for (ValueId v : g.nodes[jj].inputs) {
      const int32_t reader = step_of[g.nodes[jj].output];
      if (reader >= 0 && drafts[reader].group >= 0 && groups[drafts[reader].group].recomputes(v))
        continue;
      if (reader != step_of[v] || step_of[v] < 0) last_reader[v] = std::max(last_reader[v], reader);
    }
  // A kernel recomputing a chain loads its leaves: what computes them stores them for it (a row
  // value of the chain's first kernel, above all).
  for (size_t s = 0; s < drafts.size(); ++s) {
    if (drafts[s].group < 0) continue;
    const Group& grp = groups[drafts[s].group];
    for (ValueId r : grp.recomputed)
      for (ValueId u : g.nodes[static_cast<size_t>(producer_of[r])].inputs)
        if (!grp.recomputes(u) && step_of[u] >= 0)
          last_reader[u] = std::max(last_reader[u], static_cast<int32_t>(s));
  }
  for (ValueId v : g.outputs) last_reader[v] = -2;

  std::vector<Step> steps;
  for (size_t s = 0; s < drafts.size(); ++s) {
    const Draft& d = drafts[s];
    if (d.group < 0) {
      Step st;
      st.node = d.node;
      steps.push_back(std::move(st));
      continue;
    }
    const Group& grp = groups[d.group];
    if (grp.nodes.empty()) continue;  // merged into an earlier group
    // A copy fused with nothing gains nothing from a kernel, and eager copy_ is the faster
    // copy (its memcpy path: kiln-perf's copy ran 3-7% slower as a kernel): an eager step.
    if (grp.nodes.size() == 1 && g.nodes[grp.nodes[0]].op == OpId::Copy) {
      Step st;
      st.node = grp.nodes[0];
      steps.push_back(std::move(st));
      continue;
    }
    try {
      Step st;
      st.kernel = planning::build_group_kernel(g, grp, meta, last_reader, runtime, random_index,
                                               static_cast<int32_t>(s));
      if (st.kernel) steps.push_back(std::move(st));
    } catch (const std::exception& e) {  // codegen failed: these nodes stay eager
      ++g_codegen_failures;
      if (!g_warned_codegen.exchange(true))
        KILN_WARN(Jit, "compiling a fused kernel of {} ops failed; they run eagerly: {}",
                  grp.nodes.size(), e.what());
      for (int32_t j : grp.nodes) {
        Step st;
        st.node = j;
        steps.push_back(std::move(st));
      }
    }
  }

  mark_blas_steps(g, steps);
  std::vector<ProductBatch> batches = find_product_batches(g, steps);

  // Release each value after the last step reading it (steps may have multiplied above).
  std::vector<int32_t> last(nv, -1);
  for (size_t s = 0; s < steps.size(); ++s) {
    if (steps[s].kernel) {
      for (ValueId v : steps[s].kernel->inputs) last[v] = static_cast<int32_t>(s);
    } else {
      for (ValueId v : g.nodes[steps[s].node].inputs) last[v] = static_cast<int32_t>(s);
    }
  }
  for (ValueId v : g.outputs) last[v] = -2;
  for (size_t v = 0; v < nv; ++v)
    if (last[v] >= 0) steps[last[v]].release.push_back(static_cast<ValueId>(v));
  mark_gathered_steps(g, steps);

  auto plan = std::make_unique<JitPlan>(std::move(g), std::move(steps), std::move(patches),
                                        std::move(random_index));
  if (plan->num_kernels() == 0 && !has_matmul && !any_body) return nullptr;
  plan->set_body_plans(std::move(body_plans));
  plan->set_product_batches(std::move(batches));
  return plan;
}

int Planner::threshold(const Graph&) const { return cpu_target().threshold(); }

std::unique_ptr<tracer::RegionPlan> Planner::plan(const Graph& g,
                                                  const tracer::RuntimeScalars& runtime) {
  std::unique_ptr<JitPlan> p;
  if (config().jit_passes) {  // graph passes on a copy (jit/passes/); RunArgs mapped on each run
    passes::PassOptions opts;
    opts.target = &cpu_target();
    passes::PassResult r = passes::run_passes(g, runtime, opts);
    p = make_jit_plan(std::move(r.graph), r.runtime);
    if (p) p->set_arg_map(std::move(r.args));
  } else {
    p = make_jit_plan(g, runtime);
  }
  if (!p) return nullptr;
  if (config().jit_validate) return validating_plan(std::move(p));
  return p;
}

Planner& planner() {
  static Planner p;
  return p;
}

}  // namespace kiln::jit

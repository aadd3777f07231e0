#include "jit/plan/gathered_tail.h"

#include <algorithm>

#include "jit/plan/plan_frame.h"
#include "runtime/dispatcher.h"

namespace kiln::jit {

namespace {

// The dim of a launch over which operand o reads the gathered source x (g = x's view `src`
// copied row-major) as g's leading dim, with o's strides over a block buffer of g's rows in
// `buffer_strides` (row-major over g's sizes; 0 where o broadcasts): o reads x at x's own
// addresses, each launch dim of o's moving ones one of g's dims (same size and stride). -1
// where o reads x otherwise (it then reads x itself).
int source_dim(const LaunchArgs& la, size_t o, const TensorImpl& src, DimVector& buffer_strides) {
  const DimVector& gs = src.sizes();
  const int64_t es = static_cast<int64_t>(itemsize(src.dtype()));
  if (la.ptrs[o] != static_cast<const char*>(src.data())) return -1;
  DimVector contiguous(gs.size(), es);
  for (size_t d = gs.size() - 1; d-- > 0;) contiguous[d] = contiguous[d + 1] * gs[d + 1];
  buffer_strides.assign(la.sizes.size(), 0);
  uint64_t used = 0;  // g's dims matched
  int lead = -1;
  for (size_t e = 0; e < la.sizes.size(); ++e) {
    const int64_t st = la.strides[o][e];
    if (la.sizes[e] == 1 || st == 0) continue;
    int match = -1;
    for (size_t d = 0; d < gs.size(); ++d)
      if (gs[d] > 1 && gs[d] == la.sizes[e] && src.strides()[d] * es == st) {
        if (match >= 0) return -1;  // two of g's dims alike: ambiguous
        match = static_cast<int>(d);
      }
    if (match < 0 || (used >> match & 1u) != 0) return -1;
    used |= uint64_t{1} << match;
    buffer_strides[e] = contiguous[static_cast<size_t>(match)];
    if (match == 0) lead = static_cast<int>(e);
  }
  for (size_t d = 0; d < gs.size(); ++d)
    if (gs[d] > 1 && (used >> d & 1u) == 0) return -1;
  return lead;
}

// One value per index of g's leading dim made by a blocked run (a row value, or a tail step's
// output of that shape): element c at base + c * stride.
struct PerIndex {
  ValueId v;
  const char* base;
  int64_t stride;
};

// The launch dim over which operand o reads per-index value p at p's own index, or -1.
int per_index_dim(const LaunchArgs& la, size_t o, const PerIndex& p, int64_t leading) {
  if (la.ptrs[o] != p.base) return -1;
  int dim = -1;
  for (size_t e = 0; e < la.sizes.size(); ++e) {
    if (la.sizes[e] == 1 || la.strides[o][e] == 0) continue;
    if (dim >= 0 || la.sizes[e] != leading || la.strides[o][e] != p.stride) return -1;
    dim = static_cast<int>(e);
  }
  return dim;
}

// An eager step of a view op: metadata only, it reads no element (the keepdim unsqueezes of
// row values between a row kernel and the kernels reading them).
bool view_step(const tracer::Graph& g, const Step& st) {
  return !st.kernel && !st.blas && st.node >= 0 &&
         (op_def(g.nodes[st.node].op).flags & kIsView) != 0;
}

constexpr int kMaxTailKernels = 4;  // pointwise kernels after a row kernel tried in its blocks

}  // namespace

// A kernel step of pointwise work (no reduction, no random draws).
bool pointwise_kernel(const Step& st) {
  if (!st.kernel) return false;
  const KernelStep& k = *st.kernel;
  return k.reduced_dims == 0 && k.inner_dims == 0 && k.sizes.empty() && !k.draws();
}

int gathered_tail_length(const tracer::Graph& g, const std::vector<Step>& steps, size_t s) {
  int n = 0, kernels = 0;  // steps, ending with a kernel
  for (size_t t = s + 2; t < steps.size() && kernels < kMaxTailKernels; ++t) {
    if (pointwise_kernel(steps[t]) && !steps[t].gathered) {
      ++kernels;
      n = static_cast<int>(t - s - 1);
    } else if (!view_step(g, steps[t])) {
      break;
    }
  }
  return n;
}

void JitPlan::prepare_gathered_tail(Frame& f, size_t s, const KernelLaunch& klr,
                                    const TensorImpl& src, std::vector<GatheredTail>& tail) {
  const KernelStep& rk = *steps_[s + 1].kernel;
  const int64_t leading = src.sizes()[0];
  // The row values of one row per leading index (batch norm's mean and variance); the tail's
  // reads of them are at the block's own indices, which the block has made.
  std::vector<ValueId> made(rk.outputs.begin(), rk.outputs.end());
  SmallVector<PerIndex, 8> per_index;
  const size_t kept = klr.la.sizes.size() - static_cast<size_t>(rk.reduced_dims);
  bool one_row_per_index = true;
  for (size_t d = 1; d < kept; ++d) one_row_per_index = one_row_per_index && klr.la.sizes[d] == 1;
  for (size_t o = 0; o < rk.outputs.size(); ++o) {
    f.values[rk.outputs[o]] = klr.outs[o];  // for the tail's preparation (sizes, strides)
    if (one_row_per_index && !rk.row_output.empty() && rk.row_output[o] != 0)
      per_index.push_back({rk.outputs[o], klr.la.ptrs[o], klr.la.strides[o][0]});
  }
  auto per_index_of = [&](ValueId v) {
    return std::find_if(per_index.begin(), per_index.end(),
                        [&](const PerIndex& q) { return q.v == v; });
  };
  std::vector<ValueId> reads(rk.inputs.begin(), rk.inputs.end());  // read across blocks
  reads.push_back(graph_.nodes[steps_[s].node].inputs[0]);         // the leaf's view
  for (int n = 0; n < steps_[s].gathered_tail; ++n) {
    const size_t t = s + 2 + static_cast<size_t>(n);
    if (!steps_[t].kernel) {  // a view: of a row value, made now (it reads no element)
      const tracer::Node& node = graph_.nodes[steps_[t].node];
      run_eager_node(f, steps_[t].node, static_cast<int32_t>(t));
      if (!contains(made, node.inputs[0])) continue;
      made.push_back(node.output);
      if (const auto p = per_index_of(node.inputs[0]); p != per_index.end())
        per_index.push_back({node.output, p->base, p->stride});
      continue;
    }
    KernelStep& k = *steps_[t].kernel;
    if (k.broken.load(std::memory_order_relaxed) || f.any_poisoned(k.inputs)) break;
    GatheredTail& gt = tail.emplace_back();
    gt.step = t;
    gt.k = &k;
    int dim = -1;
    bool fits = prepare_kernel(f, k, t, gt.kl, false);
    const LaunchArgs& la = gt.kl.la;
    for (size_t i = 0; fits && i < k.inputs.size(); ++i) {
      const ValueId v = k.inputs[i];
      const size_t o = k.outputs.size() + i;
      int d = -1;
      if (const auto p = per_index_of(v); p != per_index.end()) {
        d = per_index_dim(la, o, *p, leading);
        fits = d >= 0;
      } else if (contains(made, v)) {
        fits = false;  // a whole value of the blocks: not made yet where another block reads it
      } else {
        reads.push_back(v);
        DimVector bs;
        d = source_dim(la, o, src, bs);
        if (d >= 0) {
          gt.from_buffer.push_back(o);
          if (gt.buffer_strides.empty()) gt.buffer_strides = bs;
          fits = fits && gt.buffer_strides == bs;
        }
      }
      if (d >= 0) {
        fits = fits && (dim < 0 || dim == d);
        dim = d;
      }
    }
    // A step joins where it reads the leaf from the buffer or makes per-index values only (a
    // step of whole outputs reading nothing from the buffer gains nothing per block).
    bool per_index_outputs = true;
    for (size_t e = 0; fits && e < la.sizes.size(); ++e)
      per_index_outputs = per_index_outputs && (static_cast<int>(e) == dim || la.sizes[e] == 1);
    fits = fits && dim >= 0 && (!gt.from_buffer.empty() || per_index_outputs);
    if (!fits) {
      tail.pop_back();
      break;
    }
    gt.dim = static_cast<size_t>(dim);
    gt.kl.la.whole_elements = 1;  // each block's launch is a part of this one
    for (int64_t n : la.sizes) gt.kl.la.whole_elements *= n;
    for (size_t o = 0; o < k.outputs.size(); ++o) {
      f.values[k.outputs[o]] = gt.kl.outs[o];
      made.push_back(k.outputs[o]);
      if (per_index_outputs) per_index.push_back({k.outputs[o], la.ptrs[o], la.strides[o][dim]});
    }
  }
  // Blocks write while others read: nothing the blocks write may be memory that any of them
  // reads other than as its own per-index values (the leaf, the other inputs).
  bool apart = true;
  for (const GatheredTail& gt : tail)
    for (const Tensor& o : gt.kl.outs)
      for (ValueId v : reads) apart = apart && !shares_memory(o, f.values[v]);
  for (const Tensor& o : klr.outs)
    for (ValueId v : reads) apart = apart && !shares_memory(o, f.values[v]);
  // The kernels' values are set again when the blocks have run (the views stay: they alias the
  // same buffers; the steps after the tail, or all of them if it is dropped, run again).
  for (ValueId v : rk.outputs) f.values[v] = Tensor();
  for (const GatheredTail& gt : tail)
    for (ValueId v : gt.k->outputs) f.values[v] = Tensor();
  if (!apart) tail.clear();
}

}  // namespace kiln::jit

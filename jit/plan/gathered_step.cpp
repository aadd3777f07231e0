#include "jit/plan/gathered_step.h"

#include <algorithm>
#include <exception>
#include <functional>
#include <span>

#include "jit/plan/plan_frame.h"
#include "ops/cpu/reduce_plan.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/parallel.h"

namespace kiln::jit {

namespace {

bool contains(const std::vector<ValueId>& vs, ValueId v) {
  return std::find(vs.begin(), vs.end(), v) != vs.end();
}

// A kernel step of pointwise work (no reduction, no random draws).
bool pointwise_kernel(const Step& st) {
  if (!st.kernel) return false;
  const KernelStep& k = *st.kernel;
  return k.reduced_dims == 0 && k.inner_dims == 0 && k.sizes.empty() && !k.draws();
}

// The value a blockable producer step makes, or -1.
ValueId gathered_value(const tracer::Graph& g, const Step& st) {
  if (st.kernel)
    return pointwise_kernel(st) && st.kernel->outputs.size() == 1 ? st.kernel->outputs[0] : -1;
  if (st.node < 0 || st.blas) return -1;
  const tracer::Node& n = g.nodes[st.node];
  return n.op == OpId::Copy && n.inputs.size() == 1 && n.meta.device.is_cpu() ? n.output : -1;
}

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
  if (st.kernel || st.blas || st.node < 0) return false;
  switch (g.nodes[st.node].op) {
    case OpId::View:
    case OpId::Expand:
    case OpId::Permute:
    case OpId::Slice:
    case OpId::Select:
    case OpId::Unsqueeze:
    case OpId::Squeeze:
      return true;
    default:
      return false;
  }
}

constexpr int kMaxTailKernels = 4;  // pointwise kernels after a row kernel tried in its blocks

}  // namespace

void mark_gathered_steps(const tracer::Graph& g, std::vector<Step>& steps) {
  for (size_t s = 0; s + 1 < steps.size(); ++s) {
    const ValueId v = gathered_value(g, steps[s]);
    const KernelStep* rows = steps[s + 1].kernel.get();
    steps[s].gathered = v >= 0 && rows && rows->reduced_dims > 0 && rows->inner_dims == 0 &&
                        !rows->draws() && contains(rows->inputs, v) &&
                        !contains(rows->outputs, v) && contains(steps[s + 1].release, v);
  }
  // A leaf's blocks may also run the pointwise steps after the row kernel (batch norm's output,
  // reading the same x): each block's rows are in its buffer then (JitPlan::run_gathered).
  for (size_t s = 0; s + 1 < steps.size(); ++s) {
    if (!steps[s].gathered || steps[s].kernel) continue;
    int n = 0, kernels = 0;  // steps, ending with a kernel
    for (size_t t = s + 2; t < steps.size() && kernels < kMaxTailKernels; ++t) {
      if (pointwise_kernel(steps[t]) && !steps[t].gathered) {
        ++kernels;
        n = static_cast<int>(t - s - 1);
      } else if (!view_step(g, steps[t])) {
        break;
      }
    }
    steps[s].gathered_tail = n;
  }
}

struct JitPlan::GatheredTail {
  size_t step = 0;
  KernelStep* k = nullptr;
  KernelLaunch kl;
  size_t dim = 0;                      // the launch dim that is g's leading dim
  SmallVector<size_t, 2> from_buffer;  // operands reading the gathered leaf: the block's buffer
  DimVector buffer_strides;            // their strides there
};

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
  std::vector<ValueId> reads(rk.inputs.begin(), rk.inputs.end());  // read across blocks
  reads.push_back(graph_.nodes[steps_[s].node].inputs[0]);         // the leaf's view
  for (int n = 0; n < steps_[s].gathered_tail; ++n) {
    const size_t t = s + 2 + static_cast<size_t>(n);
    if (!steps_[t].kernel) {  // a view: of a row value, made now (it reads no element)
      const tracer::Node& node = graph_.nodes[steps_[t].node];
      run_eager_node(f, steps_[t].node, static_cast<int32_t>(t));
      if (!contains(made, node.inputs[0])) continue;
      made.push_back(node.output);
      const auto p = std::find_if(per_index.begin(), per_index.end(),
                                  [&](const PerIndex& q) { return q.v == node.inputs[0]; });
      if (p != per_index.end()) per_index.push_back({node.output, p->base, p->stride});
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
      const auto p = std::find_if(per_index.begin(), per_index.end(),
                                  [&](const PerIndex& q) { return q.v == v; });
      if (p != per_index.end()) {
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

size_t JitPlan::run_gathered(Frame& f, size_t s) {
  Step& ps = steps_[s];
  KernelStep& rk = *steps_[s + 1].kernel;
  KernelStep* pk = ps.kernel.get();
  const ValueId gv = pk ? pk->outputs[0] : graph_.nodes[ps.node].output;
  const std::span<const ValueId> reads =
      pk ? std::span<const ValueId>(pk->inputs)
         : std::span<const ValueId>(graph_.nodes[ps.node].inputs);
  KernelLaunch klp, klr;
  auto whole = [&] {  // the two steps as they are
    klp.clear();
    klr.clear();
    f.values[gv] = Tensor();
    if (pk)
      run_kernel(f, *pk, s);
    else
      run_eager_node(f, ps.node, static_cast<int32_t>(s));
    run_kernel(f, rk, s + 1);
    return size_t{1};
  };
  if (f.any_poisoned(reads) || rk.broken.load(std::memory_order_relaxed) ||
      (pk && pk->broken.load(std::memory_order_relaxed)))
    return whole();

  // g's geometry, and a value for it that the row kernel's launch is built from: a buffer that
  // is never written (the blocks are gathered elsewhere; an untouched allocation costs no
  // memory traffic).
  Tensor src;  // the eager copy's source
  if (pk) {
    if (!prepare_kernel(f, *pk, s, klp, false)) return whole();
    if (klp.outs.size() != 1) return whole();
    f.values[gv] = klp.outs[0];
  } else {
    src = f.values[reads[0]];
    if (!src.defined() || !src.impl()->device().is_cpu()) return whole();
    f.values[gv] = empty_tensor(src.impl()->sizes(), src.impl()->dtype(), Device::cpu());
  }
  const TensorImpl* g = f.values[gv].impl();
  const DimVector gsizes = g->sizes();
  const int64_t esize = itemsize(g->dtype());
  if (static_cast<int>(gsizes.size()) <= rk.reduced_dims || gsizes[0] < 2 || !g->is_contiguous())
    return whole();
  // Blocks of g's leading dim as eager reductions block their rows (ops/cpu/reduce_plan.h).
  const RowBlocks rb = plan_row_blocks(gsizes[0], g->numel() / gsizes[0] * esize);
  if (rb.blocks == 0) return whole();
  const int64_t per_block = rb.per_block, blocks = rb.blocks;

  if (!prepare_kernel(f, rk, s + 1, klr, false)) return whole();
  bool ok = klr.la.sizes == gsizes && (!pk || klp.la.sizes == gsizes);
  try {
    ok = ok && rk.kernel->can_launch(klr.la) && (!pk || pk->kernel->can_launch(klp.la));
  } catch (...) {
    ok = false;
  }
  // A blocked launch writes its row values while later blocks still read: nothing it writes may
  // be memory the gather or the row kernel reads (g's own buffer is never read).
  for (const Tensor& o : klr.outs) {
    for (ValueId v : reads) ok = ok && !shares_memory(o, f.values[v]);
    for (ValueId v : rk.inputs) ok = ok && (v == gv || !shares_memory(o, f.values[v]));
  }
  if (!ok) return whole();
  // The row kernel's operands that are g: outputs come first in the launch's operands.
  SmallVector<size_t, 4> g_operands;
  for (size_t i = 0; i < rk.inputs.size(); ++i)
    if (rk.inputs[i] == gv) g_operands.push_back(rk.outputs.size() + i);

  // A leaf's rows as eager reductions gather them (runs of the contiguous reduced dims copied
  // whole: batch norm's H * W), else through eager's copy op.
  const std::function<void(int64_t, int64_t, void*)> gather_rows =
      pk ? nullptr : rows_gatherer(*src.impl(), rk.reduced_dims);
  // gather_rows counts rows over all the kept dims: rows_per_index of them per leading index.
  int64_t rows_per_index = 1;
  for (size_t d = 1; d + static_cast<size_t>(rk.reduced_dims) < gsizes.size(); ++d)
    rows_per_index *= gsizes[d];
  // The pointwise steps after the row kernel that run per block too (a leaf's only: batch norm's
  // output, which reads x again, reads the block from the buffer).
  std::vector<GatheredTail> tail;
  if (!pk && ps.gathered_tail > 0) prepare_gathered_tail(f, s, klr, *src.impl(), tail);
  std::vector<std::exception_ptr> failed(static_cast<size_t>(blocks));
  const DType dtype = g->dtype();
  parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    DimVector block_sizes = gsizes;
    block_sizes[0] = per_block;
    const Tensor buffer = empty_tensor(block_sizes, dtype, Device::cpu());
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t r0 = b * per_block, r1 = std::min(gsizes[0], r0 + per_block);
      try {
        block_sizes[0] = r1 - r0;
        if (pk) {  // the gathering kernel over rows [r0, r1), its output the buffer
          LaunchArgs la = klp.la;
          la.sizes[0] = r1 - r0;
          for (size_t o = 0; o < la.ptrs.size(); ++o) la.ptrs[o] += r0 * la.strides[o][0];
          la.ptrs[0] = static_cast<char*>(buffer.impl()->data());
          pk->kernel->launch(la);
        } else if (gather_rows) {  // eager reductions' gather of the source's rows [r0, r1)
          gather_rows(r0 * rows_per_index, r1 * rows_per_index, buffer.impl()->data());
        } else {  // eager's copy of the source's rows [r0, r1)
          const TensorImpl* x = src.impl();
          const Tensor from(make_ref<TensorImpl>(block_sizes, x->strides(),
                                                 x->offset() + r0 * x->strides()[0], dtype,
                                                 Device::cpu(), x->storage_ref()));
          const Tensor to(make_ref<TensorImpl>(block_sizes, dtype, Device::cpu(),
                                               buffer.impl()->storage_ref()));
          const Attrs none{};
          op_def(OpId::Copy).eager(OpCall{OpId::Copy, std::span<const Tensor>(&from, 1), none}, to);
        }
        LaunchArgs la = klr.la;  // the row kernel over the same rows, g read from the buffer
        la.sizes[0] = r1 - r0;
        for (size_t o = 0; o < la.ptrs.size(); ++o) la.ptrs[o] += r0 * la.strides[o][0];
        for (size_t o : g_operands) la.ptrs[o] = static_cast<char*>(buffer.impl()->data());
        rk.kernel->launch(la);
        for (GatheredTail& gt : tail) {  // the same indices of the tail's launches
          LaunchArgs lt = gt.kl.la;
          int64_t whole = 1;
          for (int64_t n : lt.sizes) whole *= n;
          lt.whole_elements = whole;
          lt.sizes[gt.dim] = r1 - r0;
          for (size_t o = 0; o < lt.ptrs.size(); ++o) lt.ptrs[o] += r0 * lt.strides[o][gt.dim];
          for (size_t o : gt.from_buffer) {
            lt.ptrs[o] = static_cast<char*>(buffer.impl()->data());
            lt.strides[o] = gt.buffer_strides;
          }
          gt.k->kernel->launch(lt);
        }
      } catch (...) {
        failed[static_cast<size_t>(b)] = std::current_exception();
      }
    }
  });
  const auto bad = std::find_if(failed.begin(), failed.end(), [](auto& e) { return e != nullptr; });
  if (bad == failed.end()) {
    klp.clear();
    finish_kernel(f, rk, klr, Launched::Yes);
    for (GatheredTail& gt : tail) finish_kernel(f, *gt.k, gt.kl, Launched::Yes);
    return tail.empty() ? 1 : tail.back().step - s;
  }
  tail.clear();  // its steps run as steps of their own
  // A block failed (asmjit could not make code for a block's layout, or memory ran out): the
  // two steps run whole, which handle their own failures (a broken kernel's nodes run eagerly).
  try {
    std::rethrow_exception(*bad);
  } catch (const Error& e) {
    KILN_DEBUG(Jit, "a blocked gather and row reduction failed; running them whole: {}", e.what());
  } catch (...) {
  }
  return whole();
}

}  // namespace kiln::jit

#include "jit/plan/gathered_step.h"

#include <algorithm>
#include <exception>
#include <functional>
#include <span>

#include "jit/plan/gathered_tail.h"
#include "jit/plan/plan_frame.h"
#include "ops/cpu/reduce_plan.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/parallel.h"

namespace kiln::jit {

namespace {

// The value a blockable producer step makes, or -1.
ValueId gathered_value(const tracer::Graph& g, const Step& st) {
  if (st.kernel)
    return pointwise_kernel(st) && st.kernel->outputs.size() == 1 ? st.kernel->outputs[0] : -1;
  if (st.node < 0 || st.blas) return -1;
  const tracer::Node& n = g.nodes[st.node];
  return n.op == OpId::Copy && n.inputs.size() == 1 && n.meta.device.is_cpu() ? n.output : -1;
}

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
  for (size_t s = 0; s + 1 < steps.size(); ++s)
    if (steps[s].gathered && !steps[s].kernel)
      steps[s].gathered_tail = gathered_tail_length(g, steps, s);
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
          LaunchArgs lt = gt.kl.la;      // whole_elements: the whole launch's (prepared)
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
    if (!tail.empty()) detail::gathered_tail_runs.fetch_add(1, std::memory_order_relaxed);
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

#include "jit/plan/blas_step.h"

#include <algorithm>
#include <exception>
#include <mutex>

#include "jit/plan/plan_frame.h"
#include "ops/cpu/blas_gemm.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/parallel.h"

namespace kiln::jit {

bool is_cpu_matmul(const tracer::Graph& g, const tracer::Node& n) {
  if (n.op != OpId::Matmul || !n.meta.device.is_cpu()) return false;
  for (tracer::ValueId v : n.inputs) {
    for (const tracer::GraphInput& in : g.inputs)
      if (in.id == v && !in.meta.device.is_cpu()) return false;
    for (const tracer::Node& m : g.nodes)
      if (m.output == v && !m.meta.device.is_cpu()) return false;
  }
  return true;
}

void mark_blas_steps(const tracer::Graph& g, std::vector<Step>& steps) {
  for (size_t s = 0; s < steps.size(); ++s) {
    Step& st = steps[s];
    if (st.kernel || !is_cpu_matmul(g, g.nodes[st.node])) continue;
    st.blas = true;
    if (s + 1 >= steps.size() || !steps[s + 1].kernel) continue;
    const KernelStep& k = *steps[s + 1].kernel;
    const tracer::ValueId product = g.nodes[st.node].output;
    st.epilogue = k.reduced_dims == 0 && !k.draws() && k.sizes.empty() &&
                  std::find(k.inputs.begin(), k.inputs.end(), product) != k.inputs.end();
  }
}

namespace {

// Whether every operand of an epilogue launch over the product's index space that touches the
// product's memory is the product itself, element for element (its data, its row-major
// strides): a block's epilogue then reads only the block's own elements, which its GEMM call
// has computed. (A read of the product through another index map, a transpose, could reach
// blocks not computed yet.)
bool reads_product_in_place(const LaunchArgs& la, const TensorImpl* product) {
  const auto lo = reinterpret_cast<intptr_t>(product->data());
  const int64_t es = static_cast<int64_t>(itemsize(product->dtype()));
  const intptr_t hi = lo + product->numel() * es;
  const DimVector own{product->sizes()[1] * es, es};
  for (size_t o = 0; o < la.ptrs.size(); ++o) {
    intptr_t first = reinterpret_cast<intptr_t>(la.ptrs[o]), last = first;  // its bytes' range
    for (size_t d = 0; d < la.sizes.size(); ++d) {
      const int64_t span = (la.sizes[d] - 1) * la.strides[o][d];
      (span < 0 ? first : last) += span;
    }
    const bool touches = first < hi && last + 16 > lo;  // 16: the widest element
    if (touches && (reinterpret_cast<intptr_t>(la.ptrs[o]) != lo || la.strides[o] != own))
      return false;
  }
  return true;
}

}  // namespace

size_t JitPlan::run_blas(Frame& f, size_t s) {
  const Step& st = steps_[s];
  const tracer::Node& n = graph_.nodes[st.node];
  KernelStep* epi = st.epilogue ? steps_[s + 1].kernel.get() : nullptr;
  const size_t consumed = epi ? 1 : 0;
  auto whole = [&] {  // the eager GEMM path, then the epilogue as its own step
    run_eager_node(f, st.node, static_cast<int32_t>(s));
    if (epi) run_kernel(f, *epi, s + 1);
    return consumed;
  };
  if (st.batch >= 0 && batches_[st.batch].steps[0] == static_cast<int32_t>(s))
    run_product_batch(f, st.batch);  // product_batch.h: sets the members' products
  if (f.values[n.output].defined()) {
    // Computed already: rows of a batch's product, or of a scan's products computed before its
    // loop (scan_products.h). The epilogue alone.
    if (epi) run_kernel(f, *epi, s + 1);
    return consumed;
  }
  if (f.any_poisoned(n.inputs)) return whole();
  const Tensor a = f.values[n.inputs[0]], b = f.values[n.inputs[1]];
  const TensorImpl *ai = a.impl(), *bi = b.impl();
  const DType dt = ai->dtype();
  // What BLAS takes here is a 2-D product of one floating dtype (the recording checked the
  // shapes); anything else (batched, integer, mixed dtypes) runs as the eager step.
  if (ai->dim() != 2 || bi->dim() != 2 || bi->dtype() != dt || ai->sizes()[1] != bi->sizes()[0])
    return whole();
  const blas::RowSplit split = blas::plan_row_split(ai, bi, dt, true);
  int64_t M = split.M, N = split.N;
  if (split.blocks < 2) {
    // The calls eager's matmul makes (column blocks, libxsmm's blocks over kiln's threads or one
    // call: blas::gemm_2d), without the eager step's work (meta function, dispatch): an rnn
    // step's products take a few microseconds each, and that work was a fifth of them.
    const blas::WholeGemm g = blas::plan_whole_gemm(ai, bi, dt);
    if (!g.ok) return whole();
    M = g.M;
    N = g.N;
  }
  // The product's buffer as the eager step makes it: new (a destination could be an operand's
  // memory, which the GEMM still reads). The value table holds the only handle: the epilogue
  // may take the buffer over.
  f.values[n.output] = empty_tensor({M, N}, dt, Device::cpu());
  const TensorImpl* product = f.values[n.output].impl();
  // The epilogue per block: its index space must be the product's, it must read the product
  // only element for element, and it must not write where a GEMM block still reads.
  KernelLaunch kl;
  bool blocked = epi && !epi->broken.load(std::memory_order_relaxed) &&
                 !f.any_poisoned(epi->inputs) && prepare_kernel(f, *epi, s + 1, kl, false);
  if (blocked) {
    // Per block, launch() (it throws where try_launch would decline): the layout is asked once.
    // An exception there leaves the epilogue to its own step (run_kernel handles it).
    try {
      blocked = kl.la.sizes == product->sizes() && epi->kernel->can_launch(kl.la) &&
                reads_product_in_place(kl.la, product);
    } catch (...) {
      blocked = false;
    }
    for (const Tensor& o : kl.outs)
      blocked = blocked && !shares_memory(o, a) && !shares_memory(o, b);
  }
  // The epilogue over rows [r0, r1) and columns [c0, c1) of the product; the first failure kept.
  std::mutex failed_mu;
  std::exception_ptr failed;
  auto epilogue_block = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    LaunchArgs part = kl.la;
    part.sizes[0] = r1 - r0;
    part.sizes[1] = c1 - c0;
    for (size_t o = 0; o < part.ptrs.size(); ++o)
      part.ptrs[o] += r0 * part.strides[o][0] + c0 * part.strides[o][1];
    try {
      epi->kernel->launch(part);
    } catch (...) {
      std::lock_guard lock(failed_mu);
      if (!failed) failed = std::current_exception();
    }
  };
  if (split.blocks >= 2) {
    blas::set_threads(1);
    parallel_for(0, split.blocks, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t r0 = blas::block_begin(split, i), r1 = blas::block_begin(split, i + 1);
        blas::gemm_rows(split, a.impl(), b.impl(), f.values[n.output].impl(), r0, r1);
        if (blocked && r0 < r1) epilogue_block(r0, r1, 0, N);
      }
    });
  } else {
    // Each block of the product's own split (column blocks, libxsmm's tiles over kiln's
    // threads) gets the epilogue on the thread that computed it, while it is in that core's
    // cache; one call gets it over all of C afterwards (blas::AfterBlock).
    const blas::AfterBlock after = epilogue_block;
    blas::gemm_2d(ai, bi, f.values[n.output].impl(), blocked ? &after : nullptr);
  }
  if (!epi) return 0;
  if (!blocked) {
    run_kernel(f, *epi, s + 1);
    return 1;
  }
  if (!failed) {
    finish_kernel(f, *epi, kl, Launched::Yes);
    return 1;
  }
  // A block's launch failed: an output may have overwritten the product in place. Recompute the
  // product and run the epilogue's nodes eagerly, as a failed launch of any kernel does.
  kl.outs.clear();
  try {
    std::rethrow_exception(failed);
  } catch (const Error& e) {
    if (!epi->broken.exchange(true))
      KILN_WARN(Jit, "a fused kernel of {} ops failed to launch; they run eagerly: {}",
                epi->nodes.size(), e.what());
  } catch (...) {
  }
  f.values[n.output] = Tensor();
  run_eager_node(f, st.node, static_cast<int32_t>(s));
  run_nodes_eagerly(f, *epi);
  return 1;
}

}  // namespace kiln::jit

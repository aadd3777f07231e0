// CpuKernel: one loop kernel compiled for the CPU target (cpu_target.h): its machine code per
// launch layout (rendered on first sight through render_cache.h), and its launches: pointwise
// (cpu_kernel.cpp), row and column kernels (cpu_kernel_reduce.cpp). A launch coalesces dims,
// classifies each operand's innermost stride, takes the variant for that layout and store
// choice (store_choice.h), and splits the work across oneTBB within KILN_NUM_THREADS.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "jit/cpu/baseline_column_kernel.h"
#include "jit/cpu/baseline_kernel.h"
#include "jit/cpu/baseline_row_kernel.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/render.h"
#include "jit/cpu/render_cache.h"
#include "jit/cpu/render_cols.h"
#include "jit/target.h"
#include "ops/cpu/pointwise_table.h"  // kStreamingBytes: the eager kernels' threshold too
#include "ops/cpu/store_choice.h"
#include "runtime/config.h"

namespace kiln::jit {

// Elements per block of a progressive launch's baseline code (CpuKernel::baseline_until_rendered):
// 20-40 µs of it (baseline code runs 0.6-1.1 ns an element on one thread: baseline_kernel.h),
// so that a rendering that lands takes over within that.
inline constexpr int64_t kProgressiveBlockElements = 32768;

// Calls set_progressive_block_hook's hook, if any (cpu_target.h).
void progressive_block_done();

// Whether a column kernel of row values only (a sum over columns, its prologue fused) launches
// at these sizes, as CpuKernel::may_launch decides (16 columns or more, and no wider split in
// eager): CpuTarget::launches_column_reduction.
bool column_reduction_launches(const DimVector& sizes, int reduced_dims, int inner_dims);

// What a row or column kernel's launches ask of its expressions (cpu_kernel_reduce.cpp), found
// once when it compiles. Worked out again at every launch (vectors built, the expressions walked
// several times), they were half the instructions of a small row kernel's step (callgrind:
// 19K -> 8.8K per step of kiln-perf's host_loop recorded, its amax over 16 floats).
struct ReduceFacts {
  bool row_values_only = false;   // it stores row values only
  bool plain_reduces = false;     // every Reduce folds a Load of an input of its own
  bool splits_long_rows = false;  // its long rows may be split across threads by chunks
  // It stores element values, none computed from a row value (newton's step: x and amax(|x -
  // x0| / x)); eager computes such outputs with pointwise ops across all its threads.
  bool elements_apart = false;
  // Such element outputs whose long rows split across threads by chunks (run_row_chunks): no
  // RowSize (the element pass takes the chunk's length for its n_inner), no scratch row or
  // pipelining (the element pass reads what a Reduce pass left), no ReduceFirst.
  bool elements_by_chunks = false;
  bool column_ok = false;           // column_kernel_ok (render_cols.h)
  bool column_epilogue = false;     // column_kernel_has_epilogue (render_cols.h)
  bool columns_only = false;        // a ReduceArgMax / ReduceArgMin: no row kernel renders it
  size_t column_slots = 0;          // column_scratch_slots (render_cols.h)
  std::vector<uint8_t> row_output;  // per output: whether it stores a row value
  struct Reduce {
    ExprOp op;
    DType type;
  };
  std::vector<Reduce> reduces;          // in expression order (each one's row program)
  size_t stash_values = 0;              // row_stash(k).size() (render_reduce.h)
  int pipelined_pass = -1;              // row_pipelined_pass(k, isa)
  std::vector<int32_t> loaded_reduced;  // operands a Reduce loads as they are (column launches)
};
ReduceFacts reduce_facts(const LoopKernel& k, JitIsa isa);

class CpuKernel final : public CompiledKernel, public std::enable_shared_from_this<CpuKernel> {
 public:
  // The ISA and the unroll (KILN_JIT_UNROLL, else the target's choice) are fixed here, at
  // compile time, for every variant.
  CpuKernel(const LoopKernel& k, JitIsa isa, const CpuLaunchHint& hint)
      : CpuKernel(k, cpu_target_variant(k, isa), hint) {}
  CpuKernel(const LoopKernel& k, const KernelVariant& first, const CpuLaunchHint& hint)
      : k_(k),
        facts_(reduce_facts(k, first.isa)),
        isa_(first.isa),
        unroll_(first.unroll),
        pipeline_(first.pipeline),
        name_(fmt::format("kernel {:016x}", hash_words(encode(k)))) {
    // Render the all-contiguous layout now: the common case, and a codegen failure surfaces
    // while planning (the step then stays eager) instead of at the first launch. Streaming
    // where the planner's index space makes every element output large, and as a column
    // kernel where the planner launches it so: such launches never take the plain row variant,
    // whose rendering would be wasted (kiln-perf's gelu, layernorm and softmax rendered each
    // kernel twice; mlp_train's column sums too).
    // (A column kernel the column renderer declines by design keeps the row variant here: its
    // launches run the nodes eagerly, can_launch(), without a codegen failure's warning.)
    // With large outputs under KILN_JIT_STREAMING=auto both store variants are rendered here,
    // back to back while the renderer is warm: the launches time both (store_choice.h), and a
    // render at the second launch, after the first had streamed its outputs through the caches,
    // took 3x as long (gelu's: 306 against ~100 us).
    // A row kernel's row values do not move along the row: its launches see those outputs as
    // broadcast (cpu_kernel_reduce.cpp split_rows), so that is the layout rendered (the
    // all-contiguous one was rendered for nothing: every sum over rows rendered twice).
    const bool columns = hint.columns && reduces() && facts_.column_ok;
    if (reduces() && !columns && facts_.columns_only) return;  // no rendering launches
    std::vector<InnerLayout> layout = first.layout;
    if (reduces() && !columns)
      for (int32_t j = 0; j < k.num_outputs(); ++j)
        if (facts_.row_output[j]) layout[j] = InnerLayout::Broadcast;
    // A new kernel under KILN_JIT_BASELINE launches baseline code at once and renders these
    // variants on the planning thread (start_tier_up): a pointwise kernel (baseline_kernel.h),
    // a row kernel (baseline_row_kernel.h), a column kernel (baseline_column_kernel.h).
    // Not under On where the process has rendered this kernel already (another plan's, a loop's
    // next step). Where the planner's hint says its launches are too large for baseline code to
    // pay (baseline_pays), they run it only until the rendering lands (a progressive launch:
    // baseline_until_rendered), instead of waiting for the render.
    const StoreChoice::Mode mode = StoreChoice::mode_from(config().jit_streaming);
    const bool large = large_outputs(hint.elements);
    const BaselineTier tier = config().jit_baseline;
    const bool only = tier == BaselineTier::Only;
    if (tier != BaselineTier::Off &&
        (only || cached_rendering(k, {isa_, layout, large && mode != StoreChoice::Mode::Off,
                                      unroll_, columns, pipeline_}) == nullptr)) {
      // (Under Only, the tests' mode, a reduction gets both kinds where it can: a kernel
      // compiled without the planner's hint may be launched as a column kernel.)
      if (columns || (only && reduces() && facts_.column_ok))
        baseline_cols_ = BaselineColumnKernel::make(k, isa_);
      if (!columns && reduces())
        baseline_rows_ = BaselineRowKernel::make(k, isa_);
      else if (!reduces())
        baseline_ = BaselineKernel::make(k, isa_);
    }
    if (has_baseline()) {
      tier_up_.push_back({layout, large, columns});
      return;
    }
    if (large && mode != StoreChoice::Mode::Off) variant(layout, true, columns);
    if (!large || mode != StoreChoice::Mode::On) variant(layout, false, columns);
  }
  // Queues the renders of the variants its launches take (the constructor's, and each new
  // layout's) on the planning thread, while its launches run its baseline code (none under
  // KILN_JIT_BASELINE=only). Called once the kernel is owned by a shared_ptr (CpuTarget::compile).
  void start_tier_up();
  // Whether its launches run baseline code now (tests): a baseline and no rendering of `layout`.
  bool runs_baseline(std::span<const InnerLayout> layout, bool columns = false) const;
  const LoopKernel& source() const override { return k_; }

  void launch(const LaunchArgs& args) override;
  // One row split for the question and the launch (can_launch computed it a second time).
  bool try_launch(const LaunchArgs& args) override;

 private:
  bool reduces() const { return !facts_.reduces.empty(); }  // k_.has_reduce()
  bool has_baseline() const {
    return baseline_ != nullptr || baseline_rows_ != nullptr || baseline_cols_ != nullptr;
  }
  // Both: false, having run nothing, where the layout has no machine code (`decline`; else
  // they throw saying why).
  bool launch_rows(const LaunchArgs& args, bool decline);  // a row kernel (k_.has_reduce())
  bool launch_cols(const LaunchArgs& args, bool decline);  // a column kernel (inner_dims > 0)
  bool launch_any(const LaunchArgs& args, bool decline);
  bool can_launch(const LaunchArgs& args) const override;
  bool may_launch(const DimVector& sizes, int reduced_dims, int inner_dims) const override;
  // Each Reduce's row program (row_program.h) for rows of n, those of the last n asked for kept:
  // a launch's rows are mostly the same length as its last one's.
  struct RowPrograms {
    int64_t n = 0;
    std::vector<std::vector<int64_t>> programs;
  };
  std::shared_ptr<const RowPrograms> row_programs(int64_t n);
  // The runtime parameters into words[0, num_params), param p at p * 8 bytes in its value type
  // (Scalar::to, as eager converts a Scalar operand); raises where the launch has too few.
  void pack_params(const LaunchArgs& args, uint64_t* words) const;
  // The machine code for one layout of the operands (rendered on first sight). The variant is
  // keyed by every operand's layout, whatever the operand count.
  KernelFn variant(std::span<const InnerLayout> layout, bool streaming, bool columns = false) {
    {
      std::lock_guard lock(mu_);
      for (const Variant& v : variants_)
        if (v.streaming == streaming && v.columns == columns &&
            std::equal(v.layout.begin(), v.layout.end(), layout.begin(), layout.end()))
          return v.fn;
    }
    const std::vector<InnerLayout> key(layout.begin(), layout.end());
    KernelFn fn =
        render_cached(k_, KernelVariant{isa_, key, streaming, unroll_, columns, pipeline_});
    std::lock_guard lock(mu_);
    variants_.push_back({key, streaming, columns, fn});
    return fn;
  }

  // The store choice of a launch whose outputs may stream (`eligible`: large, contiguous and
  // aligned), counted in cpu_jit_counters().streaming_launches when it streams.
  StoreChoice::Pick pick_stores(bool eligible) {
    if (!eligible) return {false, false};
    const StoreChoice::Pick p = stores_.next(StoreChoice::mode_from(config().jit_streaming));
    if (p.streaming) cpu_jit_counters().streaming_launches.fetch_add(1, std::memory_order_relaxed);
    return p;
  }

  // The same for a part of a larger launch (LaunchArgs::whole_elements, a blocked run's launch
  // per block): never timed, since a part's ordinary stores land in the caches and look fast
  // while the whole pays their write-backs later (batch norm's blocked output chose them and
  // lost its gain); streams unless KILN_JIT_STREAMING is off or this kernel's whole launches
  // chose ordinary stores.
  StoreChoice::Pick pick_part_stores(bool eligible) {
    if (!eligible) return {false, false};
    const StoreChoice::Mode mode = StoreChoice::mode_from(config().jit_streaming);
    const bool streaming = mode == StoreChoice::Mode::On ||
                           (mode == StoreChoice::Mode::Auto && stores_.decided() != 0);
    if (streaming) cpu_jit_counters().streaming_launches.fetch_add(1, std::memory_order_relaxed);
    return {streaming, false};
  }

  // Whether every element output of a launch over `elements` elements has kStreamingBytes or
  // more (a row kernel's row values do not count; at least one element output): the size half of
  // the launches' test for non-temporal stores, the other half (layouts, alignment) assumed.
  bool large_outputs(int64_t elements) const {
    bool any = false;
    for (int32_t j = 0; j < k_.num_outputs(); ++j) {
      if (reduces() && facts_.row_output[j]) continue;
      const DType t = k_.output_dtype(j);
      if (t == DType::Bool || elements * static_cast<int64_t>(itemsize(t)) < kStreamingBytes)
        return false;
      any = true;
    }
    return any;
  }

  // The code a launch runs: its rendered variant for the layout and store choice (made in
  // `stores`; a part of a larger launch picks as pick_part_stores), or null where it runs
  // baseline code instead, while the layout has no rendering yet (whose render tiered_up
  // queues): the whole launch where `baseline_pays` (its size pays for baseline code, or the
  // tier is `only`); else a progressive launch (`progressive` set: baseline_until_rendered),
  // which waits for no render. Without baseline code the rendering is made here and waited for.
  // Counts the launch (and a whole baseline launch).
  KernelFn launch_code(bool has_baseline, bool baseline_pays, std::span<const InnerLayout> layout,
                       bool streaming, bool columns, bool part, StoreChoice::Pick& stores,
                       bool& progressive) {
    const bool baseline = has_baseline && !tiered_up(layout, streaming, columns);
    progressive = baseline && !baseline_pays && config().jit_baseline != BaselineTier::Only;
    KernelFn fn = nullptr;
    stores = {false, false};
    if (baseline) {
      if (!progressive)
        cpu_jit_counters().baseline_launches.fetch_add(1, std::memory_order_relaxed);
    } else {
      stores = part ? pick_part_stores(streaming) : pick_stores(streaming);
      fn = variant(layout, stores.streaming, columns);
    }
    cpu_jit_counters().launches.fetch_add(1, std::memory_order_relaxed);
    return fn;
  }

  // A progressive launch (launch_code): its items [0, items) run as baseline code on this
  // thread by `run(begin, end)`, `block` items at a time, until a rendering of `layout` lands
  // on the planning thread (one with non-temporal stores only where `streaming`: the launch
  // allows them). Returns how many items ran so, with the rendering in `fn` and its stores in
  // `stores` (fn null: the baseline code ran them all, the rendering having failed or come too
  // late). The bits do not change where the rendering takes over: baseline code gives the
  // rendering's (baseline_kernel.h), and the items are independent (elements, rows, blocks of
  // columns), as the launch's threads take them. Counted as a baseline and a progressive launch
  // where any item ran baseline code.
  template <class RunBaseline>
  int64_t baseline_until_rendered(int64_t items, int64_t block, std::span<const InnerLayout> layout,
                                  bool streaming, bool columns, KernelFn& fn,
                                  StoreChoice::Pick& stores, RunBaseline&& run) {
    int64_t done = 0;
    fn = nullptr;
    while (done < items && !rendering(layout, streaming, columns, fn, stores)) {
      const int64_t end = std::min(items, done + std::max<int64_t>(block, 1));
      run(done, end);
      done = end;
      progressive_block_done();
    }
    if (done > 0) {
      cpu_jit_counters().baseline_launches.fetch_add(1, std::memory_order_relaxed);
      cpu_jit_counters().progressive_launches.fetch_add(1, std::memory_order_relaxed);
    }
    return done;
  }
  // A rendering of `layout` made already (baseline_until_rendered), without rendering: its code
  // and its stores (never timed: a part of a launch), streaming only where `streaming`.
  bool rendering(std::span<const InnerLayout> layout, bool streaming, bool columns, KernelFn& fn,
                 StoreChoice::Pick& stores) {
    std::lock_guard lock(mu_);
    for (const Variant& v : variants_)
      if (v.columns == columns && (streaming || !v.streaming) &&
          std::equal(v.layout.begin(), v.layout.end(), layout.begin(), layout.end())) {
        fn = v.fn;
        stores = {v.streaming, false};
        if (v.streaming)
          cpu_jit_counters().streaming_launches.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    return false;
  }

  // Baseline tier: whether `layout` (a column kernel's where `columns`) has a rendering; where
  // not, its render is queued (once) and the launch runs the baseline code. `large`: its outputs
  // may stream (both store variants are rendered).
  bool tiered_up(std::span<const InnerLayout> layout, bool large, bool columns = false);
  void tier_up();  // on the planning thread: renders what tier_up_ holds

  LoopKernel k_;
  ReduceFacts facts_;
  std::unique_ptr<BaselineKernel> baseline_;             // a pointwise kernel's
  std::unique_ptr<BaselineRowKernel> baseline_rows_;     // a row kernel's
  std::unique_ptr<BaselineColumnKernel> baseline_cols_;  // a column kernel's
  // Under mu_: the layouts to render (and whether their launches' outputs are large enough to
  // stream: both store variants then), those queued or rendered, whether a job is queued, and
  // whether a background render failed (the kernel then keeps its baseline code).
  struct TierUp {
    std::vector<InnerLayout> layout;
    bool large = false;
    bool columns = false;  // a column kernel's variant
  };
  std::vector<TierUp> tier_up_;
  std::vector<TierUp> tier_up_asked_;
  bool tier_up_queued_ = false;
  bool tier_up_failed_ = false;
  JitIsa isa_;
  int unroll_;
  bool pipeline_;     // KILN_JIT_PIPELINE, fixed at compile time like the unroll
  std::string name_;  // in profiler traces: the hash of its loop IR, as in KILN_DUMP file names
  mutable std::mutex mu_;
  struct Variant {
    std::vector<InnerLayout> layout;
    bool streaming;
    bool columns;
    KernelFn fn;
  };
  std::vector<Variant> variants_;
  std::shared_ptr<const RowPrograms> programs_;  // under mu_
  StoreChoice stores_;  // streaming or ordinary stores for large outputs (store_choice.h)
};

// Any rank, coalesced to as few dims as the strides allow (innermost last), at least one.
struct CoalescedLaunch {
  DimVector sizes;
  // The stride of operand j along dim d at [d * nops + j]: one flat buffer, held inline for
  // launches of up to 32 strides (no allocation on a small launch's path).
  SmallVector<int64_t, 32> flat;
  size_t nops = 0;
  int64_t stride(size_t j, size_t d) const { return flat[d * nops + j]; }
};
CoalescedLaunch coalesce_launch(const LaunchArgs& a);
// Dims [d0, d1) of `a` alone, coalesced likewise (a row or column launch's parts).
CoalescedLaunch coalesce_dims(const LaunchArgs& a, size_t d0, size_t d1);

}  // namespace kiln::jit

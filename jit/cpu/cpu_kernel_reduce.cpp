// CpuKernel's row and column launches (cpu_kernel.h): a launch split into the kept dims and the
// reduced row (or rows of columns), checked for a layout the row and column renderers take
// (can_launch), then run over whole rows or column blocks so a result never depends on the
// thread count.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "jit/cpu/cpu_kernel.h"
#include "jit/cpu/math.h"
#include "jit/cpu/render_cols.h"
#include "jit/cpu/render_reduce.h"
#include "jit/loop/row_program.h"
#include "runtime/error.h"
#include "runtime/parallel.h"
#include "runtime/profiler.h"

namespace kiln::jit {

namespace {

// A row kernel's launch split into its kept dims (coalesced, rank 1 at least) and its row: the
// row's length, and each operand's layout along it (empty with `why` set where the row is not
// one contiguous or broadcast run in every operand). No heap memory unless it fails.
struct RowSplit {
  CoalescedLaunch kept;
  int64_t n = 1;
  SmallVector<InnerLayout, 8> layout;
  std::string why;
};

RowSplit split_rows(const LoopKernel& k, const ReduceFacts& facts, const LaunchArgs& args) {
  const size_t nops = args.ptrs.size();
  const size_t rank = args.sizes.size();
  KILN_CHECK(args.reduced_dims >= 0 && static_cast<size_t>(args.reduced_dims) <= rank,
             "cpu row kernel: {} reduced dims of a rank-{} index space", args.reduced_dims, rank);
  const size_t nk = rank - static_cast<size_t>(args.reduced_dims);
  RowSplit r;
  if (facts.columns_only) {
    r.why = "ReduceArgMax / ReduceArgMin are column kernels only";
    return r;
  }
  for (size_t d = nk; d < rank; ++d) r.n *= args.sizes[d];
  r.layout.assign(nops, InnerLayout::Contiguous);
  if (r.n > 1) {
    const CoalescedLaunch c = coalesce_dims(args, nk, rank);
    if (c.sizes.size() != 1) {
      r.why = "the reduced dims do not form one row";
      r.layout.clear();
      return r;
    }
    for (size_t j = 0; j < nops; ++j) {
      const int64_t s = c.stride(j, 0);
      const int64_t es = static_cast<int64_t>(itemsize(k.operand_dtype(static_cast<int32_t>(j))));
      if (s == es) continue;
      if (s != 0) {
        r.why = fmt::format("operand {} has stride {} bytes along the row", j, s);
        r.layout.clear();
        return r;
      }
      r.layout[j] = InnerLayout::Broadcast;
    }
  }
  for (int32_t j = 0; j < k.num_outputs(); ++j)
    if (!facts.row_output[j] && r.layout[j] != InnerLayout::Contiguous) {
      r.why = fmt::format("output {} is broadcast along the row", j);
      r.layout.clear();
      return r;
    }
  r.kept = coalesce_dims(args, 0, nk);
  return r;
}

// A column kernel's launch (loop_kernel.h "Column kernels") split into its outer dims, its
// reduced rows (one stride per operand) and its columns (contiguous or broadcast per operand);
// `why` says why it has no machine code (the plan then runs the step's nodes eagerly).
struct ColSplit {
  CoalescedLaunch outer;  // rank 1 at least
  int64_t n = 1, w = 1;
  SmallVector<int64_t, 8> row_stride;
  SmallVector<InnerLayout, 8> layout;
  std::string why;
};

ColSplit split_cols(const LoopKernel& k, const ReduceFacts& facts, const LaunchArgs& args) {
  const size_t nops = args.ptrs.size();
  const size_t rank = args.sizes.size();
  ColSplit c;
  KILN_CHECK(args.reduced_dims >= 0 && args.inner_dims > 0 &&
                 static_cast<size_t>(args.reduced_dims + args.inner_dims) <= rank,
             "cpu column kernel: {} reduced and {} inner dims of a rank-{} index space",
             args.reduced_dims, args.inner_dims, rank);
  if (!facts.column_ok) {
    c.why =
        "the column renderer declines it (column_kernel_ok: a second reducing pass, "
        "ReduceFirst, a count of float flags, or an input's argmax as it is)";
    return c;
  }
  const size_t nb = rank - static_cast<size_t>(args.reduced_dims + args.inner_dims);
  const size_t ni = rank - static_cast<size_t>(args.inner_dims);
  for (size_t d = nb; d < rank; ++d) (d < ni ? c.n : c.w) *= args.sizes[d];
  c.layout.assign(nops, InnerLayout::Contiguous);
  c.row_stride.assign(nops, 0);
  if (c.w == 0) return c;  // nothing to compute
  // Fewer columns than 16: sizes_allow_launch (below) says why not.
  if (c.w < 16) {
    c.why = fmt::format("{} columns (eager's column windows fold fewer than 16 faster)", c.w);
    return c;
  }
  const CoalescedLaunch ci = coalesce_dims(args, ni, rank);
  if (ci.sizes.size() != 1) {
    c.why = "the kept inner dims do not form one run of columns";
    return c;
  }
  for (size_t j = 0; j < nops; ++j) {
    const int64_t s = ci.stride(j, 0);
    const int64_t es = static_cast<int64_t>(itemsize(k.operand_dtype(static_cast<int32_t>(j))));
    if (s == 0 && static_cast<int32_t>(j) >= k.num_outputs()) {
      c.layout[j] = InnerLayout::Broadcast;
    } else if (s != es) {
      c.why = fmt::format("operand {} has stride {} bytes along the columns", j, s);
      return c;
    }
  }
  if (c.n > 1) {
    const CoalescedLaunch cr = coalesce_dims(args, nb, ni);
    if (cr.sizes.size() != 1) {
      c.why = "the reduced dims do not form one run of rows";
      return c;
    }
    for (size_t j = 0; j < nops; ++j) c.row_stride[j] = cr.stride(j, 0);
  }
  // A reduced input loaded as is: eager takes the column order only where it is row-major.
  for (int32_t j : facts.loaded_reduced) {
    int64_t expected = static_cast<int64_t>(itemsize(k.operand_dtype(j)));
    for (size_t d = rank; d-- > 0;) {
      if (args.sizes[d] == 1) continue;
      if (args.strides[j][d] != expected) {
        c.why = fmt::format("reduced operand {} is not row-major (eager gathers it as rows)", j);
        return c;
      }
      expected *= args.sizes[d];
    }
  }
  c.outer = coalesce_dims(args, 0, nb);
  return c;
}

}  // namespace

namespace {

// Each Reduce expression's level, in expression order: how many Reduces lie between the
// elements and its operand (0: it reads elements, parameters and constants only; var's second
// pass, which reads the mean, 1). A level's chunks can be reduced once every lower level's
// results are whole.
std::vector<int> reduce_levels(const LoopKernel& k) {
  std::vector<int> above(k.exprs.size(), 0), levels;  // Reduces on the way to each value
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr& e = k.exprs[i];
    int most = 0;
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) most = std::max(most, above[o]);
    if (expr_is_reduce(e.op)) levels.push_back(most);
    above[i] = most + (expr_is_reduce(e.op) ? 1 : 0);
  }
  return levels;
}

// Whether a launch of `rows` rows of n elements takes more threads by splitting its rows into
// chunks: fewer rows than kiln's threads, each longer than one chunk (run_row_chunks). Eager
// cuts such rows likewise (ops/cpu/reduce_loops.h run_rows), in the same tree.
bool long_rows_want_threads(int64_t rows, int64_t n) {
  const int threads = num_threads();
  return threads >= 2 && !in_parallel_region() && n > kRowProgramChunk && rows < threads;
}

// Whether eager would run this launch on more threads than the kernel can: a kernel whose long
// rows do not split (RowKernelTraits::splits_long_rows) over fewer rows than threads, each longer
// than one chunk. The kernel runs such a row on one thread, eager across the threads in the same
// order, so the step's nodes, run eagerly, give the same bits sooner. (With element outputs
// computed from row values, softmax, eager runs a row per thread too: those launch.) Element
// outputs computed without row values (`elements_apart`) are pointwise ops to eager, across all
// its threads: such kernels split their rows by chunks, elements included
// (`elements_by_chunks`, run_row_chunks), except those with RowSize, a scratch row or a
// ReduceFirst, which decline where their rows would keep at most a third of the threads busy.
// Newton's step (2^20 elements, one row; the 16-core Xeon of the GPU host, 2026-11-30, eager /
// jit ms): a row per thread, 2 threads 16.4 / 11.5, 5 threads 8.1 / 10.7, 16 threads 6.8 / 12.4
// (jit mode 0.44x); declined, 16 threads 6.8 / 6.6; split by chunks, 6.07 / 1.66.
bool eager_splits_rows_wider(const ReduceFacts& f, int64_t rows, int64_t n) {
  if (!long_rows_want_threads(rows, n)) return false;
  if (f.row_values_only) return !f.splits_long_rows;
  return f.elements_apart && !f.elements_by_chunks && rows * 3 <= num_threads();
}

// A column kernel's calls: blocks of up to 4096 columns (a call walks its rows in memory order,
// each across all its columns: the longer the runs of a row-major input, the better the
// prefetchers keep up). Where fewer blocks than threads would leave a thread idle and a column
// is longer than one chunk of kColRowChunk rows, the calls' rows split across the threads by
// chunks instead, as eager splits them (run_cols, run_arg_cols): each chunk's level popped into a
// slot, then one call per block combining them in the column program's tree (row_program.h
// column_program_partials; an argmax counts its rows from the chunk's first) and storing the row
// values, then, for a kernel with an epilogue, its rows by chunks again: the same bits, whatever
// the threads (launch_cols). Shorter columns narrow the blocks (multiples of 64 columns) to give
// every thread a call.
struct ColumnCalls {
  int64_t width = 0;        // columns per call
  bool split_rows = false;  // the rows split by chunks across the threads
};
ColumnCalls column_calls(int64_t outer, int64_t n, int64_t w) {
  const int64_t threads = num_threads();
  ColumnCalls c;
  c.width = std::min<int64_t>(std::max<int64_t>(w, 1), 4096);
  const int64_t calls = outer * ((w + c.width - 1) / c.width);
  if (calls >= threads || threads < 2 || in_parallel_region()) return c;
  if (n > kColRowChunk) {
    c.split_rows = true;
    return c;
  }
  const int64_t per_thread = (w * outer + threads - 1) / threads;
  c.width = std::clamp<int64_t>((per_thread + 63) / 64 * 64, 64, 4096);
  return c;
}

// Column launches eager runs as fast: on 2 threads or more over more than one chunk of
// kColRowChunk rows, a kernel of row values only whose Reduces each fold an input of their own
// as loaded (`x.sum(0)`, `g.sum(0)` of a bias gradient) does eager's work in eager's order: it
// reads what eager reads and splits the chunks as eager does, so it has nothing to gain and a
// launch to pay. With a fused producer the kernel wins: `(x * w + 1).sum(0)` of [8192, 1024]
// 2.5 ms against 10.2 eagerly (2-core Zen 3 VM).
bool eager_splits_cols_wider(const ReduceFacts& f, int64_t n) {
  const int threads = num_threads();
  return threads >= 2 && !in_parallel_region() && n > kColRowChunk && f.row_values_only &&
         f.plain_reduces;
}

// What the launch's sizes alone decide (CpuKernel::may_launch): false for a column launch of
// fewer than 16 columns (one vector a row, masked or scalar, latency-bound: eager's 16-column
// windows with up to four runs of rows side by side are faster: [2^20, 2].sum(0) 3.5 ms as a
// kernel, 0.58 ms eagerly; one column eager reduces as a row, another order), and where eager
// spreads the work over more threads (above).
bool sizes_allow_launch(const ReduceFacts& f, const DimVector& sizes, int reduced_dims,
                        int inner_dims) {
  const size_t rank = sizes.size();
  if (reduced_dims < 0 || inner_dims < 0 || static_cast<size_t>(reduced_dims + inner_dims) > rank)
    return true;  // malformed: launch() names the problem
  const size_t r1 = rank - static_cast<size_t>(inner_dims);
  const size_t r0 = r1 - static_cast<size_t>(reduced_dims);
  int64_t outer = 1, n = 1, w = 1;
  for (size_t d = 0; d < rank; ++d) (d < r0 ? outer : d < r1 ? n : w) *= sizes[d];
  if (inner_dims > 0) {
    if (w > 0 && w < 16) return false;
    return !eager_splits_cols_wider(f, n);
  }
  return !eager_splits_rows_wider(f, outer, n);
}

}  // namespace

ReduceFacts reduce_facts(const LoopKernel& k, JitIsa isa) {
  ReduceFacts f;
  if (!k.has_reduce()) return f;
  const std::vector<uint8_t> row = k.row_values();
  for (int32_t s : k.stores) f.row_output.push_back(row[s]);
  f.row_values_only =
      std::all_of(f.row_output.begin(), f.row_output.end(), [](uint8_t r) { return r != 0; });
  bool first = false;  // a ReduceFirst
  f.plain_reduces = true;
  for (const Expr& e : k.exprs) {
    if (!expr_is_reduce(e.op)) continue;
    f.plain_reduces = f.plain_reduces && k.exprs[e.a].op == ExprOp::Load;
    f.reduces.push_back({e.op, e.type});
    first = first || e.op == ExprOp::ReduceFirst;
    f.columns_only = f.columns_only || expr_is_arg_reduce(e.op);
    if (k.exprs[e.a].op == ExprOp::Load)
      f.loaded_reduced.push_back(k.num_outputs() + k.exprs[e.a].index);
  }
  // Long rows split across threads (run_row_chunks): no element pass, which would need the whole
  // row's values, and no ReduceFirst, whose pass scans for the first hit, not by a program.
  f.splits_long_rows = f.row_values_only && !first;
  // Element outputs none of whose values reads a Reduce (row values include constants).
  std::vector<uint8_t> reads_reduce(k.exprs.size(), 0);
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr& e = k.exprs[i];
    reads_reduce[i] = expr_is_reduce(e.op);
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) reads_reduce[i] = reads_reduce[i] || reads_reduce[o];
  }
  f.elements_apart = !f.row_values_only;
  for (size_t j = 0; j < k.stores.size(); ++j)
    if (!f.row_output[j]) f.elements_apart = f.elements_apart && !reads_reduce[k.stores[j]];
  bool row_size = false;
  for (const Expr& e : k.exprs) row_size = row_size || e.op == ExprOp::RowSize;
  f.elements_by_chunks = f.elements_apart && !first && !row_size;
  f.column_ok = column_kernel_ok(k);
  f.column_epilogue = column_kernel_has_epilogue(k);
  // Reduces sharing a load (x.sum(0) and x.amax(0) in one kernel) read it once where eager
  // reads it per reduction: not plain.
  std::vector<int32_t> loads = f.loaded_reduced;
  std::sort(loads.begin(), loads.end());
  f.plain_reduces =
      f.plain_reduces && std::adjacent_find(loads.begin(), loads.end()) == loads.end();
  f.column_slots = static_cast<size_t>(column_scratch_slots(k));
  f.stash_values = row_stash(k).size();
  f.pipelined_pass = row_pipelined_pass(k, isa);
  f.elements_by_chunks = f.elements_by_chunks && f.stash_values == 0 && f.pipelined_pass < 0;
  return f;
}

bool column_reduction_launches(const DimVector& sizes, int reduced_dims, int inner_dims) {
  static const ReduceFacts row_values = [] {  // a kernel of row values only, nothing more
    ReduceFacts f;
    f.row_values_only = true;
    return f;
  }();
  return sizes_allow_launch(row_values, sizes, reduced_dims, inner_dims);
}

bool CpuKernel::may_launch(const DimVector& sizes, int reduced_dims, int inner_dims) const {
  return !reduces() || sizes_allow_launch(facts_, sizes, reduced_dims, inner_dims);
}

bool CpuKernel::can_launch(const LaunchArgs& args) const {
  if (!reduces()) return true;
  if (!sizes_allow_launch(facts_, args.sizes, args.reduced_dims, args.inner_dims)) return false;
  if (args.inner_dims > 0) return split_cols(k_, facts_, args).why.empty();
  return !split_rows(k_, facts_, args).layout.empty();
}

namespace {

// A launch of long rows split across the threads by chunks (long_rows_want_threads;
// row_program.h words 3 and 4): level by level (reduce_levels), calls over runs of one row's
// chunks reduce that level's Reduces chunk by chunk into slots, the lower levels' Reduces
// combining their slots to the whole row's values (which the level's elements may read: var's
// mean), the higher levels' reducing nothing (a piece of no elements); their row values go to a
// dummy. A last call per row combines every Reduce's slots and stores the row values. Each chunk
// is reduced by the pieces row_program gives it, and the slots meet in row_program's tree: the
// bits of a one-call row, and eager's, whatever the threads. `row_ptrs(r, p)`: row r's operand
// pointers; `step[j]`: operand j's bytes per element along the row (0: broadcast).
//
// With element outputs (`row_output` not null: ReduceFacts::elements_by_chunks, none reads a row
// value) those calls walk no elements (n_inner 0: the element pass stores nothing; the Reduce
// passes follow their programs), and afterwards calls over pieces of each row, every Reduce
// given a program of no elements and the row values going to a dummy, store the elements of
// their pieces (n_inner the piece's length): each element the same instructions as in a
// one-call row. In that order because an element output may have taken over the buffer of an
// input the Reduces read (JitPlan's donation: a one-call row reduces before it stores too).
template <class RowPtrs>
void run_row_chunks(const LoopKernel& k, KernelFn fn, int64_t rows, int64_t n,
                    const SmallVector<uint64_t, 16>& words, const RowPtrs& row_ptrs,
                    const std::vector<int64_t>& step,
                    const std::vector<uint8_t>* row_output = nullptr) {
  const size_t nops = step.size();
  const size_t np = static_cast<size_t>(k.num_params());
  const size_t nout = static_cast<size_t>(k.num_outputs());
  std::vector<const Expr*> reduces;
  for (const Expr& e : k.exprs)
    if (expr_is_reduce(e.op)) reduces.push_back(&e);
  const std::vector<int> level = reduce_levels(k);
  const int levels = *std::max_element(level.begin(), level.end()) + 1;
  const int64_t chunks = row_chunks(n);
  // Slot of Reduce q, row r, chunk c: (q * rows + r) * chunks + c.
  std::vector<uint64_t> slots(reduces.size() * static_cast<size_t>(rows * chunks), 0);
  auto slots_of = [&](size_t q, int64_t r) {
    return slots.data() + (static_cast<int64_t>(q) * rows + r) * chunks;
  };
  // Each Reduce's tree over each row's slots (read when the call runs: made once).
  std::vector<std::vector<int64_t>> trees;
  for (size_t q = 0; q < reduces.size(); ++q)
    for (int64_t r = 0; r < rows; ++r) trees.push_back(row_program_partials(n, slots_of(q, r)));
  auto tree_of = [&](size_t q, int64_t r) -> const std::vector<int64_t>& {
    return trees[q * static_cast<size_t>(rows) + static_cast<size_t>(r)];
  };
  const std::vector<int64_t> nothing = {1, 0, 0, 0};
  const std::vector<int64_t> no_strides(nops, 0);
  // One call: Reduce q's program `program_of(q)` (kept alive by `made` when made for the call),
  // row values to `outputs` (or a dummy).
  auto call = [&](int64_t r, int64_t first_chunk, char* const* outputs, const auto& program_of) {
    std::vector<std::vector<int64_t>> made;
    made.reserve(reduces.size());
    SmallVector<uint64_t, 16> local = words;
    for (size_t q = 0; q < reduces.size(); ++q)
      local[np + q] = reinterpret_cast<uintptr_t>(program_of(q, made));
    alignas(64) uint64_t dummy[8 * 8] = {};
    SmallVector<char*, 8> p(nops);
    row_ptrs(r, p.data());
    for (size_t j = 0; j < nops; ++j) {
      if (j < nout)
        p[j] = outputs != nullptr ? outputs[j] : reinterpret_cast<char*>(dummy + 8 * (j % 8));
      else
        p[j] += first_chunk * kRowProgramChunk * step[j];
    }
    fn(p.data(), no_strides.data(), no_strides.data(), row_output != nullptr ? 0 : n, 1,
       local.data());
  };
  for (int l = 0; l < levels; ++l) {
    parallel_for(0, rows * chunks, 1, [&](int64_t b, int64_t e) {
      while (b < e) {
        const int64_t r = b / chunks, c0 = b % chunks, c1 = std::min(chunks, c0 + (e - b));
        call(r, c0, nullptr,
             [&](size_t q, std::vector<std::vector<int64_t>>& made) -> const int64_t* {
               const Expr& red = *reduces[q];
               if (level[q] < l) return tree_of(q, r).data();
               if (level[q] > l) return nothing.data();
               made.push_back(row_program_chunks(red.op, red.type, n, c0, c1, slots_of(q, r) + c0));
               return made.back().data();
             });
        b += c1 - c0;
      }
    });
  }
  for (int64_t r = 0; r < rows; ++r) {
    SmallVector<char*, 8> p(nops);
    row_ptrs(r, p.data());
    call(r, 0, p.data(),
         [&](size_t q, std::vector<std::vector<int64_t>>&) { return tree_of(q, r).data(); });
  }
  if (row_output == nullptr) return;
  SmallVector<uint64_t, 16> none = words;
  for (size_t q = 0; q < reduces.size(); ++q)
    none[np + q] = reinterpret_cast<uintptr_t>(nothing.data());
  // The elements keep no order: pieces of whole 1024-element blocks (so every piece starts 64
  // bytes aligned wherever its row does, as streaming stores need), about four per thread, up to
  // a chunk (a row of two chunks on 16 threads got two calls).
  const int64_t threads = num_threads();
  int64_t piece = (rows * n + 4 * threads - 1) / (4 * threads) / rows;
  piece = std::clamp<int64_t>((piece + 1023) / 1024 * 1024, 4096, kRowProgramChunk);
  const int64_t pieces = (n + piece - 1) / piece;
  parallel_for(0, rows * pieces, 1, [&](int64_t b, int64_t e) {
    alignas(64) uint64_t dummy[8 * 8] = {};
    while (b < e) {
      const int64_t r = b / pieces, c0 = b % pieces, c1 = std::min(pieces, c0 + (e - b));
      SmallVector<char*, 8> p(nops);
      row_ptrs(r, p.data());
      for (size_t j = 0; j < nops; ++j)
        if (j < nout && (*row_output)[j])
          p[j] = reinterpret_cast<char*>(dummy + 8 * (j % 8));
        else
          p[j] += c0 * piece * step[j];
      const int64_t len = std::min(n, c1 * piece) - c0 * piece;
      fn(p.data(), no_strides.data(), no_strides.data(), len, 1, none.data());
      b += c1 - c0;
    }
  });
}

}  // namespace

std::shared_ptr<const CpuKernel::RowPrograms> CpuKernel::row_programs(int64_t n) {
  {
    std::lock_guard lock(mu_);
    if (programs_ && programs_->n == n) return programs_;
  }
  auto made = std::make_shared<RowPrograms>();
  made->n = n;
  for (const ReduceFacts::Reduce& e : facts_.reduces)
    made->programs.push_back(row_program(e.op, e.type, n));
  std::lock_guard lock(mu_);
  programs_ = made;
  return made;
}

// A row kernel: the reduced dims (the last args.reduced_dims) coalesce into one row, contiguous
// or broadcast in every operand (else no machine code: the plan runs the step's nodes eagerly,
// can_launch); the kept dims are walked as a pointwise kernel's rows, split across threads by
// whole rows, so a row's result never depends on the thread count.
bool CpuKernel::launch_rows(const LaunchArgs& args, bool decline) {
  const size_t nops = args.ptrs.size();
  const RowSplit split = split_rows(k_, facts_, args);
  if (split.layout.empty()) {
    KILN_CHECK(decline, "cpu row kernel: {}", split.why);
    return false;
  }
  const CoalescedLaunch& c = split.kept;
  for (int64_t s : c.sizes)
    if (s == 0) return true;
  const int64_t n = split.n;
  const SmallVector<InnerLayout, 8>& layout = split.layout;
  const size_t kr = c.sizes.size();
  // Large element outputs go around the caches as in pointwise kernels, when every row starts
  // vector-aligned (the row values are a few bytes per row: plain stores).
  const int64_t vec_bytes = isa_ == JitIsa::Avx512 ? 64 : isa_ == JitIsa::Avx2 ? 32 : 16;
  int64_t rows = 1;
  for (int64_t s : c.sizes) rows *= s;
  bool streaming = false;
  for (int32_t j = 0; j < k_.num_outputs(); ++j) {
    if (facts_.row_output[j]) continue;
    const int64_t es = static_cast<int64_t>(itemsize(k_.output_dtype(j)));
    bool ok = k_.output_dtype(j) != DType::Bool && rows * n * es >= kStreamingBytes &&
              reinterpret_cast<uintptr_t>(args.ptrs[j]) % vec_bytes == 0;
    for (size_t d = 0; d < kr && ok; ++d) ok = c.stride(j, d) % vec_bytes == 0;
    if (!ok) {
      streaming = false;
      break;
    }
    streaming = true;
  }
  // A pipelined kernel's element bodies follow the pieces of the pass that carries them.
  if (const int fuse = facts_.pipelined_pass; streaming && fuse >= 0)
    streaming = row_pieces_aligned(row_programs(n)->programs[static_cast<size_t>(fuse)],
                                   cpu_kernel_lanes(k_, isa_));
  // Baseline code until this layout's rendering is made (baseline_row_kernel.h): not for long
  // rows split across threads by chunks; only until the rendering lands where it would cost
  // more than a render (pays: a progressive launch, by blocks of rows).
  const bool chunked =
      long_rows_want_threads(rows, n) && (facts_.splits_long_rows || facts_.elements_by_chunks);
  StoreChoice::Pick stores{false, false};
  bool progressive = false;
  KernelFn fn =
      launch_code(baseline_rows_ != nullptr && !chunked && BaselineRowKernel::takes_rows(n),
                  baseline_rows_ != nullptr && baseline_rows_->pays(rows * n),
                  {layout.data(), layout.size()}, streaming, false, false, stores, progressive);

  // Params at p * 8 bytes, then a pointer to each Reduce's row program (render_reduce.h).
  const size_t np = static_cast<size_t>(k_.num_params());
  SmallVector<uint64_t, 16> words(np + facts_.reduces.size() + 1, 0);
  pack_params(args, words.data());

  const int64_t n_outer = c.sizes[kr - 1];
  SmallVector<int64_t, 8> outer(nops), inner(nops, 0);
  for (size_t j = 0; j < nops; ++j) outer[j] = c.stride(j, kr - 1);
  // Row r's operand pointers (r counts the kept dims' indices, the innermost fastest).
  auto row_ptrs = [&](int64_t r, char** p) {
    for (size_t j = 0; j < nops; ++j) p[j] = args.ptrs[j];
    for (size_t d = kr; d-- > 0;) {
      const int64_t idx = r % c.sizes[d];
      r /= c.sizes[d];
      for (size_t j = 0; j < nops; ++j) p[j] += idx * c.stride(j, d);
    }
  };
  // Timed whichever way the rows run (a pick left timed but never finished would stream
  // untimed from then on).
  const StoreTrial trial(&stores_, stores, rows * n, name_, logging::Subsystem::Jit);
  if (chunked) {
    std::vector<int64_t> step(nops, 0);
    for (size_t j = 0; j < nops; ++j)
      if (layout[j] == InnerLayout::Contiguous)
        step[j] = static_cast<int64_t>(itemsize(k_.operand_dtype(static_cast<int32_t>(j))));
    const int64_t t0 = profiler::enabled() ? profiler::now_ns() : 0;
    run_row_chunks(k_, fn, rows, n, words, row_ptrs, step,
                   facts_.elements_by_chunks ? &facts_.row_output : nullptr);
    cpu_jit_counters().split_row_launches.fetch_add(1, std::memory_order_relaxed);
    if (facts_.elements_by_chunks)
      cpu_jit_counters().split_element_launches.fetch_add(1, std::memory_order_relaxed);
    if (t0 != 0) profiler::record_kernel_launch(name_, t0, profiler::now_ns());
    return true;
  }
  const std::shared_ptr<const RowPrograms> held = row_programs(n);
  const std::vector<std::vector<int64_t>>& programs = held->programs;
  for (size_t r = 0; r < programs.size(); ++r)
    words[np + r] = reinterpret_cast<uintptr_t>(programs[r].data());
  // Scratch rows of the rendering (render_reduce.h).
  auto stash_of = [&](KernelFn code) {
    return code == nullptr ? size_t{0}
                           : row_scratch_words(facts_.stash_values, facts_.pipelined_pass >= 0,
                                               k_.num_outputs(), n);
  };
  size_t stash = stash_of(fn);
  auto run_rows = [&](int64_t r0, int64_t r1) {
    SmallVector<char*, 8> p(nops);
    SmallVector<uint64_t, 16> local;
    std::unique_ptr<uint64_t[]> scratch;
    const void* params = words.data();
    if (stash > 0) {  // this thread's scratch rows, from a cache line on
      scratch.reset(new uint64_t[stash + 8]);
      local = words;
      local[np + programs.size()] =
          (reinterpret_cast<uintptr_t>(scratch.get()) + 63) & ~uintptr_t{63};
      params = local.data();
    }
    while (r0 < r1) {
      row_ptrs(r0, p.data());
      const int64_t count = std::min(r1 - r0, n_outer - r0 % n_outer);
      if (fn != nullptr)
        fn(p.data(), inner.data(), outer.data(), n, count, params);
      else
        baseline_rows_->run({layout.data(), layout.size()}, p.data(), outer.data(), n, count,
                            words.data(), programs);
      r0 += count;
    }
  };
  const int64_t t0 = profiler::enabled() ? profiler::now_ns() : 0;
  int64_t r0 = 0;  // the rows left to the rendering from r0 on
  if (progressive) {
    r0 = baseline_until_rendered(rows, kProgressiveBlockElements / std::max<int64_t>(n, 1),
                                 {layout.data(), layout.size()}, streaming, false, fn, stores,
                                 run_rows);
    if (fn == nullptr) r0 = rows;
    stash = stash_of(fn);
  }
  if (r0 == rows) {  // baseline code ran them all
  } else if (num_threads() <= 1 || rows - r0 < 2 || (rows - r0) * n <= kParallelGrain ||
             in_parallel_region()) {
    run_rows(r0, rows);
  } else {
    parallel_for(r0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)),
                 run_rows);
  }
  if (t0 != 0) profiler::record_kernel_launch(name_, t0, profiler::now_ns());
  return true;
}

// A column kernel: each call of the function reduces the rows of a block of columns of one
// outer index; threads split the (outer index, column block) pairs, never a column, so a result
// never depends on the thread count.
bool CpuKernel::launch_cols(const LaunchArgs& args, bool decline) {
  const size_t nops = args.ptrs.size();
  const ColSplit split = split_cols(k_, facts_, args);
  if (!split.why.empty()) {
    KILN_CHECK(decline, "cpu column kernel: {}", split.why);
    return false;
  }
  for (int64_t s : split.outer.sizes)
    if (s == 0) return true;
  if (split.w == 0) return true;
  const int64_t n = split.n, w = split.w;
  // Params at p * 8 bytes, then a pointer to the column program, then each thread's scratch
  // for the partial results (render_cols.h).
  const std::vector<int64_t> program = column_program(n);
  const size_t np = static_cast<size_t>(k_.num_params());
  // np + 2: the call's first row (a chunk's); np + 3: all the rows (render_cols.h).
  SmallVector<uint64_t, 16> words(np + 4, 0);
  words[np + 3] = static_cast<uint64_t>(n);
  pack_params(args, words.data());
  words[np] = reinterpret_cast<uintptr_t>(program.data());

  const CoalescedLaunch& co = split.outer;
  int64_t outer = 1;
  for (int64_t s : co.sizes) outer *= s;
  const ColumnCalls calls = column_calls(outer, n, w);
  const int64_t width = calls.width;
  const int64_t blocks = (w + width - 1) / width;
  SmallVector<int64_t, 8> col_bytes(nops, 0);
  for (size_t j = 0; j < nops; ++j)
    if (split.layout[j] == InnerLayout::Contiguous)
      col_bytes[j] = static_cast<int64_t>(itemsize(k_.operand_dtype(static_cast<int32_t>(j))));
  // Large element outputs go around the caches (as in pointwise and row kernels) where every
  // vector store is aligned: the base, the row and outer strides and the calls' first columns.
  const int64_t vec_bytes = isa_ == JitIsa::Avx512 ? 64 : isa_ == JitIsa::Avx2 ? 32 : 16;
  bool streaming = false;
  for (int32_t j = 0; j < k_.num_outputs(); ++j) {
    if (facts_.row_output[j]) continue;
    const int64_t es = static_cast<int64_t>(itemsize(k_.output_dtype(j)));
    bool ok = k_.output_dtype(j) != DType::Bool && outer * n * w * es >= kStreamingBytes &&
              reinterpret_cast<uintptr_t>(args.ptrs[j]) % vec_bytes == 0 &&
              split.row_stride[j] % vec_bytes == 0 && width * es % vec_bytes == 0;
    for (size_t d = 0; d < co.sizes.size() && ok; ++d) ok = co.stride(j, d) % vec_bytes == 0;
    if (!ok) {
      streaming = false;
      break;
    }
    streaming = true;
  }
  // Baseline code until this layout's rendering is made (baseline_column_kernel.h): not where
  // the rows split across threads by chunks; only until the rendering lands where it would cost
  // more than a render (pays: a progressive launch, by blocks of columns).
  StoreChoice::Pick stores{false, false};
  bool progressive = false;
  KernelFn fn = launch_code(baseline_cols_ != nullptr && !calls.split_rows && n > 0,
                            baseline_cols_ != nullptr && baseline_cols_->pays(outer * n * w),
                            {split.layout.data(), split.layout.size()}, streaming, true, false,
                            stores, progressive);
  cpu_jit_counters().column_launches.fetch_add(1, std::memory_order_relaxed);
  // A level of the scratch: every Reduce's row of columns, 8 bytes a column (render_cols.h).
  const int64_t wpad = (std::min(width, w) + 15) / 16 * 16;
  const int64_t level_words = static_cast<int64_t>(facts_.column_slots) * wpad;
  const size_t scratch_words = static_cast<size_t>(program_depth(program) * level_words);
  // The operands of call t (outer index, block of columns) at row 0 in p; returns its columns.
  auto place = [&](int64_t t, SmallVector<char*, 8>& p) {
    const int64_t b = t % blocks;
    int64_t rest = t / blocks;
    for (size_t j = 0; j < nops; ++j) p[j] = args.ptrs[j] + b * width * col_bytes[j];
    for (size_t d = co.sizes.size(); d-- > 0;) {
      const int64_t idx = rest % co.sizes[d];
      rest /= co.sizes[d];
      for (size_t j = 0; j < nops; ++j) p[j] += idx * co.stride(j, d);
    }
    return std::min(width, w - b * width);
  };
  const int64_t items = outer * blocks;
  // A task's room for its calls: the operands' pointers, its scratch, its launch words.
  struct CallRoom {
    SmallVector<char*, 8> p;
    std::unique_ptr<uint64_t[]> scratch;
    SmallVector<uint64_t, 16> local;
  };
  auto room = [&] {
    CallRoom r{SmallVector<char*, 8>(nops),
               std::unique_ptr<uint64_t[]>(new uint64_t[scratch_words + 8]), words};
    // From a cache line on: new[] gives 16 bytes, and a level's 64-byte loads and stores of
    // every row then split lines (a plain [16, 512, 512].sum(1) ran 1.3-1.5x eager's time).
    r.local[np + 1] = (reinterpret_cast<uintptr_t>(r.scratch.get()) + 63) & ~uintptr_t{63};
    return r;
  };
  const int64_t t0 = profiler::enabled() ? profiler::now_ns() : 0;
  const StoreTrial trial(&stores_, stores, outer * n * w, name_, logging::Subsystem::Jit);
  if (calls.split_rows) {
    // 1. Each (call, chunk) reduces the chunk's rows and pops its level into a slot (its row
    //    values go to a dummy; element values of the reducing pass to their rows; no epilogue
    //    rows). 2. Each call pushes its chunks' slots in the tree and stores the row values
    //    (with an epilogue, it pops the combined level into a slot of its own). 3. With an
    //    epilogue, each (call, chunk) pushes that level and walks the chunk's epilogue rows.
    cpu_jit_counters().split_column_launches.fetch_add(1, std::memory_order_relaxed);
    const int64_t chunks = (n + kColRowChunk - 1) / kColRowChunk;
    const bool epi = facts_.column_epilogue;
    const size_t slot_words = static_cast<size_t>(items * (chunks + 1) * level_words);
    std::unique_ptr<uint64_t[]> slots(new uint64_t[slot_words]);
    auto slot = [&](int64_t item, int64_t c) {  // c == chunks: the item's combined level
      return reinterpret_cast<char*>(slots.get() + (item * (chunks + 1) + c) * level_words);
    };
    const int64_t slot_bytes = level_words * 8;
    // Phases 1 and 3: call (item, chunk c), the chunk's rows at row 0, row values to a dummy.
    auto chunk_calls = [&](bool epilogue_rows) {
      parallel_for(0, items * chunks, 1, [&](int64_t b, int64_t e) {
        CallRoom r = room();
        SmallVector<char*, 8>& p = r.p;
        SmallVector<uint64_t, 16>& local = r.local;
        std::unique_ptr<uint64_t[]> dummy(
            new uint64_t[static_cast<size_t>(k_.num_outputs() * wpad)]);
        for (int64_t t = b; t < e; ++t) {
          const int64_t item = t / chunks, c = t % chunks;
          const int64_t rows = std::min(kColRowChunk, n - c * kColRowChunk);
          const int64_t cols = place(item, p);
          for (size_t j = 0; j < nops; ++j) p[j] += c * kColRowChunk * split.row_stride[j];
          for (int32_t j = 0; j < k_.num_outputs(); ++j)
            if (facts_.row_output[j]) p[j] = reinterpret_cast<char*>(dummy.get() + j * wpad);
          const std::vector<int64_t> prog =
              epilogue_rows ? column_program_pushing(slot(item, chunks))
                            : column_program_chunks(n, c, c + 1, slot(item, c), slot_bytes);
          local[np] = reinterpret_cast<uintptr_t>(prog.data());
          local[np + 2] = static_cast<uint64_t>(c * kColRowChunk);
          fn(p.data(), split.row_stride.data(), split.row_stride.data(), cols,
             epilogue_rows ? rows : 0, local.data());
        }
      });
    };
    chunk_calls(false);
    parallel_for(0, items, 1, [&](int64_t b, int64_t e) {
      CallRoom r = room();
      for (int64_t t = b; t < e; ++t) {
        const int64_t cols = place(t, r.p);
        // With an epilogue, the combined level is kept for the epilogue's chunks.
        const std::vector<int64_t> tree =
            column_program_partials(n, slot(t, 0), slot_bytes, epi ? slot(t, chunks) : nullptr);
        r.local[np] = reinterpret_cast<uintptr_t>(tree.data());
        fn(r.p.data(), split.row_stride.data(), split.row_stride.data(), cols, 0, r.local.data());
      }
    });
    if (epi) chunk_calls(true);
    if (t0 != 0) profiler::record_kernel_launch(name_, t0, profiler::now_ns());
    return true;
  }
  auto run = [&](int64_t b, int64_t e) {
    CallRoom r = room();
    for (int64_t t = b; t < e; ++t) {
      const int64_t cols = place(t, r.p);
      if (fn != nullptr)
        fn(r.p.data(), split.row_stride.data(), split.row_stride.data(), cols, n, r.local.data());
      else
        baseline_cols_->run({split.layout.data(), split.layout.size()}, r.p.data(),
                            split.row_stride.data(), n, cols, words.data(), program);
    }
  };
  int64_t done = 0;  // the calls left to the rendering from `done` on
  if (progressive) {
    done = baseline_until_rendered(
        items, kProgressiveBlockElements / std::max<int64_t>(n * width, 1),
        {split.layout.data(), split.layout.size()}, streaming, true, fn, stores, run);
    if (fn == nullptr) done = items;
  }
  if (done == items) {  // baseline code ran them all
  } else if (num_threads() <= 1 || items - done < 2 ||
             (items - done) * n * width <= kParallelGrain || in_parallel_region()) {
    run(done, items);
  } else {
    parallel_for(done, items, 1, run);
  }
  if (t0 != 0) profiler::record_kernel_launch(name_, t0, profiler::now_ns());
  return true;
}

}  // namespace kiln::jit

#include "jit/cpu/cpu_target.h"

#include <asmjit/x86.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/math.h"
#include "jit/cpu/render.h"
#include "jit/cpu/render_cols.h"
#include "jit/cpu/render_reduce.h"
#include "jit/cpu/store_choice.h"
#include "jit/loop/kernel_cache.h"
#include "jit/loop/row_program.h"
#include "ops/cpu/pointwise_table.h"  // kStreamingBytes: the eager kernels' threshold too
#include "runtime/config.h"
#include "runtime/error.h"
#include "runtime/logging.h"
#include "runtime/parallel.h"
#include "runtime/profiler.h"
#include "tracer/dump.h"

namespace kiln::jit {

namespace {

std::atomic<int> g_injected_faults{0};

asmjit::JitRuntime& jit_runtime() {
  static auto* rt = new asmjit::JitRuntime();  // never destroyed: kernels live for the process
  return *rt;
}

// Per-kernel rendering times (cpu_jit_compile_times): a few bytes per kernel, like the kernels.
struct CompileTimes {
  std::mutex mu;
  std::vector<int64_t> ns;
};
CompileTimes& compile_times() {
  static auto* t = new CompileTimes();
  return *t;
}

KernelCache<KernelFn>& fn_cache() {
  static auto* c = new KernelCache<KernelFn>();
  return *c;
}

// The cache key of one rendering: the kernel and everything the variant changes.
std::vector<uint64_t> render_key(const LoopKernel& k, const KernelVariant& v, RenderPath path) {
  std::vector<uint64_t> key = encode(k);
  key.push_back(0x6370753a00000000ull | static_cast<uint64_t>(v.isa));  // "cpu:" + isa
  key.push_back(v.streaming);
  key.push_back(static_cast<uint64_t>(v.unroll));
  key.push_back(v.columns);
  key.push_back(v.pipeline);
  for (InnerLayout l : v.layout) key.push_back(static_cast<uint64_t>(l));
  // Which emitter may render it (KILN_JIT_ASSEMBLER): the code differs (registers), the results
  // do not; keyed so that tests can compare the two renderings of one kernel.
  key.push_back(static_cast<uint64_t>(path));
  return key;
}

// KILN_DUMP=asm: one file per rendering (the loop IR, for reference, then the assembly).
void dump_assembly(const LoopKernel& k, const KernelVariant& v, const std::string& assembly) {
  std::string layouts;
  for (InnerLayout l : v.layout)
    layouts += l == InnerLayout::Contiguous ? 'c' : l == InnerLayout::Broadcast ? 'b' : 's';
  if (v.streaming) layouts += "-nt";
  if (v.unroll > 1) layouts += fmt::format("-u{}", v.unroll);
  if (v.columns) layouts += "-cols";
  if (!v.pipeline) layouts += "-nopipe";
  const std::string name =
      fmt::format("kernel-{:016x}-{}-{}.s", hash_words(encode(k)), jit_isa_name(v.isa), layouts);
  std::string ir = to_text(k), commented;
  for (size_t at = 0; at < ir.size();) {  // the IR as assembler comments
    const size_t nl = ir.find('\n', at);
    commented += "# " + ir.substr(at, nl == std::string::npos ? std::string::npos : nl - at) + "\n";
    at = nl == std::string::npos ? ir.size() : nl + 1;
  }
  tracer::dump_text(tracer::DumpKind::Asm, name, commented + assembly);
}

// The calling thread's minor page faults so far: a render's first touches of memory (docs/jit.md
// "The warm-up"), printed with KILN_LOG=jit=debug.
int64_t thread_minor_faults() {
  rusage u{};
  return ::getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_minflt : 0;
}

// The emitter KILN_JIT_ASSEMBLER selects.
RenderPath configured_render_path() {
  return config().jit_assembler ? RenderPath::Auto : RenderPath::Compiler;
}

KernelFn render(const LoopKernel& k, const KernelVariant& v) {
  const RenderPath path = configured_render_path();
  return fn_cache().get_or_make(render_key(k, v, path), [&] {
    if (g_injected_faults.load() > 0 && g_injected_faults.fetch_sub(1) > 0)
      fail("cpu kernel: injected codegen fault");
    const int64_t faults0 = thread_minor_faults();
    const int64_t t0 = profiler::now_ns();
    const bool dump = tracer::dump_settings().wants(tracer::DumpKind::Asm);
    RenderedKernel r = render_cpu_kernel(jit_runtime(), k, v, dump, path);
    const int64_t t1 = profiler::now_ns();
    if (profiler::enabled())
      profiler::record_kernel_compile(
          fmt::format("kernel {:016x} {}", hash_words(encode(k)), jit_isa_name(v.isa)), t0, t1);
    CpuJitCounters& c = cpu_jit_counters();
    c.kernels.fetch_add(1);
    if (r.assembler) c.assembled.fetch_add(1);
    if (!r.fallback.empty()) {  // the fast path gave this kernel up: rendered by the Compiler
      c.assembler_fallbacks.fetch_add(1);
      profiler::record_fallback("cpu kernel assembler", r.fallback);
      KILN_DEBUG(Jit, "cpu kernel: the fast path gave up ({}); rendered by the Compiler",
                 r.fallback);
    }
    c.compile_ns.fetch_add(t1 - t0);
    int64_t prev = c.max_compile_ns.load();
    while (prev < t1 - t0 && !c.max_compile_ns.compare_exchange_weak(prev, t1 - t0)) {
    }
    {
      CompileTimes& times = compile_times();
      std::lock_guard lock(times.mu);
      times.ns.push_back(t1 - t0);
    }
    KILN_DEBUG(Jit, "cpu kernel: {} bytes of {} code in {} us ({}; {} minor page faults)",
               r.code_bytes, jit_isa_name(v.isa), (t1 - t0) / 1000,
               r.assembler ? "assembler" : "compiler", thread_minor_faults() - faults0);
    if (dump) dump_assembly(k, v, r.assembly);
    return r.fn;
  });
}

// KILN_JIT_PIPELINE=0 turns off the software-pipelined loops (docs/jit.md "Kernels"), read
// once per process: for measuring them against the plain unrolled loop.
bool pipeline_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_JIT_PIPELINE");
    return v == nullptr || std::string(v) != "0";
  }();
  return on;
}

class CpuKernel final : public CompiledKernel {
 public:
  // The ISA and the unroll (KILN_JIT_UNROLL, else the target's choice) are fixed here, at
  // compile time, for every variant.
  CpuKernel(const LoopKernel& k, JitIsa isa, const CpuLaunchHint& hint)
      : CpuKernel(k, cpu_target_variant(k, isa), hint) {}
  CpuKernel(const LoopKernel& k, const KernelVariant& first, const CpuLaunchHint& hint)
      : k_(k),
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
    const bool columns = hint.columns && k.has_reduce() && column_kernel_ok(k);
    const StoreChoice::Mode mode = StoreChoice::mode_from(config().jit_streaming);
    const bool large = large_outputs(hint.elements);
    if (large && mode != StoreChoice::Mode::Off) variant(first.layout, true, columns);
    if (!large || mode != StoreChoice::Mode::On) variant(first.layout, false, columns);
  }
  const LoopKernel& source() const override { return k_; }

  void launch(const LaunchArgs& args) override;

 private:
  void launch_rows(const LaunchArgs& args);  // a row kernel (k_.has_reduce())
  void launch_cols(const LaunchArgs& args);  // a column kernel (args.inner_dims > 0)
  bool can_launch(const LaunchArgs& args) const override;
  // The machine code for one layout of the operands (rendered on first sight). The variant is
  // keyed by every operand's layout, whatever the operand count.
  KernelFn variant(const std::vector<InnerLayout>& layout, bool streaming, bool columns = false) {
    {
      std::lock_guard lock(mu_);
      for (const Variant& v : variants_)
        if (v.streaming == streaming && v.columns == columns && v.layout == layout) return v.fn;
    }
    KernelFn fn = render(k_, KernelVariant{isa_, layout, streaming, unroll_, columns, pipeline_});
    std::lock_guard lock(mu_);
    variants_.push_back({layout, streaming, columns, fn});
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

  // Whether every element output of a launch over `elements` elements has kStreamingBytes or
  // more (a row kernel's row values do not count; at least one element output): the size half of
  // the launches' test for non-temporal stores, the other half (layouts, alignment) assumed.
  bool large_outputs(int64_t elements) const {
    const std::vector<uint8_t> row = k_.has_reduce() ? k_.row_values() : std::vector<uint8_t>();
    bool any = false;
    for (int32_t j = 0; j < k_.num_outputs(); ++j) {
      if (!row.empty() && row[k_.stores[j]]) continue;
      const DType t = k_.output_dtype(j);
      if (t == DType::Bool || elements * static_cast<int64_t>(itemsize(t)) < kStreamingBytes)
        return false;
      any = true;
    }
    return any;
  }

  LoopKernel k_;
  JitIsa isa_;
  int unroll_;
  bool pipeline_;     // KILN_JIT_PIPELINE, fixed at compile time like the unroll
  std::string name_;  // in profiler traces: the hash of its loop IR, as in KILN_DUMP file names
  std::mutex mu_;
  struct Variant {
    std::vector<InnerLayout> layout;
    bool streaming;
    bool columns;
    KernelFn fn;
  };
  std::vector<Variant> variants_;
  StoreChoice stores_;  // streaming or ordinary stores for large outputs (store_choice.h)
};

// Any rank, coalesced to as few dims as the strides allow (innermost last), at least one.
struct Coalesced {
  DimVector sizes;
  std::vector<DimVector> strides;  // [operand][dim]
};

Coalesced coalesce(const LaunchArgs& a) {
  const size_t nops = a.ptrs.size();
  Coalesced c;
  c.strides.resize(nops);
  for (size_t d = a.sizes.size(); d-- > 0;) {  // innermost first
    if (a.sizes[d] == 1) continue;
    bool merge = !c.sizes.empty();
    for (size_t j = 0; merge && j < nops; ++j)
      merge = a.strides[j][d] == c.strides[j].back() * c.sizes.back();
    if (merge) {  // dim d continues the inner one: one longer dim with the inner stride
      c.sizes.back() *= a.sizes[d];
      continue;
    }
    c.sizes.push_back(a.sizes[d]);
    for (size_t j = 0; j < nops; ++j) c.strides[j].push_back(a.strides[j][d]);
  }
  if (c.sizes.empty()) {
    c.sizes.push_back(1);
    for (size_t j = 0; j < nops; ++j) c.strides[j].push_back(0);
  }
  // Back to outermost-first.
  std::reverse(c.sizes.begin(), c.sizes.end());
  for (auto& s : c.strides) std::reverse(s.begin(), s.end());
  return c;
}

void CpuKernel::launch(const LaunchArgs& args) {
  const size_t nops = args.ptrs.size();
  KILN_CHECK(static_cast<int32_t>(nops) == k_.num_operands() && args.strides.size() == nops,
             "cpu kernel: launched with {} operands, the kernel has {}", nops, k_.num_operands());
  if (k_.has_reduce()) return args.inner_dims > 0 ? launch_cols(args) : launch_rows(args);
  for (int64_t s : args.sizes)
    if (s == 0) return;
  // A kernel drawing random numbers reads each element's row-major index: a hidden last operand
  // with the index space's row-major strides, coalesced and split with the others, whose
  // "pointer" is the index itself (a number, never dereferenced).
  const bool with_index = k_.uses_index();
  LaunchArgs indexed;
  if (with_index) {
    indexed.sizes = args.sizes;
    indexed.ptrs = args.ptrs;
    indexed.strides = args.strides;
    indexed.ptrs.push_back(nullptr);
    DimVector rm(args.sizes.size(), 0);
    int64_t step = 1;
    for (size_t d = args.sizes.size(); d-- > 0;) {
      rm[d] = step;
      step *= args.sizes[d];
    }
    indexed.strides.push_back(rm);
  }
  const LaunchArgs& a = with_index ? indexed : args;
  const size_t nall = a.ptrs.size();
  Coalesced c = coalesce(a);
  const size_t rank = c.sizes.size();
  const int64_t n_inner = c.sizes[rank - 1];

  std::vector<InnerLayout> layout(nall);
  std::vector<int64_t> inner(nall), outer(nall, 0), esize(nall);
  for (size_t j = 0; j < nall; ++j) {
    esize[j] =
        j < nops ? static_cast<int64_t>(itemsize(k_.operand_dtype(static_cast<int32_t>(j)))) : 1;
    const int64_t s = c.strides[j][rank - 1];
    inner[j] = s;
    const bool output = static_cast<int32_t>(j) < k_.num_outputs();
    if (s == esize[j] || n_inner == 1) {
      layout[j] = InnerLayout::Contiguous;
    } else if (s == 0 && !output) {
      layout[j] = InnerLayout::Broadcast;
    } else {
      layout[j] = InnerLayout::Strided;
    }
    if (rank >= 2) outer[j] = c.strides[j][rank - 2];
  }
  // Large outputs that nothing reads soon go around the caches (non-temporal stores move ~35%
  // more bytes per second here: jit-codegen.md), when every row start is vector-aligned.
  const int64_t vec_bytes = isa_ == JitIsa::Avx512 ? 64 : isa_ == JitIsa::Avx2 ? 32 : 16;
  bool streaming = true;
  int64_t numel = 1;
  for (int64_t s : c.sizes) numel *= s;
  for (int32_t j = 0; j < k_.num_outputs() && streaming; ++j) {
    streaming = layout[j] == InnerLayout::Contiguous && numel * esize[j] >= kStreamingBytes &&
                k_.output_dtype(j) != DType::Bool &&
                reinterpret_cast<uintptr_t>(args.ptrs[j]) % vec_bytes == 0 &&
                (rank < 2 || outer[j] % vec_bytes == 0);
    for (size_t d = 0; d + 2 < rank && streaming; ++d) streaming = c.strides[j][d] % vec_bytes == 0;
  }
  const StoreChoice::Pick stores = pick_stores(streaming);
  const KernelFn fn = variant(layout, stores.streaming);
  cpu_jit_counters().launches.fetch_add(1, std::memory_order_relaxed);

  KILN_CHECK(static_cast<int32_t>(args.params.size()) >= k_.num_params(),
             "cpu kernel: launched with {} parameters, the kernel reads {}", args.params.size(),
             k_.num_params());
  // Param p at p * 8 bytes, in its value type (Scalar::to, as eager converts a Scalar operand).
  const size_t np = static_cast<size_t>(k_.num_params());
  SmallVector<uint64_t, 16> param_words(np + 1, 0);
  for (size_t p = 0; p < np; ++p)
    visit_dtype(k_.params[p], [&]<class T>(TypeTag<T>) {
      const T v = args.params[p].to<T>();
      std::memcpy(&param_words[p], &v, sizeof(T));
    });
  const void* params = param_words.data();

  // Rows: every index of the dims above the innermost, flattened; the outer of the rendered
  // 2-D loop is the innermost of those, the rest are walked here.
  const int64_t n_outer = rank >= 2 ? c.sizes[rank - 2] : 1;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < rank; ++d) rows *= c.sizes[d];
  // Runs rows [r0, r1) over the inner range [i0, i1).
  auto run_rows = [&](int64_t r0, int64_t r1, int64_t i0, int64_t i1) {
    SmallVector<char*, 8> p(nall);
    SmallVector<int64_t, 8> off(nall);
    while (r0 < r1) {
      const int64_t o = r0 % n_outer;
      int64_t rest = r0 / n_outer;
      for (size_t j = 0; j < nall; ++j) off[j] = o * outer[j] + i0 * inner[j];
      for (size_t d = rank >= 2 ? rank - 2 : 0; d-- > 0;) {
        const int64_t idx = rest % c.sizes[d];
        rest /= c.sizes[d];
        for (size_t j = 0; j < nall; ++j) off[j] += idx * c.strides[j][d];
      }
      for (size_t j = 0; j < nops; ++j) p[j] = args.ptrs[j] + off[j];
      if (with_index) p[nops] = reinterpret_cast<char*>(static_cast<uintptr_t>(off[nops]));
      const int64_t count = std::min(r1 - r0, n_outer - o);
      fn(p.data(), inner.data(), outer.data(), i1 - i0, count, params);
      r0 += count;
    }
  };
  const int64_t total = rows * n_inner;
  const int threads = num_threads();
  const int64_t t0 = profiler::enabled() ? profiler::now_ns() : 0;
  const StoreTrial trial(stores_, stores, total, name_);
  if (threads <= 1 || total <= kParallelGrain || in_parallel_region()) {
    run_rows(0, rows, 0, n_inner);
  } else if (rows >= 4 * threads) {
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / n_inner);
    parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) { run_rows(r0, r1, 0, n_inner); });
  } else {  // few long rows: split the inner range in 64-element aligned chunks
    const int64_t chunks = (n_inner + 63) / 64;
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / 64 / rows);
    parallel_for(0, chunks, grain, [&](int64_t c0, int64_t c1) {
      run_rows(0, rows, c0 * 64, std::min(n_inner, c1 * 64));
    });
  }
  if (t0 != 0) profiler::record_kernel_launch(name_, t0, profiler::now_ns());
}

namespace {

// A row kernel's launch split into its kept dims and its row: the row's length, and each
// operand's layout along it (empty with `why` set where the row is not one contiguous or
// broadcast run in every operand).
struct RowSplit {
  LaunchArgs kept;
  int64_t n = 1;
  std::vector<InnerLayout> layout;
  std::string why;
};

RowSplit split_rows(const LoopKernel& k, const LaunchArgs& args) {
  const size_t nops = args.ptrs.size();
  const size_t rank = args.sizes.size();
  KILN_CHECK(args.reduced_dims >= 0 && static_cast<size_t>(args.reduced_dims) <= rank,
             "cpu row kernel: {} reduced dims of a rank-{} index space", args.reduced_dims, rank);
  const size_t nk = rank - static_cast<size_t>(args.reduced_dims);
  RowSplit r;
  LaunchArgs red;
  r.kept.ptrs = red.ptrs = args.ptrs;
  r.kept.strides.resize(nops);
  red.strides.resize(nops);
  for (size_t d = 0; d < rank; ++d) {
    (d < nk ? r.kept : red).sizes.push_back(args.sizes[d]);
    if (d >= nk) r.n *= args.sizes[d];
    for (size_t j = 0; j < nops; ++j)
      (d < nk ? r.kept : red).strides[j].push_back(args.strides[j][d]);
  }
  r.layout.assign(nops, InnerLayout::Contiguous);
  if (r.n > 1) {
    const Coalesced c = coalesce(red);
    if (c.sizes.size() != 1) {
      r.why = "the reduced dims do not form one row";
      r.layout.clear();
      return r;
    }
    for (size_t j = 0; j < nops; ++j) {
      const int64_t s = c.strides[j][0];
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
  const std::vector<uint8_t> row = k.row_values();
  for (int32_t j = 0; j < k.num_outputs(); ++j)
    if (!row[k.stores[j]] && r.layout[j] != InnerLayout::Contiguous) {
      r.why = fmt::format("output {} is broadcast along the row", j);
      r.layout.clear();
      return r;
    }
  return r;
}

// A column kernel's launch (loop_kernel.h "Column kernels") split into its outer dims, its
// reduced rows (one stride per operand) and its columns (contiguous or broadcast per operand);
// `why` says why it has no machine code (the plan then runs the step's nodes eagerly).
struct ColSplit {
  LaunchArgs outer;
  int64_t n = 1, w = 1;
  std::vector<int64_t> row_stride;
  std::vector<InnerLayout> layout;
  std::string why;
};

ColSplit split_cols(const LoopKernel& k, const LaunchArgs& args) {
  const size_t nops = args.ptrs.size();
  const size_t rank = args.sizes.size();
  ColSplit c;
  KILN_CHECK(args.reduced_dims >= 0 && args.inner_dims > 0 &&
                 static_cast<size_t>(args.reduced_dims + args.inner_dims) <= rank,
             "cpu column kernel: {} reduced and {} inner dims of a rank-{} index space",
             args.reduced_dims, args.inner_dims, rank);
  if (!column_kernel_ok(k)) {
    c.why = "an element value reads a reduction's result";
    return c;
  }
  const size_t nb = rank - static_cast<size_t>(args.reduced_dims + args.inner_dims);
  const size_t ni = rank - static_cast<size_t>(args.inner_dims);
  LaunchArgs red, in;
  c.outer.ptrs = red.ptrs = in.ptrs = args.ptrs;
  c.outer.strides.resize(nops);
  red.strides.resize(nops);
  in.strides.resize(nops);
  for (size_t d = 0; d < rank; ++d) {
    LaunchArgs& part = d < nb ? c.outer : d < ni ? red : in;
    part.sizes.push_back(args.sizes[d]);
    if (d >= nb && d < ni) c.n *= args.sizes[d];
    if (d >= ni) c.w *= args.sizes[d];
    for (size_t j = 0; j < nops; ++j) part.strides[j].push_back(args.strides[j][d]);
  }
  c.layout.assign(nops, InnerLayout::Contiguous);
  c.row_stride.assign(nops, 0);
  if (c.w == 0) return c;  // nothing to compute
  // Eager reduces fewer columns as rows (ops/cpu/reduce_plan.cpp): another order.
  if (c.w < 16) {
    c.why = fmt::format("{} columns (eager reduces fewer than 16 as rows)", c.w);
    return c;
  }
  const Coalesced ci = coalesce(in);
  if (ci.sizes.size() != 1) {
    c.why = "the kept inner dims do not form one run of columns";
    return c;
  }
  for (size_t j = 0; j < nops; ++j) {
    const int64_t s = ci.strides[j][0];
    const int64_t es = static_cast<int64_t>(itemsize(k.operand_dtype(static_cast<int32_t>(j))));
    if (s == 0 && static_cast<int32_t>(j) >= k.num_outputs()) {
      c.layout[j] = InnerLayout::Broadcast;
    } else if (s != es) {
      c.why = fmt::format("operand {} has stride {} bytes along the columns", j, s);
      return c;
    }
  }
  if (c.n > 1) {
    const Coalesced cr = coalesce(red);
    if (cr.sizes.size() != 1) {
      c.why = "the reduced dims do not form one run of rows";
      return c;
    }
    for (size_t j = 0; j < nops; ++j) c.row_stride[j] = cr.strides[j][0];
  }
  // A reduced input loaded as is: eager takes the column order only where it is row-major.
  for (const Expr& e : k.exprs) {
    if (!expr_is_reduce(e.op) || k.exprs[e.a].op != ExprOp::Load) continue;
    const size_t j = static_cast<size_t>(k.num_outputs() + k.exprs[e.a].index);
    int64_t expected = static_cast<int64_t>(itemsize(k.inputs[k.exprs[e.a].index]));
    for (size_t d = rank; d-- > 0;) {
      if (args.sizes[d] == 1) continue;
      if (args.strides[j][d] != expected) {
        c.why = fmt::format("reduced operand {} is not row-major (eager gathers it as rows)", j);
        return c;
      }
      expected *= args.sizes[d];
    }
  }
  return c;
}

}  // namespace

bool CpuKernel::can_launch(const LaunchArgs& args) const {
  if (!k_.has_reduce()) return true;
  if (args.inner_dims > 0) return split_cols(k_, args).why.empty();
  return !split_rows(k_, args).layout.empty();
}

// A row kernel: the reduced dims (the last args.reduced_dims) coalesce into one row, contiguous
// or broadcast in every operand (else no machine code: the plan runs the step's nodes eagerly,
// can_launch); the kept dims are walked as a pointwise kernel's rows, split across threads by
// whole rows, so a row's result never depends on the thread count.
void CpuKernel::launch_rows(const LaunchArgs& args) {
  const size_t nops = args.ptrs.size();
  const RowSplit split = split_rows(k_, args);
  KILN_CHECK(!split.layout.empty(), "cpu row kernel: {}", split.why);
  for (int64_t s : split.kept.sizes)
    if (s == 0) return;
  const int64_t n = split.n;
  const LaunchArgs& kept = split.kept;
  const std::vector<InnerLayout>& layout = split.layout;
  const Coalesced c = coalesce(kept);  // rank 1 at least
  const size_t kr = c.sizes.size();
  // Large element outputs go around the caches as in pointwise kernels, when every row starts
  // vector-aligned (the row values are a few bytes per row: plain stores).
  const int64_t vec_bytes = isa_ == JitIsa::Avx512 ? 64 : isa_ == JitIsa::Avx2 ? 32 : 16;
  const std::vector<uint8_t> row = k_.row_values();
  int64_t rows_total = 1;
  for (int64_t s : c.sizes) rows_total *= s;
  bool streaming = false;
  for (int32_t j = 0; j < k_.num_outputs(); ++j) {
    if (row[k_.stores[j]]) continue;
    const int64_t es = static_cast<int64_t>(itemsize(k_.output_dtype(j)));
    bool ok = k_.output_dtype(j) != DType::Bool && rows_total * n * es >= kStreamingBytes &&
              reinterpret_cast<uintptr_t>(args.ptrs[j]) % vec_bytes == 0;
    for (size_t d = 0; d < kr && ok; ++d) ok = c.strides[j][d] % vec_bytes == 0;
    if (!ok) {
      streaming = false;
      break;
    }
    streaming = true;
  }
  // A pipelined kernel's element bodies follow the pieces of the pass that carries them.
  if (const int fuse = row_pipelined_pass(k_, isa_); streaming && fuse >= 0) {
    int r = 0;
    for (const Expr& e : k_.exprs)
      if (expr_is_reduce(e.op) && r++ == fuse)
        streaming = row_pieces_aligned(row_program(e.op, e.type, n), cpu_kernel_lanes(k_, isa_));
  }
  const StoreChoice::Pick stores = pick_stores(streaming);
  const KernelFn fn = variant(layout, stores.streaming);
  cpu_jit_counters().launches.fetch_add(1, std::memory_order_relaxed);

  KILN_CHECK(static_cast<int32_t>(args.params.size()) >= k_.num_params(),
             "cpu kernel: launched with {} parameters, the kernel reads {}", args.params.size(),
             k_.num_params());
  // Params at p * 8 bytes, then a pointer to each Reduce's row program (render_reduce.h).
  const size_t np = static_cast<size_t>(k_.num_params());
  std::vector<std::vector<int64_t>> programs;
  for (const Expr& e : k_.exprs)
    if (expr_is_reduce(e.op)) programs.push_back(row_program(e.op, e.type, n));
  const size_t stash = row_scratch_words(k_, isa_, n);  // scratch rows (render_reduce.h)
  SmallVector<uint64_t, 16> words(np + programs.size() + 1, 0);
  for (size_t p = 0; p < np; ++p)
    visit_dtype(k_.params[p], [&]<class T>(TypeTag<T>) {
      const T v = args.params[p].to<T>();
      std::memcpy(&words[p], &v, sizeof(T));
    });
  for (size_t r = 0; r < programs.size(); ++r)
    words[np + r] = reinterpret_cast<uintptr_t>(programs[r].data());

  const int64_t n_outer = c.sizes[kr - 1];
  int64_t rows = 1;
  for (int64_t s : c.sizes) rows *= s;
  std::vector<int64_t> outer(nops), inner(nops, 0);
  for (size_t j = 0; j < nops; ++j) outer[j] = c.strides[j][kr - 1];
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
      const int64_t o = r0 % n_outer;
      int64_t rest = r0 / n_outer;
      for (size_t j = 0; j < nops; ++j) p[j] = args.ptrs[j] + o * outer[j];
      for (size_t d = kr - 1; d-- > 0;) {
        const int64_t idx = rest % c.sizes[d];
        rest /= c.sizes[d];
        for (size_t j = 0; j < nops; ++j) p[j] += idx * c.strides[j][d];
      }
      const int64_t count = std::min(r1 - r0, n_outer - o);
      fn(p.data(), inner.data(), outer.data(), n, count, params);
      r0 += count;
    }
  };
  const int64_t t0 = profiler::enabled() ? profiler::now_ns() : 0;
  const StoreTrial trial(stores_, stores, rows * n, name_);
  if (num_threads() <= 1 || rows < 2 || rows * n <= kParallelGrain || in_parallel_region())
    run_rows(0, rows);
  else
    parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)), run_rows);
  if (t0 != 0) profiler::record_kernel_launch(name_, t0, profiler::now_ns());
}

// A column kernel: each call of the function reduces the rows of a block of columns of one
// outer index; threads split the (outer index, column block) pairs, never a column, so a result
// never depends on the thread count.
void CpuKernel::launch_cols(const LaunchArgs& args) {
  const size_t nops = args.ptrs.size();
  const ColSplit split = split_cols(k_, args);
  KILN_CHECK(split.why.empty(), "cpu column kernel: {}", split.why);
  for (int64_t s : split.outer.sizes)
    if (s == 0) return;
  if (split.w == 0) return;
  const int64_t n = split.n, w = split.w;
  KILN_CHECK(static_cast<int32_t>(args.params.size()) >= k_.num_params(),
             "cpu kernel: launched with {} parameters, the kernel reads {}", args.params.size(),
             k_.num_params());
  // Params at p * 8 bytes, then a pointer to the column program, then each thread's scratch
  // for the partial results (render_cols.h).
  const std::vector<int64_t> program = column_program(n);
  const size_t np = static_cast<size_t>(k_.num_params());
  SmallVector<uint64_t, 16> words(np + 2, 0);
  for (size_t p = 0; p < np; ++p)
    visit_dtype(k_.params[p], [&]<class T>(TypeTag<T>) {
      const T v = args.params[p].to<T>();
      std::memcpy(&words[p], &v, sizeof(T));
    });
  words[np] = reinterpret_cast<uintptr_t>(program.data());

  const Coalesced co = coalesce(split.outer);  // rank 1 at least
  int64_t outer = 1;
  for (int64_t s : co.sizes) outer *= s;
  // Calls of up to 512 columns (a piece's rows of 2 KiB or more stay in cache across the call's
  // blocks, as eager's 512-wide slices), fewer where that leaves a thread idle; a multiple of 64.
  const int64_t per_thread = (w * outer + 2 * num_threads() - 1) / (2 * num_threads());
  const int64_t width = std::clamp<int64_t>((per_thread + 63) / 64 * 64, 64, 512);
  const int64_t blocks = (w + width - 1) / width;
  std::vector<int64_t> col_bytes(nops, 0);
  for (size_t j = 0; j < nops; ++j)
    if (split.layout[j] == InnerLayout::Contiguous)
      col_bytes[j] = static_cast<int64_t>(itemsize(k_.operand_dtype(static_cast<int32_t>(j))));
  // Large element outputs go around the caches (as in pointwise and row kernels) where every
  // vector store is aligned: the base, the row and outer strides and the calls' first columns.
  const int64_t vec_bytes = isa_ == JitIsa::Avx512 ? 64 : isa_ == JitIsa::Avx2 ? 32 : 16;
  const std::vector<uint8_t> row = k_.row_values();
  bool streaming = false;
  for (int32_t j = 0; j < k_.num_outputs(); ++j) {
    if (row[k_.stores[j]]) continue;
    const int64_t es = static_cast<int64_t>(itemsize(k_.output_dtype(j)));
    bool ok = k_.output_dtype(j) != DType::Bool && outer * n * w * es >= kStreamingBytes &&
              reinterpret_cast<uintptr_t>(args.ptrs[j]) % vec_bytes == 0 &&
              split.row_stride[j] % vec_bytes == 0 && width * es % vec_bytes == 0;
    for (size_t d = 0; d < co.sizes.size() && ok; ++d) ok = co.strides[j][d] % vec_bytes == 0;
    if (!ok) {
      streaming = false;
      break;
    }
    streaming = true;
  }
  const StoreChoice::Pick stores = pick_stores(streaming);
  const KernelFn fn = variant(split.layout, stores.streaming, true);
  cpu_jit_counters().launches.fetch_add(1, std::memory_order_relaxed);
  cpu_jit_counters().column_launches.fetch_add(1, std::memory_order_relaxed);
  size_t reduces = 0;
  for (const Expr& e : k_.exprs) reduces += expr_is_reduce(e.op);
  const size_t scratch_words = static_cast<size_t>(program_depth(program)) * reduces *
                               static_cast<size_t>((std::min(width, w) + 15) / 16 * 16);
  auto run = [&](int64_t t0, int64_t t1) {
    SmallVector<char*, 8> p(nops);
    std::unique_ptr<uint64_t[]> scratch(new uint64_t[scratch_words]);
    SmallVector<uint64_t, 16> local = words;
    local[np + 1] = reinterpret_cast<uintptr_t>(scratch.get());
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t % blocks;
      int64_t rest = t / blocks;
      for (size_t j = 0; j < nops; ++j) p[j] = args.ptrs[j] + b * width * col_bytes[j];
      for (size_t d = co.sizes.size(); d-- > 0;) {
        const int64_t idx = rest % co.sizes[d];
        rest /= co.sizes[d];
        for (size_t j = 0; j < nops; ++j) p[j] += idx * co.strides[j][d];
      }
      fn(p.data(), split.row_stride.data(), split.row_stride.data(), std::min(width, w - b * width),
         n, local.data());
    }
  };
  const int64_t items = outer * blocks;
  const int64_t t0 = profiler::enabled() ? profiler::now_ns() : 0;
  const StoreTrial trial(stores_, stores, outer * n * w, name_);
  if (num_threads() <= 1 || items < 2 || outer * n * w <= kParallelGrain || in_parallel_region())
    run(0, items);
  else
    parallel_for(0, items, 1, run);
  if (t0 != 0) profiler::record_kernel_launch(name_, t0, profiler::now_ns());
}

}  // namespace

CpuJitCounters& cpu_jit_counters() {
  static auto* c = new CpuJitCounters();  // never destroyed: planning may run during exit
  return *c;
}

std::vector<int64_t> cpu_jit_compile_times(size_t first) {
  CompileTimes& times = compile_times();
  std::lock_guard lock(times.mu);
  if (first >= times.ns.size()) return {};
  return {times.ns.begin() + static_cast<std::ptrdiff_t>(first), times.ns.end()};
}

size_t cpu_jit_compile_count() {
  CompileTimes& times = compile_times();
  std::lock_guard lock(times.mu);
  return times.ns.size();
}

std::vector<InnerLayout> all_contiguous(const LoopKernel& k) {
  return std::vector<InnerLayout>(static_cast<size_t>(k.num_operands() + (k.uses_index() ? 1 : 0)),
                                  InnerLayout::Contiguous);
}

KernelVariant cpu_target_variant(const LoopKernel& k, JitIsa isa) {
  KernelVariant v;
  v.isa = isa;
  v.layout = all_contiguous(k);
  v.unroll = config().jit_unroll > 0 && cpu_kernel_unrolls(k) ? int{config().jit_unroll}
                                                              : cpu_kernel_unroll(k, isa);
  v.pipeline = pipeline_enabled();
  return v;
}

void render_and_discard_cpu_kernel(const LoopKernel& k, const KernelVariant& v) {
  RenderedKernel r = render_cpu_kernel(jit_runtime(), k, v, false, configured_render_path());
  jit_runtime().release(r.fn);
}

void inject_cpu_codegen_faults(int count) { g_injected_faults.store(count); }

const char* CpuTarget::name() const {
  switch (active_jit_isa()) {
    case JitIsa::Avx512:
      return "cpu-avx512";
    case JitIsa::Avx2:
      return "cpu-avx2";
    default:
      return "cpu-sse2";
  }
}

bool CpuTarget::supports(ExprOp op, DType dtype) const {
  if (op == ExprOp::Cast || expr_is_compare(op)) return true;  // from every type
  // Reductions and RowSize exist in row kernels only (the planner's row groups, rendered by
  // render_reduce.cpp for Float32 and Float64): a pointwise kernel never has them.
  if (expr_is_reduce(op) || op == ExprOp::RowSize) return false;
  if (!expr_accepts(op, dtype)) return false;
  return !expr_is_transcendental(op) || cpu_math_supported(op);
}

std::shared_ptr<CompiledKernel> CpuTarget::compile(const LoopKernel& k) { return compile(k, {}); }

std::shared_ptr<CompiledKernel> CpuTarget::compile(const LoopKernel& k, const CpuLaunchHint& hint) {
  k.verify();
  if (tracer::dump_settings().wants(tracer::DumpKind::Code))  // KILN_DUMP=code
    tracer::dump_text(tracer::DumpKind::Code,
                      fmt::format("kernel-{:016x}.txt", hash_words(encode(k))), to_text(k));
  return std::make_shared<CpuKernel>(k, active_jit_isa(), hint);
}

CpuTarget& cpu_target() {
  static CpuTarget t;
  return t;
}

}  // namespace kiln::jit

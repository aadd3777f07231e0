#include "jit/cpu/render.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "jit/cpu/body_emitter.h"
#include "jit/cpu/emit_function.h"
#include "jit/cpu/interleave.h"
#include "jit/cpu/recording_assembler.h"
#include "jit/cpu/render_cols.h"
#include "jit/cpu/render_reduce.h"
#include "jit/cpu/render_workspace.h"
#include "jit/cpu/vec_emitter.h"
#include "runtime/error.h"
#include "runtime/logging.h"

namespace kiln::jit {

namespace {

using namespace asmjit;
namespace Inst = x86::Inst;

struct ThrowingHandler : ErrorHandler {
  void handleError(asmjit::Error err, const char* message, BaseEmitter*) override {
    fail("asmjit: {}: {}", DebugUtils::errorAsString(err), message);
  }
};

// The lanes of one vector iteration: the ISA's vector bytes over the widest value or storage
// type of the kernel (Bool counts as 4 bytes: its mask lanes). One lane count for the whole
// kernel keeps element i of every value in lane i, so mixing types needs no shuffles beyond a
// conversion's own; narrower types then use part of a register (Float32 beside Float64 on
// AVX-512: ymm beside zmm). The alternative, full registers for every type and two registers
// per wide value, doubles the narrow types' throughput but makes every conversion a
// split or a join; kernels mixing widths are mostly casts at a kernel's edge, so simple wins.
int kernel_lanes(const LoopKernel& k, JitIsa isa) {
  int widest = 4;
  for (const Expr& e : k.exprs) widest = std::max(widest, is64(e.type) ? 8 : 4);
  for (DType t : k.inputs) widest = std::max(widest, is64(t) ? 8 : 4);
  for (DType t : k.params) widest = std::max(widest, is64(t) ? 8 : 4);
  const int bytes = isa == JitIsa::Avx512 ? 64 : isa == JitIsa::Avx2 ? 32 : 16;
  return bytes / widest;
}

// The pointwise kernel's function (render.h), on either emitter.
template <class E>
void render_function(E& cc, const LoopKernel& k, const KernelVariant& v) {
  const JitIsa isa = v.isa;
  const std::vector<InnerLayout>& layout = v.layout;
  const FunctionArgs args = begin_function(cc, isa);
  const x86::Gp ptrs = args.ptrs, inner = args.inner, outer = args.outer, n_inner = args.n_inner,
                n_outer = args.n_outer, params = args.params;

  // A kernel reading the linear index (RandUniform) has one more operand: the index, carried
  // like a pointer to elements of one byte (cpu_kernel.cpp launches it).
  const int nops = k.num_operands() + (k.uses_index() ? 1 : 0);
  std::vector<x86::Gp> base(nops), cur(nops);
  std::vector<int> esize(nops);
  for (int j = 0; j < nops; ++j) {
    base[j] = cc.newIntPtr();
    cur[j] = cc.newIntPtr();
    cc.mov(base[j], x86::ptr(ptrs, j * 8));
    esize[j] = j < k.num_operands() ? static_cast<int>(itemsize(k.operand_dtype(j))) : 1;
  }
  EmitContextT<E> ctx(cc, isa, cc.cursor());

  bool vector_loop = true;
  for (InnerLayout l : layout) vector_loop = vector_loop && l != InnerLayout::Strided;
  const int lanes = kernel_lanes(k, isa);

  Label l_outer = cc.newLabel(), l_done = cc.newLabel(), l_row_end = cc.newLabel();
  x86::Gp o = cc.newInt64("o"), rem = cc.newInt64("rem");
  cc.xor_(o, o);
  cc.bind(l_outer);
  cc.cmp(o, n_outer);
  cc.jge(l_done);
  for (int j = 0; j < nops; ++j) cc.mov(cur[j], base[j]);
  cc.mov(rem, n_inner);

  auto advance = [&](int elements) {
    for (int j = 0; j < nops; ++j) {
      if (layout[j] == InnerLayout::Contiguous) cc.add(cur[j], elements * esize[j]);
      if (layout[j] == InnerLayout::Strided) cc.add(cur[j], x86::ptr(inner, j * 8));
    }
  };
  // A scalar loop over the `rem` elements left.
  auto scalar_loop = [&] {
    Label l_s = cc.newLabel();
    cc.test(rem, rem);
    cc.jz(l_row_end);
    cc.bind(l_s);
    BodyEmitter<E>(ctx, 1, k, layout, cur, params, nullptr).emit();
    advance(1);
    cc.dec(rem);
    cc.jnz(l_s);
  };

  if (vector_loop) {
    Label l_vec = cc.newLabel();
    const int unroll = std::max(1, v.unroll);
    bool pipelined = false;
    if constexpr (std::is_same_v<E, RecordingAssembler>) {
      // AVX-512, Assembler path: the unrolled loop software-pipelined (RecordingAssembler::
      // pipeline, docs/jit.md "Kernels"): a prologue computes the heads of the first `unroll`
      // vectors; each iteration weaves the tails of those vectors with the heads of the next
      // `unroll` (read `unroll` vectors further on); a drain computes the last tails. A body
      // with no place to split (pipeline_split) gets the plain unrolled loop: the prologue's
      // copies, whole and woven, become its body.
      // Not for a kernel that draws: its copies differ (each later copy offsets the index it
      // draws for), which pipeline() refuses, and the throw sent every such kernel to the
      // Compiler path (a dropout's render 0.6-0.9 ms instead of ~0.05, and woven wrong there:
      // the note in the plain loop below). It gets the plain woven loop here.
      if (unroll > 1 && v.pipeline && isa == JitIsa::Avx512 && !k.uses_index()) {
        using Range = RecordingAssembler::Range;
        std::vector<Range> head, tail, next, drain;
        auto copies = [&](std::vector<Range>& out, int first_vector) {
          for (int u = 0; u < unroll; ++u) {
            const auto before = body_mark(cc);
            BodyEmitter<E>(ctx, lanes, k, layout, cur, params, nullptr, v.streaming,
                           (first_vector + u) * lanes)
                .emit();
            out.push_back(body_range(cc, before));
          }
        };
        Label l_multi = cc.newLabel();
        cc.bind(l_multi);
        cc.cmp(rem, unroll * lanes);
        cc.jl(l_vec);
        copies(head, 0);
        const size_t split = cc.pipeline_split(head);
        if (split == 0) {
          interleave(cc, head);
          advance(unroll * lanes);
          cc.sub(rem, unroll * lanes);
          cc.jmp(l_multi);
        } else {
          Label l_loop = cc.newLabel(), l_drain = cc.newLabel();
          cc.bind(l_loop);
          cc.cmp(rem, 2 * unroll * lanes);
          cc.jl(l_drain);
          copies(tail, 0);
          copies(next, unroll);
          advance(unroll * lanes);
          cc.sub(rem, unroll * lanes);
          cc.jmp(l_loop);
          cc.bind(l_drain);
          copies(drain, 0);
          advance(unroll * lanes);
          cc.sub(rem, unroll * lanes);
          if (!cc.pipeline(head, tail, next, drain, split))
            throw RecordingAssembler::Unsupported("unrolled copies that differ");
        }
        pipelined = true;
      }
    }
    if (unroll > 1 && !pipelined) {  // `unroll` vectors per iteration, bodies interleaved
      Label l_multi = cc.newLabel();
      cc.bind(l_multi);
      cc.cmp(rem, unroll * lanes);
      cc.jl(l_vec);
      std::vector<decltype(body_range(cc, body_mark(cc)))> copies;
      for (int u = 0; u < unroll; ++u) {
        const auto before = body_mark(cc);
        BodyEmitter<E>(ctx, lanes, k, layout, cur, params, nullptr, v.streaming, u * lanes).emit();
        copies.push_back(body_range(cc, before));
      }
      interleave(cc, copies);  // left as emitted (still correct) if a copy is not straight-line
      advance(unroll * lanes);
      cc.sub(rem, unroll * lanes);
      cc.jmp(l_multi);
    }
    cc.bind(l_vec);
    if (unroll > 1 && isa == JitIsa::Avx512) {
      // What the unrolled loop left (< unroll vectors): one masked vector per iteration, the
      // last one partial. One body serves those whole vectors and the tail, so the kernel holds
      // unroll + 1 bodies instead of unroll + 2 (a body is about a fifth of gelu's compile time:
      // docs/jit.md "Compile time"). Its stores are never non-temporal (at most unroll vectors).
      cc.test(rem, rem);
      cc.jle(l_row_end);
      x86::Gp count = cc.newInt64("count"), bits = cc.newInt64("bits");
      x86::KReg mask = cc.newKw("rest");
      cc.mov(count, lanes);
      cc.cmp(rem, count);
      cc.cmovl(count, rem);
      cc.mov(bits, -1);
      cc.bzhi(bits, bits, count);
      cc.kmovw(mask, bits.r32());
      BodyEmitter<E>(ctx, lanes, k, layout, cur, params, &mask).emit();
      advance(lanes);
      cc.sub(rem, lanes);
      cc.jmp(l_vec);
    } else {
      // One vector per iteration: the whole row, or what the unrolled loop left.
      Label l_tail = cc.newLabel();
      cc.cmp(rem, lanes);
      cc.jl(l_tail);
      BodyEmitter<E>(ctx, lanes, k, layout, cur, params, nullptr, v.streaming).emit();
      advance(lanes);
      cc.sub(rem, lanes);
      cc.jmp(l_vec);
      cc.bind(l_tail);
      if (isa == JitIsa::Avx512) {  // one masked iteration
        cc.test(rem, rem);
        cc.jz(l_row_end);
        x86::Gp bits = cc.newInt64("bits");
        x86::KReg mask = cc.newKw("tail");
        cc.mov(bits, -1);
        cc.bzhi(bits, bits, rem);
        cc.kmovw(mask, bits.r32());
        BodyEmitter<E>(ctx, lanes, k, layout, cur, params, &mask).emit();
      } else {
        scalar_loop();
      }
    }
  } else {
    scalar_loop();
  }
  cc.bind(l_row_end);
  for (int j = 0; j < nops; ++j) cc.add(base[j], x86::ptr(outer, j * 8));
  cc.inc(o);
  cc.jmp(l_outer);
  cc.bind(l_done);
  if (v.streaming) cc.sfence();  // non-temporal stores are visible before the kernel returns
  end_function(cc);
}

}  // namespace

}  // namespace kiln::jit

// Debian's libasmjit.a is built without NDEBUG, so its register allocator runs
// RAAssignment::verify(), a consistency self-check (assertions only, no effect on the code it
// produces), at every block and instruction switch: 38% of a kernel's compile time measured with
// perf, and quadratic in a kernel's length. The function is an inline member of a private header,
// emitted as a weak symbol in ralocal.cpp.o; this strong no-op definition takes its place at link
// time (it is in this file because the linker pulls this object into every program that renders
// a kernel). On an asmjit built with NDEBUG the symbol does not exist and this definition is
// unused. docs/jit.md, "Compile time". (Lost in the typed-IR merge; restored.)
extern "C" void _ZN6asmjit8_abi_1_912RAAssignment6verifyEv(void*) {}

namespace kiln::jit {
int cpu_kernel_lanes(const LoopKernel& k, JitIsa isa) { return kernel_lanes(k, isa); }

bool cpu_kernel_unrolls(const LoopKernel& k) {
  if (k.uses_index() && k.has_reduce()) return false;  // drawing row kernels: not measured
  for (const Expr& e : k.exprs)
    if (e.op == ExprOp::Sin || e.op == ExprOp::Cos || (e.op == ExprOp::Pow && !is_floating(e.type)))
      return false;
  return true;
}

int cpu_kernel_unroll(const LoopKernel& k, JitIsa isa) {
  if (!cpu_kernel_unrolls(k)) return 1;
  int math = 0, element_math = 0;
  const std::vector<uint8_t> per_row =
      k.has_reduce() ? k.row_values() : std::vector<uint8_t>(k.exprs.size(), 0);
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const bool m = expr_is_transcendental(k.exprs[i].op);
    math += m;
    element_math += m && !per_row[i];
  }
  // Each body is rendered unroll + 2 times: keep large kernels' compile time linear in their size.
  if (math > kUnrollMaxMath || k.exprs.size() > kUnrollMaxExprs) return 1;
  if (k.has_reduce())
    return element_math > 0 && isa != JitIsa::Avx512 ? kUnrollMathFewRegisters : kRowUnroll;
  if (k.uses_index()) return isa == JitIsa::Avx512 ? kUnrollDraw : 1;
  return math > 0 ? 3 : 1;
}

namespace {

std::atomic<int> g_assembler_faults{0};

// The function of kernel `k` for variant `v` on either emitter: a column, row or pointwise kernel.
template <class Emitter>
void render_kernel_function(Emitter& e, const LoopKernel& k, const KernelVariant& v) {
  if (k.has_reduce() && v.columns)
    render_column_function(e, k, v);
  else if (k.has_reduce())
    render_row_function(e, k, v);
  else
    render_function(e, k, v);
}

// The encoded code added to the runtime (its size, and its listing when `logger` is given).
RenderedKernel add_to_runtime(JitRuntime& rt, CodeHolder& code, StringLogger* logger) {
  RenderedKernel out;
  out.code_bytes = code.codeSize();
  asmjit::Error err = rt.add(&out.fn, &code);
  if (err != kErrorOk) fail("asmjit: adding the kernel failed: {}", DebugUtils::errorAsString(err));
  if (logger != nullptr) out.assembly = logger->data();
  return out;
}

// The fast path (render.h): recorded, registers assigned by reg_alloc.h, encoded by asmjit's
// Assembler. Throws (RecordingAssembler::Unsupported, or kiln::Error for an asmjit error) with
// nothing added to the runtime; the workspace is then dropped, not reused.
RenderedKernel render_with_assembler(JitRuntime& rt, const LoopKernel& k, const KernelVariant& v,
                                     bool want_assembly, RenderedKernel* ordinary_twin) {
  ThrowingHandler handler;
  StringLogger logger;
  RenderWorkspace workspace;
  CodeHolder& code = workspace.code();
  RecordingAssembler& as = workspace.assembler();
  code.init(rt.environment());
  code.setErrorHandler(&handler);
  if (want_assembly) code.setLogger(&logger);
  code.attach(&as);
  as.begin(v.isa);
  render_kernel_function(as, k, v);
  if (g_assembler_faults.load() > 0 && g_assembler_faults.fetch_sub(1) > 0)
    throw RecordingAssembler::Unsupported("an injected fault");
  as.finish();
  const bool relocatable = code.relocEntries().empty() && !code.hasAddressTable();
  RenderedKernel out = add_to_runtime(rt, code, want_assembly ? &logger : nullptr);
  out.assembler = true;
  out.relocatable = relocatable;
  out.addresses = as.code_addresses();
  if (ordinary_twin != nullptr && v.streaming) {
    // The same recording and registers encoded again with ordinary stores (render.h). A failure
    // leaves the twin unmade (its variant is rendered when a launch asks for it), never the
    // kernel just made.
    try {
      StringLogger twin_logger;
      code.reset(ResetPolicy::kSoft);
      code.init(rt.environment());
      code.setErrorHandler(&handler);
      if (want_assembly) code.setLogger(&twin_logger);
      code.attach(&as);
      as.encode_ordinary_twin();
      RenderedKernel twin = add_to_runtime(rt, code, want_assembly ? &twin_logger : nullptr);
      twin.assembler = true;
      twin.relocatable = code.relocEntries().empty() && !code.hasAddressTable();
      twin.addresses = as.code_addresses();
      *ordinary_twin = std::move(twin);
    } catch (const std::exception& e) {
      KILN_DEBUG(Jit, "cpu kernel: no ordinary-stores twin ({})", e.what());
    }
  }
  return out;
}

}  // namespace

void inject_assembler_faults(int count) { g_assembler_faults.store(count); }

RenderedKernel render_cpu_kernel(JitRuntime& rt, const LoopKernel& k, const KernelVariant& v,
                                 bool want_assembly, RenderPath path,
                                 RenderedKernel* ordinary_twin) {
  const int nops = k.num_operands() + (k.uses_index() ? 1 : 0);
  KILN_CHECK(static_cast<int>(v.layout.size()) == nops,
             "cpu kernel: {} operand layouts for {} operands", v.layout.size(), nops);
  std::string fallback;
  if (path == RenderPath::Assembler)
    return render_with_assembler(rt, k, v, want_assembly, ordinary_twin);
  if (path == RenderPath::Auto) {
    try {
      return render_with_assembler(rt, k, v, want_assembly, ordinary_twin);
    } catch (const std::exception& e) {
      fallback = e.what();  // rendered with the Compiler below
    }
  }
  ThrowingHandler handler;
  StringLogger logger;
  RenderWorkspace workspace;
  CodeHolder& code = workspace.code();
  KernelCompiler& cc = workspace.compiler();
  code.init(rt.environment());
  code.setErrorHandler(&handler);
  if (want_assembly) code.setLogger(&logger);
  cc.set_readable_names(want_assembly);
  code.attach(&cc);
  render_kernel_function(cc, k, v);
  cc.finalize();
  RenderedKernel out = add_to_runtime(rt, code, want_assembly ? &logger : nullptr);
  out.fallback = std::move(fallback);
  return out;
}

}  // namespace kiln::jit

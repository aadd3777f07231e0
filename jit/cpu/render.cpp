#include "jit/cpu/render.h"

#include <fmt/format.h>

#include "jit/cpu/math.h"
#include "jit/cpu/paired_ops.h"
#include "jit/cpu/vec_emitter.h"
#include "runtime/error.h"

namespace kiln::jit {

namespace {

using namespace asmjit;

struct ThrowingHandler : ErrorHandler {
  void handleError(asmjit::Error err, const char* message, BaseEmitter*) override {
    fail("asmjit: {}: {}", DebugUtils::errorAsString(err), message);
  }
};

// The expressions of one loop body, evaluated with one lane backend O (AsmVecOps wide, wide
// with a tail mask, or narrow; or PairedOps of a wide one): the one switch over expression ops
// of the CPU target.
template <class O>
class BodyEmitter {
 public:
  using T = typename O::T;
  BodyEmitter(const O& o, const LoopKernel& k, const std::vector<InnerLayout>& layout,
              const std::vector<x86::Gp>& cur, x86::Gp params, const x86::KReg* tail,
              bool streaming = false)
      : o_(o),
        k_(k),
        layout_(layout),
        cur_(cur),
        params_(params),
        tail_(tail),
        streaming_(streaming) {}

  void emit() {
    const size_t n = k_.exprs.size();
    vals_.resize(n);
    masks_.resize(n);
    for (size_t i = 0; i < n; ++i) eval(i);
    for (int32_t j = 0; j < k_.num_outputs(); ++j) {
      if (streaming_)
        o_.store_streaming(x86::ptr(cur_[j]), vals_[k_.stores[j]]);
      else
        o_.store(x86::ptr(cur_[j]), vals_[k_.stores[j]], tail_);
    }
  }

 private:
  using F = typename O::F;
  void eval(size_t i) {
    const Expr& e = k_.exprs[i];
    auto A = [&] { return vals_[e.a]; };
    auto B = [&] { return vals_[e.b]; };
    F zero;
    switch (e.op) {
      case ExprOp::Load: {
        const int32_t operand = k_.num_outputs() + e.index;
        const x86::Mem m = x86::ptr(cur_[operand]);
        vals_[i] =
            layout_[operand] == InnerLayout::Broadcast ? o_.load_broadcast(m) : o_.load(m, tail_);
        return;
      }
      case ExprOp::Const:
        vals_[i] = o_.splat(e.value);
        return;
      case ExprOp::Param:
        vals_[i] = o_.load_broadcast(x86::ptr(params_, e.index * static_cast<int32_t>(sizeof(T))));
        return;
      case ExprOp::Neg:
        vals_[i] = o_.bit_xor(A(), o_.splat(-0.0));
        return;
      case ExprOp::Abs:  // x < 0 ? -x : x (eager keeps -0 as is)
        vals_[i] = o_.select(o_.lt(A(), o_.splat(0.0)), o_.bit_xor(A(), o_.splat(-0.0)), A());
        return;
      case ExprOp::Sqrt:
        vals_[i] = o_.sqrt(A());
        return;
      case ExprOp::Rsqrt:
        vals_[i] = o_.div(o_.splat(1.0), o_.sqrt(A()));
        return;
      case ExprOp::Reciprocal:
        vals_[i] = o_.div(o_.splat(1.0), A());
        return;
      case ExprOp::Square:
        vals_[i] = o_.mul(A(), A());
        return;
      case ExprOp::Relu:  // x < 0 ? 0 : x (NaN passes)
        zero = o_.splat(0.0);
        vals_[i] = o_.select(o_.lt(A(), zero), zero, A());
        return;
      case ExprOp::Sign:  // (0 < x) - (x < 0): NaN and -0 give +0
        zero = o_.splat(0.0);
        vals_[i] = o_.select(o_.gt(A(), zero), o_.splat(1.0),
                             o_.select(o_.lt(A(), zero), o_.splat(-1.0), zero));
        return;
      case ExprOp::Add:
        vals_[i] = o_.add(A(), B());
        return;
      case ExprOp::Sub:
        vals_[i] = o_.sub(A(), B());
        return;
      case ExprOp::Mul:
        vals_[i] = o_.mul(A(), B());
        return;
      case ExprOp::Div:
        vals_[i] = o_.div(A(), B());
        return;
      case ExprOp::Maximum:
      case ExprOp::Minimum: {  // NaN in a, else NaN in b, else the larger (smaller)
        F r = e.op == ExprOp::Maximum ? o_.select(o_.lt(A(), B()), B(), A())
                                      : o_.select(o_.lt(B(), A()), B(), A());
        r = o_.select(o_.unord(B(), B()), B(), r);
        vals_[i] = o_.select(o_.unord(A(), A()), A(), r);
        return;
      }
      case ExprOp::Lt:
        masks_[i] = o_.lt(A(), B());
        return;
      case ExprOp::Le:
        masks_[i] = o_.le(A(), B());
        return;
      case ExprOp::Gt:
        masks_[i] = o_.gt(A(), B());
        return;
      case ExprOp::Ge:
        masks_[i] = o_.ge(A(), B());
        return;
      case ExprOp::Eq:
        masks_[i] = o_.eq(A(), B());
        return;
      case ExprOp::Ne:
        masks_[i] = o_.ne(A(), B());
        return;
      case ExprOp::Select:
        vals_[i] = o_.select(masks_[e.a], vals_[e.b], vals_[e.c]);
        return;
      default:
        if (expr_is_transcendental(e.op)) {
          vals_[i] = emit_math(o_, e.op, A());
          return;
        }
        fail("cpu kernel: no rendering for expression op {}", expr_op_name(e.op));
    }
  }

  O o_;
  const LoopKernel& k_;
  const std::vector<InnerLayout>& layout_;
  const std::vector<x86::Gp>& cur_;
  x86::Gp params_;
  const x86::KReg* tail_;
  bool streaming_;
  std::vector<F> vals_;
  std::vector<typename O::M> masks_;
};

template <class T>
void render_function(x86::Compiler& cc, const LoopKernel& k, const KernelVariant& v) {
  const JitIsa isa = v.isa;
  const std::vector<InnerLayout>& layout = v.layout;
  FuncNode* f = cc.addFunc(FuncSignatureT<void, char* const*, const int64_t*, const int64_t*,
                                          int64_t, int64_t, const void*>(CallConvId::kHost));
  if (isa != JitIsa::Sse2) {
    f->frame().setAvxEnabled();
    f->frame().setAvxCleanup();
  }
  if (isa == JitIsa::Avx512) f->frame().setAvx512Enabled();
  x86::Gp ptrs = cc.newIntPtr("ptrs"), inner = cc.newIntPtr("inner"), outer = cc.newIntPtr("outer"),
          n_inner = cc.newInt64("n_inner"), n_outer = cc.newInt64("n_outer"),
          params = cc.newIntPtr("params");
  f->setArg(0, ptrs);
  f->setArg(1, inner);
  f->setArg(2, outer);
  f->setArg(3, n_inner);
  f->setArg(4, n_outer);
  f->setArg(5, params);

  const int nops = k.num_operands();
  std::vector<x86::Gp> base(nops), cur(nops);
  for (int j = 0; j < nops; ++j) {
    base[j] = cc.newIntPtr();
    cur[j] = cc.newIntPtr();
    cc.mov(base[j], x86::ptr(ptrs, j * 8));
  }
  EmitContext ctx{cc, isa, cc.cursor(), {}};

  bool vector_loop = true;
  for (InnerLayout l : layout) vector_loop = vector_loop && l != InnerLayout::Strided;
  const int lanes = AsmVecOps<T>(ctx, true).lanes();
  const int esize = static_cast<int>(sizeof(T));
  // Two vectors per iteration where the body is a long dependency chain (vector math) and the
  // ISA has registers for two (AVX-512: 32); the masked tail takes what is left.
  bool paired = false;
  if (isa == JitIsa::Avx512 && vector_loop)
    for (const Expr& e : k.exprs) paired = paired || expr_is_transcendental(e.op);

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
      if (layout[j] == InnerLayout::Contiguous) cc.add(cur[j], elements * esize);
      if (layout[j] == InnerLayout::Strided) cc.add(cur[j], x86::ptr(inner, j * 8));
    }
  };
  // A scalar loop over the `rem` elements left.
  auto scalar_loop = [&] {
    Label l_s = cc.newLabel();
    cc.test(rem, rem);
    cc.jz(l_row_end);
    cc.bind(l_s);
    BodyEmitter(AsmVecOps<T>(ctx, false), k, layout, cur, params, nullptr).emit();
    advance(1);
    cc.dec(rem);
    cc.jnz(l_s);
  };

  if (vector_loop) {
    Label l_vec = cc.newLabel(), l_tail = cc.newLabel();
    cc.bind(l_vec);
    if (paired) {  // two vectors per iteration while they last; the rest goes to the masked tail
      cc.cmp(rem, 2 * lanes);
      cc.jl(l_tail);
      BodyEmitter(PairedOps(AsmVecOps<T>(ctx, true), lanes * esize), k, layout, cur, params,
                  nullptr, v.streaming)
          .emit();
      advance(2 * lanes);
      cc.sub(rem, 2 * lanes);
    } else {
      cc.cmp(rem, lanes);
      cc.jl(l_tail);
      BodyEmitter(AsmVecOps<T>(ctx, true), k, layout, cur, params, nullptr, v.streaming).emit();
      advance(lanes);
      cc.sub(rem, lanes);
    }
    cc.jmp(l_vec);
    cc.bind(l_tail);
    if (isa == JitIsa::Avx512) {  // masked iterations: one, or up to two after paired ones
      Label l_masked = cc.newLabel();
      cc.bind(l_masked);
      cc.test(rem, rem);
      cc.jz(l_row_end);
      x86::Gp bits = cc.newInt64("bits");
      x86::KReg mask = cc.newKw("tail");
      cc.mov(bits, -1);
      cc.bzhi(bits, bits, rem);  // rem >= lanes: every lane
      cc.kmovw(mask, bits.r32());
      BodyEmitter(AsmVecOps<T>(ctx, true), k, layout, cur, params, &mask).emit();
      if (paired) {
        advance(lanes);
        cc.sub(rem, lanes);
        cc.jg(l_masked);
      }
    } else {
      scalar_loop();
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
  cc.endFunc();
}

}  // namespace

}  // namespace kiln::jit

// Debian's libasmjit.a is built without NDEBUG, so its register allocator runs
// RAAssignment::verify(), a consistency self-check (assertions only, no effect on the code it
// produces), at every block and instruction switch: 38% of a kernel's compile time measured with
// perf. The function is an inline member of a private header, emitted as a weak symbol in
// ralocal.cpp.o; this strong no-op definition takes its place at link time (it is in this file
// because the linker pulls this object into every program that renders a kernel). On an asmjit
// built with NDEBUG the symbol does not exist and this definition is unused. docs/jit.md, "Compile
// time".
extern "C" void _ZN6asmjit8_abi_1_912RAAssignment6verifyEv(void*) {}

namespace kiln::jit {

RenderedKernel render_cpu_kernel(JitRuntime& rt, const LoopKernel& k, const KernelVariant& v,
                                 bool want_assembly) {
  KILN_CHECK(static_cast<int>(v.layout.size()) == k.num_operands(),
             "cpu kernel: {} operand layouts for {} operands", v.layout.size(), k.num_operands());
  CodeHolder code;
  code.init(rt.environment());
  ThrowingHandler handler;
  code.setErrorHandler(&handler);
  StringLogger logger;
  if (want_assembly) code.setLogger(&logger);
  x86::Compiler cc(&code);
  if (k.dtype == DType::Float64)
    render_function<double>(cc, k, v);
  else
    render_function<float>(cc, k, v);
  cc.finalize();
  RenderedKernel out;
  out.code_bytes = code.codeSize();
  asmjit::Error err = rt.add(&out.fn, &code);
  if (err != kErrorOk) fail("asmjit: adding the kernel failed: {}", DebugUtils::errorAsString(err));
  if (want_assembly) out.assembly = logger.data();
  return out;
}

}  // namespace kiln::jit

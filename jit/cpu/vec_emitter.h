// The asmjit lane backend of the shared vector math (ops/cpu/vecmath/vec_ops.h): each method
// emits the instructions of one primitive into an x86::Compiler, on virtual registers, so that
// the same algorithm templates the eager kernels run give the same bits in generated code.
// Beyond the contract it loads and stores operands (contiguous, broadcast, masked tails), and it
// has vecmath's optional reduce_pio2_huge hook: sin/cos call the exact reduction for huge lanes.
//
// Shapes: an emitter works on `lanes` elements of T at once (1 for a scalar loop). The register
// is the smallest of xmm, ymm, zmm that holds them: a kernel whose widest value type is 8 bytes
// runs 8 lanes on AVX-512, so its Float32 values live in ymm (half registers: jit/cpu/render.cpp
// says why). Loads of fewer than 16 bytes (movss, movsd) zero the other lanes, so packed
// instructions are safe on them.
// Masks: AVX-512 uses k registers (every instruction here has an EVEX form, so the register
// allocator may use xmm16-31); AVX2 and SSE2 use all-ones vector lanes.
// Constants are loaded once per kernel, before the loops (hoisted at `hoist_point`).
// Emitter: `E` (EmitContextT) is asmjit's Compiler or the fast path's recorder.
#pragma once
#include <asmjit/x86.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "jit/cpu/constant_table.h"
#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/kernel_compiler.h"
#include "ops/cpu/vecmath/reduce_pio2.h"
#include "runtime/dtype.h"

namespace kiln::jit {

// What a kernel hands the exact sin/cos reduction (AsmVecOps::reduce_pio2_huge) through one
// pointer: the lanes of x, the Cody-Waite r and k (overwritten in the huge lanes), the bound past
// which a lane is huge and the lane count. One pointer argument, so that a call needs no
// argument registers: the fast emitter's call (recording_assembler.h) passes it in rdi.
struct alignas(64) HugeLanesBlock {
  unsigned char x[64], r[64], k[64];  // 16 float / 8 double lanes; int32 / int64 quadrants
  double bound;
  int32_t lanes;
};

template <class T>
void reduce_pio2_huge_block(HugeLanesBlock* b) {
  using IT = std::conditional_t<std::is_same_v<T, double>, int64_t, int32_t>;
  vecmath::reduce_pio2_huge_lanes(reinterpret_cast<const T*>(b->x), b->lanes, b->bound,
                                  reinterpret_cast<T*>(b->r), reinterpret_cast<IT*>(b->k));
}

// What a baseline (SSE2) kernel hands libm's fma through one pointer (AsmVecOps::fma, double
// lanes; float lanes are computed inline through double): SSE2 has no fused multiply-add, so
// each lane's a * b + c is rounded once by std::fma, as the eager baseline backend computes it
// (correctly rounded either way: the same bits as vfmadd).
struct alignas(64) FmaLanesBlock {
  unsigned char a[16], b[16], c[16];  // 4 float / 2 double lanes; c is overwritten
};

template <class T>
void fma_lanes_block(FmaLanesBlock* blk) {
  constexpr int n = 16 / sizeof(T);
  T a[n], b[n], c[n];
  std::memcpy(a, blk->a, sizeof(a));
  std::memcpy(b, blk->b, sizeof(b));
  std::memcpy(c, blk->c, sizeof(c));
  for (int i = 0; i < n; ++i) c[i] = std::fma(a[i], b[i], c[i]);
  std::memcpy(blk->c, c, sizeof(c));
}

struct AsmMask {
  asmjit::x86::KReg k;  // AVX-512
  asmjit::x86::Vec v;   // AVX2, SSE2
};

// One expression's value in a loop body (body_emitter.h): a vector of numbers, or a mask (a k
// register on AVX-512; on AVX2 and SSE2 all-ones lanes of 4 or 8 bytes, made at the width a
// consumer needs and kept).
struct BodyVal {
  asmjit::x86::Vec v;
  asmjit::x86::KReg k;
  asmjit::x86::Vec m[2];
  bool has[2] = {false, false};
};

// State shared by the emitters of one function: the hoisted constants, and the body emitter's
// buffers (one body is emitted at a time; reused, they cost no allocation per body). `E`, the
// emitter, is asmjit's Compiler (KernelCompiler) or the fast path's RecordingAssembler: the
// emission code below is the same for both (recording_assembler.h offers the subset of the
// Compiler's interface it uses).
template <class E>
struct EmitContextT {
  using Cursor = decltype(std::declval<E&>().cursor());
  EmitContextT(E& c, JitIsa i, Cursor hoist) : cc(c), isa(i), hoist_point(hoist) {}
  E& cc;
  JitIsa isa;
  Cursor hoist_point{};     // constants are loaded after this point
  ConstantTable constants;  // (bits, width and lane type) -> register
  std::vector<BodyVal> body_values;
  std::vector<uint8_t> body_need;
  bool body_open = false;  // a BodyEmitter is working: no second one may start
};
using EmitContext = EmitContextT<KernelCompiler>;

template <class TT, class E = KernelCompiler>
class AsmVecOps {
 public:
  using T = TT;
  using F = asmjit::x86::Vec;
  using I = asmjit::x86::Vec;
  using M = AsmMask;
  static constexpr bool kDouble = std::is_same_v<T, double>;

  AsmVecOps(EmitContextT<E>& ctx, int lanes) : ctx_(ctx), cc_(ctx.cc), lanes_(lanes) {}

  bool kmask() const { return ctx_.isa == JitIsa::Avx512; }
  bool vex() const { return ctx_.isa != JitIsa::Sse2; }
  // vecmath's optional hook (double_t.h two_prod): fma is one instruction on AVX2 and AVX-512.
  bool fused_fma() const { return vex(); }
  int lanes() const { return lanes_; }
  // Bytes of the lanes (the register may be larger: at least an xmm).
  int bytes() const { return lanes_ * static_cast<int>(sizeof(T)); }

  F new_vec() const { return new_vec_of(cc_, bytes()); }
  template <class C>
  static F new_vec_of(C& cc, int bytes) {
    if (bytes >= 64) return cc.newZmm();
    if (bytes == 32) return cc.newYmm();
    return cc.newXmm();
  }

  // ---- the contract (vec_ops.h) ----
  F splat(double c) const {
    const T v = static_cast<T>(c);
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    return constant(bits);
  }
  I isplat(int64_t c) const {
    if constexpr (kDouble)
      return constant(static_cast<uint64_t>(c));
    else
      return constant(static_cast<uint32_t>(c));
  }
  F add(F a, F b) const {
    return arith(I_(asmjit::x86::Inst::kIdVaddps, kIdVaddpd_, kIdAddps_, kIdAddpd_), a, b);
  }
  F sub(F a, F b) const { return arith(I_(kIdVsubps_, kIdVsubpd_, kIdSubps_, kIdSubpd_), a, b); }
  F mul(F a, F b) const { return arith(I_(kIdVmulps_, kIdVmulpd_, kIdMulps_, kIdMulpd_), a, b); }
  F div(F a, F b) const { return arith(I_(kIdVdivps_, kIdVdivpd_, kIdDivps_, kIdDivpd_), a, b); }
  F sqrt(F a) const {
    F d = new_vec();
    cc_.emit(vex() ? (kDouble ? kIdVsqrtpd_ : kIdVsqrtps_) : (kDouble ? kIdSqrtpd_ : kIdSqrtps_), d,
             a);
    return d;
  }
  // a * b + c rounded once: vfmadd (the AVX2 tier requires FMA, jit/cpu/cpu_isa.cpp) on a
  // register first defined as a copy (the instruction reads its destination): of a with the
  // 213 form when c is a hoisted constant (Horner's coefficients: the running value usually
  // dies here, so the copy lands in its register and is dropped, and c may be a memory
  // operand), else of c with the 231 form. SSE2 has none, and its kernels call libm's fma on
  // the lanes (fma_lanes_block), as the eager baseline backend does; float lanes are computed
  // exactly through double instead (fma_via_double), ten times faster than the call.
  F fma(F a, F b, F c) const {
    namespace Inst = asmjit::x86::Inst;
    F d = new_vec();
    if (vex()) {
      const bool c_constant = ctx_.constants.holds(c) && !ctx_.constants.holds(a);
      cc_.emit(kDouble ? kIdVmovapd_ : kIdVmovaps_, d, c_constant ? a : c);
      if (c_constant)
        cc_.emit(kDouble ? Inst::kIdVfmadd213pd : Inst::kIdVfmadd213ps, d, b, c);
      else
        cc_.emit(kDouble ? Inst::kIdVfmadd231pd : Inst::kIdVfmadd231ps, d, a, b);
      return d;
    }
    if constexpr (!kDouble) return fma_via_double(a, b, c);
    using Block = FmaLanesBlock;
    const asmjit::x86::Mem block = cc_.newStack(sizeof(Block), 64);
    auto at = [&](uint32_t offset) {
      asmjit::x86::Mem m = block.cloneAdjusted(offset);
      m.setSize(16);
      return m;
    };
    cc_.emit(Inst::kIdMovups, at(offsetof(Block, a)), a);
    cc_.emit(Inst::kIdMovups, at(offsetof(Block, b)), b);
    cc_.emit(Inst::kIdMovups, at(offsetof(Block, c)), c);
    cc_.call_block(reinterpret_cast<void*>(&fma_lanes_block<T>), block);
    cc_.emit(Inst::kIdMovups, d, at(offsetof(Block, c)));
    return d;
  }
  // SSE2, float lanes: GnuVecOps::fma_via_double's steps (ops/cpu/vecmath/gnu_vec_ops.h says
  // why they are exact) on each half of the register widened to two doubles, then narrowed and
  // joined again.
  F fma_via_double(F a, F b, F c) const {
    namespace Inst = asmjit::x86::Inst;
    AsmVecOps<double, E> od(ctx_, 2);
    auto widen = [&](F x, bool high) {
      F src = x;
      if (high) {  // lanes 2 and 3 into 0 and 1
        src = new_vec();
        cc_.emit(Inst::kIdPshufd, src, x, asmjit::imm(0xEE));
      }
      F d = new_vec();
      cc_.emit(Inst::kIdCvtps2pd, d, src);
      return d;
    };
    auto half = [&](bool high) {
      const F pa = widen(a, high), pb = widen(b, high), pc = widen(c, high);
      const F p = od.mul(pa, pb);
      const F s = od.add(p, pc);
      const F bb = od.sub(s, p);
      const F e = od.add(od.sub(p, od.sub(s, bb)), od.sub(pc, bb));
      const F opposite = od.shr(od.bit_xor(e, s), 63);
      const F odd = od.bit_or(od.isub(s, opposite), od.isplat(1));
      const F as = od.bit_andnot(od.splat(-0.0), s);
      const typename AsmVecOps<double, E>::M inexact =
          od.mask_and(od.ne(e, od.splat(0.0)), od.lt(as, od.splat(kInfinity)));
      F r = new_vec();
      cc_.emit(Inst::kIdCvtpd2ps, r, od.select(inexact, odd, s));
      return r;
    };
    const F lo = half(false), hi = half(true);
    F d = new_vec();
    cc_.emit(Inst::kIdMovaps, d, lo);
    cc_.emit(Inst::kIdMovlhps, d, hi);
    return d;
  }
  M lt(F a, F b) const { return cmp(a, b, 1); }  // LT_OS
  M le(F a, F b) const { return cmp(a, b, 2); }  // LE_OS
  M gt(F a, F b) const { return cmp(b, a, 1); }
  M ge(F a, F b) const { return cmp(b, a, 2); }
  M eq(F a, F b) const { return cmp(a, b, 0); }     // EQ_OQ
  M unord(F a, F b) const { return cmp(a, b, 3); }  // UNORD_Q
  M ne(F a, F b) const { return cmp(a, b, 4); }     // NEQ_UQ: true when either is NaN, as C++ !=
  M nlt(F a, F b) const { return cmp(a, b, 5); }    // NLT_US: true when either is NaN
  M mask_and(M a, M b) const { return mask_op(asmjit::x86::Inst::kIdKandw, a, b, kBitAnd); }
  M mask_or(M a, M b) const { return mask_op(asmjit::x86::Inst::kIdKorw, a, b, kBitOr); }
  // d = d | b, written into d (a loop-carried mask: add_to says why).
  void mask_or_to(M d, M b) const {
    if (kmask())
      cc_.emit(asmjit::x86::Inst::kIdKorw, d.k, d.k, b.k);
    else
      bit_to(kBitOr, d.v, d.v, b.v);
  }
  M mask_not(M a) const {
    M r;
    if (kmask()) {
      r.k = cc_.newKw();
      cc_.knotw(r.k, a.k);
    } else {
      r.v = bit(kBitXor, a.v, all_ones());
    }
    return r;
  }
  F select(M m, F a, F b) const {
    F d = new_vec();
    if (kmask()) {
      // d = b, then d{k} = a. A merge-masked vblendm would do it in one instruction, but asmjit's
      // register allocator takes its destination as read, so d would live across loop iterations
      // (a spill and reload per select in the hot loop); the move defines d first.
      cc_.emit(kDouble ? kIdVmovapd_ : kIdVmovaps_, d, b);
      cc_.k(m.k).emit(kDouble ? kIdVmovapd_ : kIdVmovaps_, d, a);
    } else if (vex()) {
      cc_.emit(kDouble ? kIdVblendvpd_ : kIdVblendvps_, d, b, a, m.v);
    } else {  // (a & m) | (b & ~m)
      F x = bit(kBitAnd, m.v, a);
      F y = bit(kBitAndnot, m.v, b);
      d = bit(kBitOr, x, y);
    }
    return d;
  }
  F keep(M m, F a) const {
    if (!kmask()) return bit(kBitAnd, m.v, a);
    F d = new_vec();
    cc_.k(m.k).z().emit(kDouble ? kIdVmovapd_ : kIdVmovaps_, d, a);
    return d;
  }
  // a < b ? a : b and a > b ? a : b: exactly minps / maxps (the second operand when either is
  // NaN), so a NaN-preserving clamp is one instruction instead of a compare and a select.
  F lt_select(F a, F b) const { return arith(kMin, a, b); }
  F gt_select(F a, F b) const { return arith(kMax, a, b); }
  // d = lt_select(d, b) (gt_select), written into d (add_to below says why).
  void lt_select_to(F d, F b) const { arith_to(kMin, d, b); }
  void gt_select_to(F d, F b) const { arith_to(kMax, d, b); }
  F bit_and(F a, F b) const { return bit(kBitAnd, a, b); }
  F bit_or(F a, F b) const { return bit(kBitOr, a, b); }
  F bit_xor(F a, F b) const { return bit(kBitXor, a, b); }
  F bit_andnot(F a, F b) const { return bit(kBitAndnot, a, b); }
  I as_int(F a) const { return a; }
  F as_float(I a) const { return a; }
  I iadd(I a, I b) const { return arith(I_(kIdVpaddd_, kIdVpaddq_, kIdPaddd_, kIdPaddq_), a, b); }
  // d = d + b (d * b), written into d: a loop-carried accumulator updated by its own
  // instruction, without a move after it (row_passes.cpp); the instruction of add / mul / iadd.
  void add_to(F d, F b) const {
    arith_to(I_(asmjit::x86::Inst::kIdVaddps, kIdVaddpd_, kIdAddps_, kIdAddpd_), d, b);
  }
  void mul_to(F d, F b) const { arith_to(I_(kIdVmulps_, kIdVmulpd_, kIdMulps_, kIdMulpd_), d, b); }
  void iadd_to(I d, I b) const { arith_to(I_(kIdVpaddd_, kIdVpaddq_, kIdPaddd_, kIdPaddq_), d, b); }
  I isub(I a, I b) const { return arith(I_(kIdVpsubd_, kIdVpsubq_, kIdPsubd_, kIdPsubq_), a, b); }
  I shl(I a, int n) const { return shift(I_(kIdVpslld_, kIdVpsllq_, kIdPslld_, kIdPsllq_), a, n); }
  I shr(I a, int n) const { return shift(I_(kIdVpsrld_, kIdVpsrlq_, kIdPsrld_, kIdPsrlq_), a, n); }

  // vecmath's optional hook (sin_cos.h): the lanes with bound < |x| < inf get the exact
  // reduction of reduce_pio2.h. Emitted as a test of the lanes, a branch around a rarely taken
  // block that writes x, r, k, the bound and the lane count into a stack block
  // (HugeLanesBlock), calls reduce_pio2_huge_block on it (vecmath::reduce_pio2_huge_lanes, the
  // baseline library's code, as the eager backend calls it) and reloads r and k. The SysV ABI
  // preserves no vector or mask register: the emitter saves every value live across the call
  // (`call_block`: asmjit's invoke on the Compiler, the recorder's own saves on the fast path).
  // No vzeroupper before the call: the allocator's spills would land after it, on cleared upper
  // halves.
  void reduce_pio2_huge(F x, double bound, F& r, I& k) const {
    namespace Inst = asmjit::x86::Inst;
    const F ax = bit_andnot(splat(-0.0), x);
    const M huge = mask_and(gt(ax, splat(bound)), lt(ax, splat(kInfinity)));
    asmjit::x86::Gp bits = cc_.newGpd("huge_lanes");
    if (kmask())
      cc_.kmovw(bits, huge.k);
    else
      cc_.emit(vex() ? (kDouble ? Inst::kIdVmovmskpd : Inst::kIdVmovmskps)
                     : (kDouble ? Inst::kIdMovmskpd : Inst::kIdMovmskps),
               bits, huge.v);
    // r and k get fresh registers, written on both paths (the operands may be read elsewhere).
    F r2 = new_vec(), k2 = new_vec();
    cc_.emit(vex() ? Inst::kIdVmovaps : Inst::kIdMovaps, r2, r);
    cc_.emit(vex() ? Inst::kIdVmovaps : Inst::kIdMovaps, k2, k);
    asmjit::Label done = cc_.newLabel();
    cc_.test(bits, asmjit::imm((1 << lanes_) - 1));  // only this emitter's lanes
    cc_.jz(done);
    using Block = HugeLanesBlock;
    const asmjit::x86::Mem block = cc_.newStack(sizeof(Block), 64);
    auto at = [&](uint32_t offset, uint32_t size) {
      asmjit::x86::Mem m = block.cloneAdjusted(offset);
      m.setSize(size);
      return m;
    };
    store(at(offsetof(Block, x), 0), x);
    store(at(offsetof(Block, r), 0), r2);
    store(at(offsetof(Block, k), 0), k2);
    asmjit::x86::Gp b = cc_.newGpq();
    uint64_t bound_bits;
    std::memcpy(&bound_bits, &bound, sizeof(bound));
    cc_.mov(b, asmjit::imm(bound_bits));
    cc_.mov(at(offsetof(Block, bound), 8), b);
    cc_.mov(at(offsetof(Block, lanes), 4), asmjit::imm(lanes_));
    cc_.call_block(reinterpret_cast<void*>(&reduce_pio2_huge_block<T>), block);
    load_into(r2, at(offsetof(Block, r), 0));
    load_into(k2, at(offsetof(Block, k), 0));
    cc_.bind(done);
    r = r2;
    k = k2;
  }

  // vecmath's optional hook (common.h, scale2): x * 2^kf rounded once, in one vscalefps /
  // vscalefpd on AVX-512 (kf is integer-valued, so its floor is itself; NaN in either gives NaN,
  // results underflow gradually and overflow to inf as the two exact multiplies do). Elsewhere
  // false: the template emits the two multiplies.
  bool scale2_rounded(F x, F kf, F& out) const {
    if (!kmask()) return false;
    out = new_vec();
    cc_.emit(kDouble ? asmjit::x86::Inst::kIdVscalefpd : asmjit::x86::Inst::kIdVscalefps, out, x,
             kf);
    return true;
  }

  // vecmath's optional hooks (exp_log.h, exp<true>): keep(m, lt_select(a, b)) and keep(m,
  // scale2_rounded(x, kf)) as one zero-masked vminps / vscalefps on AVX-512 (the masked lanes are
  // +0, as keep makes them). Elsewhere false: the template emits the op and the keep.
  bool keep_lt_select(M m, F a, F b, F& out) const {
    if (!kmask()) return false;
    out = new_vec();
    cc_.k(m.k).z().emit(kDouble ? asmjit::x86::Inst::kIdVminpd : asmjit::x86::Inst::kIdVminps, out,
                        a, b);
    return true;
  }
  bool scale2_rounded_keep(M m, F x, F kf, F& out) const {
    if (!kmask()) return false;
    out = new_vec();
    cc_.k(m.k).z().emit(kDouble ? asmjit::x86::Inst::kIdVscalefpd : asmjit::x86::Inst::kIdVscalefps,
                        out, x, kf);
    return true;
  }

  // vecmath's optional hook (common.h, round_small): x rounded to the nearest integer, ties to
  // even, in one vrndscaleps / vrndscalepd on AVX-512 (for |x| < 2^22 / 2^51 the magic trick's
  // integer; NaN stays NaN). Elsewhere false: the template adds and subtracts 1.5 * 2^p.
  bool round_small(F x, F& out) const {
    if (!kmask()) return false;
    out = round(x, 0);
    return true;
  }

  // ---- beyond the contract: integer lanes (Int32 on the float emitter, Int64 on the double
  // one) and rounding, for the JIT's integer and rounding expressions ----
  using Gp = asmjit::x86::Gp;
  // a * b, wrapping. SSE2 (and AVX2 for 64-bit lanes) have no such multiply: composed of
  // 32 x 32 -> 64-bit pmuludq products, exact modulo 2^32 (2^64).
  I imul(I a, I b) const {
    namespace Inst = asmjit::x86::Inst;
    if (kmask() || (vex() && !kDouble)) {
      I d = new_vec();
      cc_.emit(kDouble ? Inst::kIdVpmullq : Inst::kIdVpmulld, d, a, b);
      return d;
    }
    const InstId mulu = vex() ? Inst::kIdVpmuludq : Inst::kIdPmuludq;
    auto mul = [&](I x, I y) {
      I d = new_vec();
      if (vex()) {
        cc_.emit(mulu, d, x, y);
      } else {
        cc_.emit(Inst::kIdMovdqa, d, x);
        cc_.emit(mulu, d, y);
      }
      return d;
    };
    auto shr64 = [&](I x) {
      return shift(I_(kIdVpsrlq_, kIdVpsrlq_, kIdPsrlq_, kIdPsrlq_), x, 32);
    };
    auto shl64 = [&](I x) {
      return shift(I_(kIdVpsllq_, kIdVpsllq_, kIdPsllq_, kIdPsllq_), x, 32);
    };
    auto add64 = [&](I x, I y) {
      return arith(I_(kIdVpaddq_, kIdVpaddq_, kIdPaddq_, kIdPaddq_), x, y);
    };
    if (kDouble) {  // lo(a) lo(b) + ((hi(a) lo(b) + lo(a) hi(b)) << 32)
      I cross = add64(mul(shr64(a), b), mul(a, shr64(b)));
      return add64(mul(a, b), shl64(cross));
    }
    // SSE2, 32-bit lanes: even lanes' and odd lanes' products, low halves interleaved.
    I even = mul(a, b), odd = mul(shr64(a), shr64(b));
    I e = new_vec(), o = new_vec();
    cc_.emit(Inst::kIdPshufd, e, even, asmjit::imm(0x08));
    cc_.emit(Inst::kIdPshufd, o, odd, asmjit::imm(0x08));
    cc_.emit(Inst::kIdPunpckldq, e, o);
    return e;
  }
  // A signed integer compare; `pred` as vpcmp's: 0 eq, 1 lt, 2 le, 4 ne, 5 ge, 6 gt.
  M icmp(int pred, I a, I b) const {
    namespace Inst = asmjit::x86::Inst;
    M r;
    if (kmask()) {
      r.k = cc_.newKw();
      cc_.emit(kDouble ? Inst::kIdVpcmpq : Inst::kIdVpcmpd, r.k, a, b, asmjit::imm(pred));
      return r;
    }
    switch (pred) {
      case 0:
        r.v = ieq(a, b);
        return r;
      case 1:
        r.v = igt(b, a);
        return r;
      case 6:
        r.v = igt(a, b);
        return r;
      case 2:
        return mask_not(icmp(6, a, b));
      case 5:
        return mask_not(icmp(1, a, b));
      default:
        return mask_not(icmp(0, a, b));
    }
  }
  // Rounding to an integral value: mode 0 nearest (half to even, as nearbyint), 1 floor, 2 ceil.
  F round(F x, int mode) const {
    namespace Inst = asmjit::x86::Inst;
    if (vex()) {
      F d = new_vec();
      if (kmask())
        cc_.emit(kDouble ? Inst::kIdVrndscalepd : Inst::kIdVrndscaleps, d, x,
                 asmjit::imm(8 | mode));
      else
        cc_.emit(kDouble ? Inst::kIdVroundpd : Inst::kIdVroundps, d, x, asmjit::imm(8 | mode));
      return d;
    }
    // SSE2 has no rounding instruction: |x| + 2^m - 2^m rounds |x| < 2^m (m mantissa bits) to
    // an integer, half to even, exactly; floor / ceil step from there; the sign is x's (floor
    // and ceil of x have x's sign, zeros included); |x| >= 2^m and NaN are already integral.
    const F sign = splat(-0.0);
    const F ax = bit_andnot(sign, x);
    const F big = splat(kDouble ? 0x1p52 : 0x1p23);
    auto with_sign_of_x = [&](F v) { return bit_or(bit_andnot(sign, v), bit_and(sign, x)); };
    F r = with_sign_of_x(sub(add(ax, big), big));
    if (mode == 1) r = select(gt(r, x), sub(r, splat(1.0)), r);
    if (mode == 2) r = select(lt(r, x), add(r, splat(1.0)), r);
    r = with_sign_of_x(r);
    return select(lt(ax, big), r, x);
  }

  // ---- operands ----
  // Loads one element (narrow) or a vector (wide) from `m`; `tail` (AVX-512 wide only) masks the
  // lanes past the end (zeroed, never read).
  F load(const asmjit::x86::Mem& m, const asmjit::x86::KReg* tail = nullptr) const {
    F d = new_vec();
    if (tail != nullptr)
      cc_.k(*tail).z().emit(kDouble ? kIdVmovupd_ : kIdVmovups_, d, m);
    else
      load_into(d, m);
    return d;
  }
  // The lanes at `m` into the existing register d.
  void load_into(F d, const asmjit::x86::Mem& m) const {
    if (bytes() <= 8) {
      cc_.emit(
          vex() ? (bytes() == 8 ? kIdVmovsd_ : kIdVmovss_) : (bytes() == 8 ? kIdMovsd_ : kIdMovss_),
          d, m);
    } else {
      cc_.emit(vex() ? (kDouble ? kIdVmovupd_ : kIdVmovups_) : (kDouble ? kIdMovupd_ : kIdMovups_),
               d, m);
    }
  }
  // Every lane the element at `m` (a broadcast operand).
  F load_broadcast(const asmjit::x86::Mem& m) const {
    if (lanes_ == 1) return load(m);
    F d = new_vec();
    if (vex() && kDouble && bytes() <= 16) {
      cc_.emit(asmjit::x86::Inst::kIdVmovddup, d, m);  // vbroadcastsd has no xmm form
    } else if (vex()) {
      cc_.emit(kDouble ? kIdVbroadcastsd_ : kIdVbroadcastss_, d, m);
    } else if (kDouble) {
      cc_.emit(kIdMovsd_, d, m);
      cc_.emit(asmjit::x86::Inst::kIdUnpcklpd, d, d);
    } else {
      cc_.emit(kIdMovss_, d, m);
      cc_.emit(asmjit::x86::Inst::kIdShufps, d, d, asmjit::imm(0));
    }
    return d;
  }
  // A full-vector non-temporal store (the address is aligned to the vector width).
  void store_streaming(const asmjit::x86::Mem& m, F v) const {
    if (vex())
      cc_.emit(kDouble ? asmjit::x86::Inst::kIdVmovntpd : asmjit::x86::Inst::kIdVmovntps, m, v);
    else
      cc_.emit(kDouble ? asmjit::x86::Inst::kIdMovntpd : asmjit::x86::Inst::kIdMovntps, m, v);
  }
  void store(const asmjit::x86::Mem& m, F v, const asmjit::x86::KReg* tail = nullptr) const {
    if (tail != nullptr) {
      cc_.k(*tail).emit(kDouble ? kIdVmovupd_ : kIdVmovups_, m, v);
    } else if (bytes() <= 8) {
      cc_.emit(
          vex() ? (bytes() == 8 ? kIdVmovsd_ : kIdVmovss_) : (bytes() == 8 ? kIdMovsd_ : kIdMovss_),
          m, v);
    } else {
      cc_.emit(vex() ? (kDouble ? kIdVmovupd_ : kIdVmovups_) : (kDouble ? kIdMovupd_ : kIdMovups_),
               m, v);
    }
  }

 private:
  using InstId = asmjit::InstId;
  // Instruction ids, by (VEX/EVEX float, VEX/EVEX double, SSE float, SSE double).
  struct Quad {
    InstId vps, vpd, sps, spd;
  };
  static constexpr Quad I_(InstId a, InstId b, InstId c, InstId d) { return {a, b, c, d}; }
  static constexpr Quad kMin = {asmjit::x86::Inst::kIdVminps, asmjit::x86::Inst::kIdVminpd,
                                asmjit::x86::Inst::kIdMinps, asmjit::x86::Inst::kIdMinpd};
  static constexpr Quad kMax = {asmjit::x86::Inst::kIdVmaxps, asmjit::x86::Inst::kIdVmaxpd,
                                asmjit::x86::Inst::kIdMaxps, asmjit::x86::Inst::kIdMaxpd};
  InstId pick(const Quad& q) const {
    return vex() ? (kDouble ? q.vpd : q.vps) : (kDouble ? q.spd : q.sps);
  }

  // d = a op b: VEX's three operands, or SSE's copy of a into d (none when d is a) and op d, b.
  void emit3(InstId vex_id, InstId sse_id, F d, F a, F b) const {
    if (vex()) {
      cc_.emit(vex_id, d, a, b);
    } else {
      if (d.id() != a.id()) cc_.emit(asmjit::x86::Inst::kIdMovaps, d, a);
      cc_.emit(sse_id, d, b);
    }
  }
  void arith_to(const Quad& q, F d, F b) const { emit3(pick(q), pick(q), d, d, b); }
  F arith(const Quad& q, F a, F b) const {
    F d = new_vec();
    emit3(pick(q), pick(q), d, a, b);
    return d;
  }
  I shift(const Quad& q, I a, int n) const {
    I d = new_vec();
    if (vex()) {
      cc_.emit(pick(q), d, a, asmjit::imm(n));
    } else {
      cc_.emit(asmjit::x86::Inst::kIdMovaps, d, a);
      cc_.emit(pick(q), d, asmjit::imm(n));
    }
    return d;
  }
  M cmp(F a, F b, int predicate) const {
    M r;
    if (kmask()) {
      r.k = cc_.newKw();
      cc_.emit(kDouble ? kIdVcmppd_ : kIdVcmpps_, r.k, a, b, asmjit::imm(predicate));
    } else if (vex()) {
      r.v = new_vec();
      cc_.emit(kDouble ? kIdVcmppd_ : kIdVcmpps_, r.v, a, b, asmjit::imm(predicate));
    } else {
      r.v = new_vec();
      cc_.emit(asmjit::x86::Inst::kIdMovaps, r.v, a);
      cc_.emit(kDouble ? kIdCmppd_ : kIdCmpps_, r.v, b, asmjit::imm(predicate));
    }
    return r;
  }
  enum BitOp { kBitAnd, kBitOr, kBitXor, kBitAndnot };
  static constexpr InstId kBitEvex[] = {asmjit::x86::Inst::kIdVpandd, asmjit::x86::Inst::kIdVpord,
                                        asmjit::x86::Inst::kIdVpxord,
                                        asmjit::x86::Inst::kIdVpandnd};
  static constexpr InstId kBitAvx[] = {asmjit::x86::Inst::kIdVandps, asmjit::x86::Inst::kIdVorps,
                                       asmjit::x86::Inst::kIdVxorps, asmjit::x86::Inst::kIdVandnps};
  static constexpr InstId kBitSse[] = {asmjit::x86::Inst::kIdAndps, asmjit::x86::Inst::kIdOrps,
                                       asmjit::x86::Inst::kIdXorps, asmjit::x86::Inst::kIdAndnps};
  void bit_to(BitOp op, F d, F a, F b) const {
    emit3(kmask() ? kBitEvex[op] : kBitAvx[op], kBitSse[op], d, a, b);
  }
  F bit(BitOp op, F a, F b) const {
    F d = new_vec();
    bit_to(op, d, a, b);
    return d;
  }
  M mask_op(InstId kinst, M a, M b, BitOp op) const {
    M r;
    if (kmask()) {
      r.k = cc_.newKw();
      cc_.emit(kinst, r.k, a.k, b.k);
    } else {
      r.v = bit(op, a.v, b.v);
    }
    return r;
  }
  // 0 / all-ones lanes (AVX2, SSE2 only).
  F ieq(I a, I b) const {
    namespace Inst = asmjit::x86::Inst;
    if (!kDouble || vex())
      return arith(I_(Inst::kIdVpcmpeqd, Inst::kIdVpcmpeqq, Inst::kIdPcmpeqd, Inst::kIdPcmpeqd), a,
                   b);
    // SSE2, 64-bit lanes: both halves equal.
    I e = arith(I_(Inst::kIdPcmpeqd, Inst::kIdPcmpeqd, Inst::kIdPcmpeqd, Inst::kIdPcmpeqd), a, b);
    I s = new_vec();
    cc_.emit(Inst::kIdPshufd, s, e, asmjit::imm(0xB1));
    return bit(kBitAnd, e, s);
  }
  F igt(I a, I b) const {
    namespace Inst = asmjit::x86::Inst;
    if (!kDouble || vex())
      return arith(I_(Inst::kIdVpcmpgtd, Inst::kIdVpcmpgtq, Inst::kIdPcmpgtd, Inst::kIdPcmpgtd), a,
                   b);
    // SSE2, 64-bit lanes: high halves signed-greater, or equal with the low halves greater as
    // unsigned (biased by 2^31 to compare them signed).
    const I bias = constant(0x80000000ull);
    const I x = bit(kBitXor, a, bias), y = bit(kBitXor, b, bias);
    const I gt =
        arith(I_(Inst::kIdPcmpgtd, Inst::kIdPcmpgtd, Inst::kIdPcmpgtd, Inst::kIdPcmpgtd), x, y);
    const I eq =
        arith(I_(Inst::kIdPcmpeqd, Inst::kIdPcmpeqd, Inst::kIdPcmpeqd, Inst::kIdPcmpeqd), x, y);
    I gt_hi = new_vec(), gt_lo = new_vec(), eq_hi = new_vec();
    cc_.emit(Inst::kIdPshufd, gt_hi, gt, asmjit::imm(0xF5));
    cc_.emit(Inst::kIdPshufd, gt_lo, gt, asmjit::imm(0xA0));
    cc_.emit(Inst::kIdPshufd, eq_hi, eq, asmjit::imm(0xF5));
    return bit(kBitOr, gt_hi, bit(kBitAnd, eq_hi, gt_lo));
  }
  F all_ones() const { return kDouble ? constant(~uint64_t{0}) : constant(0xffffffffu); }

  // A double in the kernel's constant pool (a scalar argument).
  asmjit::x86::Mem splat_double_mem(double v) const {
    return cc_.newConst(asmjit::ConstPoolScope::kLocal, &v, sizeof(v));
  }
  static constexpr double kInfinity = std::numeric_limits<double>::infinity();

  // A register holding `bits` in every lane, loaded once before the loops.
  F constant(uint64_t bits) const {
    const int width = std::max(16, bytes());
    const int32_t shape = width * 16 + static_cast<int32_t>(sizeof(T));
    if (const F* known = ctx_.constants.find(bits, shape)) return *known;
    alignas(64) unsigned char data[64];
    const int n = 64 / static_cast<int>(sizeof(T));
    for (int i = 0; i < n; ++i) std::memcpy(data + i * sizeof(T), &bits, sizeof(T));
    asmjit::x86::Mem mem =
        cc_.newConst(asmjit::ConstPoolScope::kLocal, data, static_cast<size_t>(width));
    const auto saved = cc_.setCursor(ctx_.hoist_point);
    F d = new_vec();
    cc_.emit(vex() ? asmjit::x86::Inst::kIdVmovups : asmjit::x86::Inst::kIdMovups, d, mem);
    ctx_.hoist_point = cc_.cursor();
    cc_.setCursor(saved);
    ctx_.constants.insert(bits, shape, d);
    return d;
  }

  static constexpr InstId kIdVaddpd_ = asmjit::x86::Inst::kIdVaddpd;
  static constexpr InstId kIdAddps_ = asmjit::x86::Inst::kIdAddps;
  static constexpr InstId kIdAddpd_ = asmjit::x86::Inst::kIdAddpd;
  static constexpr InstId kIdVsubps_ = asmjit::x86::Inst::kIdVsubps;
  static constexpr InstId kIdVsubpd_ = asmjit::x86::Inst::kIdVsubpd;
  static constexpr InstId kIdSubps_ = asmjit::x86::Inst::kIdSubps;
  static constexpr InstId kIdSubpd_ = asmjit::x86::Inst::kIdSubpd;
  static constexpr InstId kIdVmulps_ = asmjit::x86::Inst::kIdVmulps;
  static constexpr InstId kIdVmulpd_ = asmjit::x86::Inst::kIdVmulpd;
  static constexpr InstId kIdMulps_ = asmjit::x86::Inst::kIdMulps;
  static constexpr InstId kIdMulpd_ = asmjit::x86::Inst::kIdMulpd;
  static constexpr InstId kIdVdivps_ = asmjit::x86::Inst::kIdVdivps;
  static constexpr InstId kIdVdivpd_ = asmjit::x86::Inst::kIdVdivpd;
  static constexpr InstId kIdDivps_ = asmjit::x86::Inst::kIdDivps;
  static constexpr InstId kIdDivpd_ = asmjit::x86::Inst::kIdDivpd;
  static constexpr InstId kIdVsqrtps_ = asmjit::x86::Inst::kIdVsqrtps;
  static constexpr InstId kIdVsqrtpd_ = asmjit::x86::Inst::kIdVsqrtpd;
  static constexpr InstId kIdSqrtps_ = asmjit::x86::Inst::kIdSqrtps;
  static constexpr InstId kIdSqrtpd_ = asmjit::x86::Inst::kIdSqrtpd;
  static constexpr InstId kIdVcmpps_ = asmjit::x86::Inst::kIdVcmpps;
  static constexpr InstId kIdVcmppd_ = asmjit::x86::Inst::kIdVcmppd;
  static constexpr InstId kIdCmpps_ = asmjit::x86::Inst::kIdCmpps;
  static constexpr InstId kIdCmppd_ = asmjit::x86::Inst::kIdCmppd;
  static constexpr InstId kIdVblendmps_ = asmjit::x86::Inst::kIdVblendmps;
  static constexpr InstId kIdVblendmpd_ = asmjit::x86::Inst::kIdVblendmpd;
  static constexpr InstId kIdVblendvps_ = asmjit::x86::Inst::kIdVblendvps;
  static constexpr InstId kIdVblendvpd_ = asmjit::x86::Inst::kIdVblendvpd;
  static constexpr InstId kIdVpaddd_ = asmjit::x86::Inst::kIdVpaddd;
  static constexpr InstId kIdVpaddq_ = asmjit::x86::Inst::kIdVpaddq;
  static constexpr InstId kIdPaddd_ = asmjit::x86::Inst::kIdPaddd;
  static constexpr InstId kIdPaddq_ = asmjit::x86::Inst::kIdPaddq;
  static constexpr InstId kIdVpsubd_ = asmjit::x86::Inst::kIdVpsubd;
  static constexpr InstId kIdVpsubq_ = asmjit::x86::Inst::kIdVpsubq;
  static constexpr InstId kIdPsubd_ = asmjit::x86::Inst::kIdPsubd;
  static constexpr InstId kIdPsubq_ = asmjit::x86::Inst::kIdPsubq;
  static constexpr InstId kIdVpslld_ = asmjit::x86::Inst::kIdVpslld;
  static constexpr InstId kIdVpsllq_ = asmjit::x86::Inst::kIdVpsllq;
  static constexpr InstId kIdPslld_ = asmjit::x86::Inst::kIdPslld;
  static constexpr InstId kIdPsllq_ = asmjit::x86::Inst::kIdPsllq;
  static constexpr InstId kIdVpsrld_ = asmjit::x86::Inst::kIdVpsrld;
  static constexpr InstId kIdVpsrlq_ = asmjit::x86::Inst::kIdVpsrlq;
  static constexpr InstId kIdPsrld_ = asmjit::x86::Inst::kIdPsrld;
  static constexpr InstId kIdPsrlq_ = asmjit::x86::Inst::kIdPsrlq;
  static constexpr InstId kIdVmovss_ = asmjit::x86::Inst::kIdVmovss;
  static constexpr InstId kIdVmovsd_ = asmjit::x86::Inst::kIdVmovsd;
  static constexpr InstId kIdMovss_ = asmjit::x86::Inst::kIdMovss;
  static constexpr InstId kIdMovsd_ = asmjit::x86::Inst::kIdMovsd;
  static constexpr InstId kIdVmovups_ = asmjit::x86::Inst::kIdVmovups;
  static constexpr InstId kIdVmovaps_ = asmjit::x86::Inst::kIdVmovaps;
  static constexpr InstId kIdVmovapd_ = asmjit::x86::Inst::kIdVmovapd;
  static constexpr InstId kIdVmovupd_ = asmjit::x86::Inst::kIdVmovupd;
  static constexpr InstId kIdMovups_ = asmjit::x86::Inst::kIdMovups;
  static constexpr InstId kIdMovupd_ = asmjit::x86::Inst::kIdMovupd;
  static constexpr InstId kIdVbroadcastss_ = asmjit::x86::Inst::kIdVbroadcastss;
  static constexpr InstId kIdVbroadcastsd_ = asmjit::x86::Inst::kIdVbroadcastsd;

  EmitContextT<E>& ctx_;
  E& cc_;
  int lanes_;
};

// Runs fn with the vector backend of t's lanes over `lanes` lanes: AsmVecOps<double> for
// Float64 and Int64 (sums: integer bits in 64-bit lanes, as body_emitter.h's is64), and
// AsmVecOps<float> for the rest (Float32, and Int32, Bool and masks as 32-bit lanes): the row
// and column renderers' dispatch on a value's dtype. An Int64 value on the float backend gets
// half the register and 32-bit adds.
template <class E, class Fn>
auto with_vec_ops(EmitContextT<E>& ctx, DType t, int lanes, Fn fn) {
  if (t == DType::Float64 || t == DType::Int64) {
    AsmVecOps<double, E> o(ctx, lanes);
    return fn(o);
  }
  AsmVecOps<float, E> o(ctx, lanes);
  return fn(o);
}

// (T)(n + offset) in lane 0 of a new xmm, T Float32 or Float64, as static_cast converts it (the
// register zeroed first: cvtsi2ss/sd merge into it). A reduction's element count (RowSize).
template <class E>
asmjit::x86::Xmm count_as_float(E& cc, JitIsa isa, asmjit::x86::Gp n, int64_t offset, DType t) {
  namespace Inst = asmjit::x86::Inst;
  asmjit::x86::Gp g = cc.newInt64();
  cc.mov(g, n);
  if (offset != 0) cc.add(g, offset);
  asmjit::x86::Xmm x = cc.newXmm();
  const bool f32 = t == DType::Float32;
  if (isa != JitIsa::Sse2) {
    cc.vxorps(x, x, x);
    cc.emit(f32 ? Inst::kIdVcvtsi2ss : Inst::kIdVcvtsi2sd, x, x, g);
  } else {
    cc.xorps(x, x);
    cc.emit(f32 ? Inst::kIdCvtsi2ss : Inst::kIdCvtsi2sd, x, g);
  }
  return x;
}

}  // namespace kiln::jit

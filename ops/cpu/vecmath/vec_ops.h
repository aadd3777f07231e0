// The contract every vector-math "lane backend" implements: the small set of IEEE operations
// out of which kiln's transcendental functions (ops/cpu/vecmath/*.h) are written once, as
// templates over a backend `O`. Two backends instantiate the same templates:
//   - the eager kernels: O = GnuVecOps<T, W> (ops/cpu/vecmath/gnu_vec_ops.h), GCC vector
//     extensions compiled once per ISA (W bytes: 16 baseline, 32 AVX2, 64 AVX-512);
//   - the JIT: O = an asmjit emitter (jit/cpu/vec_emitter.h) whose methods emit instructions.
// Because every operation below is exactly rounded (or exact), one algorithm gives the same bits
// in every backend, at every vector width, on every ISA: a fused JIT kernel reproduces the eager
// bits wherever it does not reassociate. The compiler never contracts a mul and an add on its own
// (-ffp-contract=off); the algorithms ask for a fused multiply-add explicitly (fma below), which is
// exactly rounded too: one instruction where the ISA has it (AVX2 and AVX-512 tiers), the same
// bits from libm's correctly rounded fma lane by lane where it does not (baseline x86-64).
//
// Types of a backend O (T = float or double):
//   O::T   the scalar type;   O::F  a vector of T lanes;
//   O::I   a vector of signed integers of T's width (int32 for float, int64 for double), sharing
//          F's bits;          O::M  a lane mask.
// Operations (members of an O object `o`; arguments by value, results new values):
//   F splat(T c)                  every lane c (T is given as double for both widths)
//   F add(F,F) sub mul div        IEEE, round to nearest even; never fused
//   F sqrt(F)                     IEEE square root
//   F fma(F a, F b, F c)          a * b + c rounded once (IEEE fusedMultiplyAdd)
//   M lt(F,F) le gt ge eq         ordered compares: false when either lane is NaN
//   M unord(F,F)                  true when either lane is NaN
//   M nlt(F,F)                    !(a < b): true when either lane is NaN (cmpps NLT_US)
//   M mask_and(M,M) mask_or(M,M) mask_not(M)
//   F select(M m, F a, F b)       m ? a : b, lane by lane
//   F keep(M m, F a)              m ? a : +0 (one and, or one zero-masked move with AVX-512)
//   F lt_select(F a, F b)         a < b ? a : b (b when either lane is NaN): select(lt(a, b), a, b)
//   F gt_select(F a, F b)         a > b ? a : b (b when either lane is NaN): select(gt(a, b), a, b)
//                                 (x86's minps / maxps compute exactly these, in one instruction)
//   F bit_and(F,F) bit_or bit_xor on the raw bits; bit_andnot(a, b) = ~a & b
//   I as_int(F) / F as_float(I)   reinterpretation of the bits
//   I isplat(int64_t c)           every lane c (truncated to the lane width)
//   I iadd(I,I) isub(I,I)         wrapping integer arithmetic
//   I shl(I, int n) shr(I, int n) shifts by a constant; shr is logical (no arithmetic shift:
//                                 SSE2/AVX2 have none for 64-bit lanes)
// Nothing else: no min/max with C's fmin/fmax NaN rules (write lt_select / gt_select), no
// float<->int conversion (round with the 1.5*2^(mantissa bits) trick: add then subtract), no
// gather. A function that needs more asks for a new primitive here, implemented in both
// backends and tested bitwise across them (tests/test_vecmath_*.cpp).
// Optional hooks (a backend may have them; the templates test with `requires`): one
// instruction for a step whose exactly rounded result the primitives above also compute, so
// the bits are the same with or without it:
//   bool scale2_rounded(F x, F kf, F& out)   x * 2^kf rounded once (common.h, scale2)
//   bool round_small(F x, F& out)            x rounded to an integer, ties to even, for
//                                            |x| < 2^22 / 2^51 (common.h, round_small)
//   void reduce_pio2_huge(...)               sin/cos's exact reduction (sin_cos.h)
//   bool fused_fma()                         fma is one instruction: float32 two_prod takes
//                                            fma(a, b, -p) (double_t.h; the same exact e)
// The JIT has the first two on AVX-512 (vscalefps, vrndscaleps; false elsewhere); eager has
// none of them but fused_fma (both: true on the AVX2 and AVX-512 tiers).
// tests/test_jit_exp_dense.cpp checks the functions using them over the float range.
#pragma once
#include <cstdint>

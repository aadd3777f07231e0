// A lane backend (ops/cpu/vecmath/vec_ops.h) that runs another backend's operations on two
// vectors at once: every value is a pair of registers, and each operation emits its instruction
// for the first half and then, right after it, for the second. The vector math is a long chain of
// dependent operations per vector (tanh: ~40 deep), more than the out-of-order window overlaps
// across loop iterations; two independent chains side by side keep both FP pipes busy. Each half
// is computed by exactly the instructions of the single-vector backend, so the bits are the same.
//
// Memory: a contiguous operand's second half is `stride_bytes` after the first; a broadcast
// operand is loaded once and used for both halves.
#pragma once
#include <asmjit/x86.h>

namespace kiln::jit {

template <class O>
class PairedOps {
 public:
  using T = typename O::T;
  struct F {
    typename O::F h[2];
  };
  using I = F;
  struct M {
    typename O::M h[2];
  };

  PairedOps(const O& o, int stride_bytes) : o_(o), stride_(stride_bytes) {}

  int lanes() const { return 2 * o_.lanes(); }

  // ---- the contract (vec_ops.h) ----
  F splat(double c) const {
    const typename O::F v = o_.splat(c);
    return {{v, v}};
  }
  I isplat(int64_t c) const {
    const typename O::I v = o_.isplat(c);
    return {{v, v}};
  }
#define KILN_PAIRED_BINARY(name) \
  F name(F a, F b) const { return {{o_.name(a.h[0], b.h[0]), o_.name(a.h[1], b.h[1])}}; }
#define KILN_PAIRED_COMPARE(name) \
  M name(F a, F b) const { return {{o_.name(a.h[0], b.h[0]), o_.name(a.h[1], b.h[1])}}; }
  KILN_PAIRED_BINARY(add)
  KILN_PAIRED_BINARY(sub)
  KILN_PAIRED_BINARY(mul)
  KILN_PAIRED_BINARY(div)
  KILN_PAIRED_BINARY(bit_and)
  KILN_PAIRED_BINARY(bit_or)
  KILN_PAIRED_BINARY(bit_xor)
  KILN_PAIRED_BINARY(bit_andnot)
  KILN_PAIRED_BINARY(iadd)
  KILN_PAIRED_BINARY(isub)
  KILN_PAIRED_COMPARE(lt)
  KILN_PAIRED_COMPARE(le)
  KILN_PAIRED_COMPARE(gt)
  KILN_PAIRED_COMPARE(ge)
  KILN_PAIRED_COMPARE(eq)
  KILN_PAIRED_COMPARE(unord)
  KILN_PAIRED_COMPARE(ne)
#undef KILN_PAIRED_BINARY
#undef KILN_PAIRED_COMPARE
  F sqrt(F a) const { return {{o_.sqrt(a.h[0]), o_.sqrt(a.h[1])}}; }
  M mask_and(M a, M b) const {
    return {{o_.mask_and(a.h[0], b.h[0]), o_.mask_and(a.h[1], b.h[1])}};
  }
  M mask_or(M a, M b) const { return {{o_.mask_or(a.h[0], b.h[0]), o_.mask_or(a.h[1], b.h[1])}}; }
  M mask_not(M a) const { return {{o_.mask_not(a.h[0]), o_.mask_not(a.h[1])}}; }
  F select(M m, F a, F b) const {
    return {{o_.select(m.h[0], a.h[0], b.h[0]), o_.select(m.h[1], a.h[1], b.h[1])}};
  }
  F lane_fixup(M m, F x, F r, T (*fn)(T)) const {
    return {{o_.lane_fixup(m.h[0], x.h[0], r.h[0], fn), o_.lane_fixup(m.h[1], x.h[1], r.h[1], fn)}};
  }
  I as_int(F a) const { return {{o_.as_int(a.h[0]), o_.as_int(a.h[1])}}; }
  F as_float(I a) const { return {{o_.as_float(a.h[0]), o_.as_float(a.h[1])}}; }
  I shl(I a, int n) const { return {{o_.shl(a.h[0], n), o_.shl(a.h[1], n)}}; }
  I shr(I a, int n) const { return {{o_.shr(a.h[0], n), o_.shr(a.h[1], n)}}; }

  // ---- operands (full vectors only: the paired loop never runs a tail) ----
  F load(const asmjit::x86::Mem& m, const asmjit::x86::KReg* tail = nullptr) const {
    return {{o_.load(m, tail), o_.load(m.cloneAdjusted(stride_), tail)}};
  }
  F load_broadcast(const asmjit::x86::Mem& m) const {
    const typename O::F v = o_.load_broadcast(m);
    return {{v, v}};
  }
  void store(const asmjit::x86::Mem& m, F v, const asmjit::x86::KReg* tail = nullptr) const {
    o_.store(m, v.h[0], tail);
    o_.store(m.cloneAdjusted(stride_), v.h[1], tail);
  }
  void store_streaming(const asmjit::x86::Mem& m, F v) const {
    o_.store_streaming(m, v.h[0]);
    o_.store_streaming(m.cloneAdjusted(stride_), v.h[1]);
  }

 private:
  O o_;
  int stride_;
};

}  // namespace kiln::jit

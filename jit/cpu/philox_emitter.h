// Philox4x32-10 and the uniform numbers of docs/random.md in generated code: the JIT's
// RandUniform expression (jit/loop/loop_kernel.h). Element i of the index space draws
// Philox::draw(seed, counter + i) (runtime/philox.h) and turns it into random_uniform<T>
// (ops/random.h), so a fused kernel gives eager's bits on every ISA, width and thread split.
//
// Float32 kernels keep the Philox words in 32-bit lanes (every lane an element): the 32 x 32 ->
// 64-bit products come from pmuludq on the even lanes and on the odd lanes shifted down, their
// halves put back in place with 64-bit shifts (SSE2, AVX2 and AVX-512 alike). Float64 kernels
// keep each word in the low half of a 64-bit lane (the element's), so one pmuludq gives the
// whole product. The counter is 64 bits: counter + i is formed in a general register for the
// vector's first element, then lane j adds j (with the carry into the high word on 32-bit lanes).
// Outputs: Float32 (r0 >> 8) * 2^-24 (an exact int32 conversion); Float64
// ((r0 << 32 | r1) >> 11) * 2^-53, the 53-bit integer converted exactly as two halves through
// the 2^52 bit trick (AVX2 and SSE2 have no 64-bit integer conversion).
#pragma once
#include <asmjit/x86.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "jit/cpu/vec_emitter.h"
#include "runtime/philox.h"

namespace kiln::jit {

// The uniform draw of the lanes of `o` whose first element has linear index `index` (a general
// register), with the Philox words in the four Int32 params at params + first_param * 8.
template <class T, class E>
asmjit::x86::Vec emit_rand_uniform(const AsmVecOps<T, E>& o, E& cc, const asmjit::x86::Gp& index,
                                   const asmjit::x86::Gp& params, int32_t first_param) {
  namespace x86 = asmjit::x86;
  namespace Inst = x86::Inst;
  using F = x86::Vec;
  constexpr bool kDouble = std::is_same_v<T, double>;
  const bool vex = o.vex();
  // d = a op b for 64-bit lane shifts and pmuludq (not in the lane contract).
  auto op2 = [&](asmjit::InstId v_id, asmjit::InstId s_id, F a, F b) {
    F d = o.new_vec();
    if (vex) {
      cc.emit(v_id, d, a, b);
    } else {
      cc.emit(Inst::kIdMovdqa, d, a);
      cc.emit(s_id, d, b);
    }
    return d;
  };
  auto shift64 = [&](bool left, F a, int n) {
    F d = o.new_vec();
    const asmjit::InstId id =
        left ? (vex ? Inst::kIdVpsllq : Inst::kIdPsllq) : (vex ? Inst::kIdVpsrlq : Inst::kIdPsrlq);
    if (vex) {
      cc.emit(id, d, a, asmjit::imm(n));
    } else {
      cc.emit(Inst::kIdMovdqa, d, a);
      cc.emit(id, d, asmjit::imm(n));
    }
    return d;
  };
  auto mulu = [&](F a, F b) { return op2(Inst::kIdVpmuludq, Inst::kIdPmuludq, a, b); };
  // Lane j holds j (integers of the lane width), from the kernel's constant pool.
  auto iota = [&] {
    alignas(64) unsigned char data[64] = {};
    const int n = 64 / static_cast<int>(sizeof(T));
    for (int j = 0; j < n; ++j) {
      const std::conditional_t<kDouble, uint64_t, uint32_t> v = static_cast<uint32_t>(j);
      std::memcpy(data + j * sizeof(T), &v, sizeof(T));
    }
    const x86::Mem m = cc.newConst(asmjit::ConstPoolScope::kLocal, data,
                                   static_cast<size_t>(std::max(16, o.bytes())));
    F d = o.new_vec();
    cc.emit(vex ? Inst::kIdVmovups : Inst::kIdMovups, d, m);
    return d;
  };
  const x86::Mem seed_lo = x86::ptr(params, first_param * 8),
                 seed_hi = x86::ptr(params, (first_param + 1) * 8);
  // counter + index for the first lane, in a general register (params hold zero-extended words).
  x86::Gp base = cc.newGpq("philox_ctr"), hi = cc.newGpq();
  cc.mov(base.r32(), x86::dword_ptr(params, (first_param + 2) * 8));
  cc.mov(hi.r32(), x86::dword_ptr(params, (first_param + 3) * 8));
  cc.shl(hi, 32);
  cc.or_(base, hi);
  cc.add(base, index);

  F c0, c1, k0, k1;
  if constexpr (kDouble) {
    x86::Mem tmp = cc.newStack(8, 8);
    cc.mov(tmp, base);
    const F c = o.iadd(o.load_broadcast(tmp), iota());
    const F low = o.isplat(0xFFFFFFFFll);
    c0 = o.bit_and(c, low);
    c1 = o.shr(c, 32);
    k0 = o.bit_and(o.load_broadcast(seed_lo), low);
    k1 = o.bit_and(o.load_broadcast(seed_hi), low);
  } else {
    x86::Mem tmp = cc.newStack(8, 8);
    cc.mov(tmp, base);
    x86::Mem tmp_hi = tmp.cloneAdjusted(4);
    tmp.setSize(4);
    tmp_hi.setSize(4);
    const F lane = iota();
    c0 = o.iadd(o.load_broadcast(tmp), lane);
    // The carry into the high word: c0 < lane as unsigned (biased to a signed compare).
    const F bias = o.isplat(INT32_MIN);
    const auto carry = o.icmp(1, o.bit_xor(c0, bias), o.bit_xor(lane, bias));
    c1 = o.iadd(o.load_broadcast(tmp_hi), o.select(carry, o.isplat(1), o.isplat(0)));
    k0 = o.load_broadcast(seed_lo);
    k1 = o.load_broadcast(seed_hi);
  }
  const F m0 = o.isplat(Philox::kMul0), m1 = o.isplat(Philox::kMul1);
  const F key0 = o.isplat(Philox::kKey0), key1 = o.isplat(Philox::kKey1);
  // The rounds work on 64-bit lanes whose low halves hold the words (pmuludq reads only those):
  // a Float64 kernel's lanes as they are; a Float32 kernel's words as two registers each, the
  // even lanes (in place) and the odd ones (shifted down). A product's low half is then the
  // product itself and its high half one shift; the high halves of the words carry garbage that
  // no pmuludq reads, and the result's low halves are put back in 32-bit lanes at the end. (The
  // 32-bit lanes' products took seven shifts and two ors each to split and rejoin: 28
  // instructions a round for eight elements, 18 now.)
  constexpr int kParts = kDouble ? 1 : 2;
  F w0[kParts], w1[kParts], w2[kParts], w3[kParts];
  w0[0] = c0;
  w1[0] = c1;
  if constexpr (!kDouble) {
    w0[1] = shift64(false, c0, 32);
    w1[1] = shift64(false, c1, 32);
  }
  for (int h = 0; h < kParts; ++h) w2[h] = w3[h] = o.isplat(0);
  for (int round = 0; round < 10; ++round) {
    for (int h = 0; h < kParts; ++h) {
      const F p0 = mulu(w0[h], m0), p1 = mulu(w2[h], m1);
      w0[h] = o.bit_xor(o.bit_xor(shift64(false, p1, 32), w1[h]), k0);
      w1[h] = p1;
      w2[h] = o.bit_xor(o.bit_xor(shift64(false, p0, 32), w3[h]), k1);
      w3[h] = p0;
    }
    if (round == 9) break;
    k0 = o.iadd(k0, key0);
    k1 = o.iadd(k1, key1);
  }
  // The words' low halves (r0, and r1 for Float64).
  auto low_half = [&](F v) { return shift64(false, shift64(true, v, 32), 32); };
  c0 = low_half(w0[0]);
  if constexpr (kDouble) {
    c1 = low_half(w1[0]);
  } else {
    c0 = o.bit_or(c0, shift64(true, w0[1], 32));  // the odd lanes back in place
  }
  if constexpr (kDouble) {
    // v = (r0 << 32 | r1) >> 11 < 2^53, as double: hi * 2^32 + lo, each half exact through
    // (half | bits of 2^52) - 2^52.
    const F v = o.shr(o.bit_or(o.shl(c0, 32), c1), 11);
    const F two52 = o.splat(4503599627370496.0);
    const F vh = o.sub(o.bit_or(o.shr(v, 32), two52), two52);
    const F vl = o.sub(o.bit_or(o.bit_and(v, o.isplat(0xFFFFFFFFll)), two52), two52);
    return o.mul(o.add(o.mul(vh, o.splat(4294967296.0)), vl), o.splat(0x1.0p-53));
  } else {
    F f = o.new_vec();
    cc.emit(vex ? Inst::kIdVcvtdq2ps : Inst::kIdCvtdq2ps, f, o.shr(c0, 8));
    return o.mul(f, o.splat(0x1.0p-24));
  }
}

}  // namespace kiln::jit

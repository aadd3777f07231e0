// The renderer of a row kernel's function (render_reduce.h, render_row_function): per row, one
// pass over the row per Reduce expression (each by its row program, jit/loop/row_program.h),
// the row values each makes computable, then a pass for the element stores and the row values'
// stores; on AVX-512 a softmax's element pass rides along the next row's first pass
// (row_pipelined_pass). A private header of jit/cpu: render_reduce.cpp runs it, and its members
// are defined by concept in
//   row_renderer.cpp  the driver (render()) and the helpers the passes share: cursors over the
//                     operands and the scratch rows, tails, the fused element bodies;
//   row_passes.cpp    the Reduce passes (ReduceFirst's included) and the row values hoisted
//                     after each;
//   row_stores.cpp    the element pass and the row values' stores.
// A template over the emitter `E` (body_emitter.h): KernelCompiler or RecordingAssembler, the
// same instructions on both. Each file instantiates the members it defines that the others call,
// for both emitters, member by member and never with `template class`: a unity batch may put
// these files in one translation unit, where a class-wide instantiation would instantiate the
// other files' members a second time.
#pragma once
#include <asmjit/x86.h>

#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "jit/cpu/body_emitter.h"
#include "jit/cpu/emit_function.h"
#include "jit/cpu/kernel_compiler.h"
#include "jit/cpu/recording_assembler.h"
#include "jit/cpu/render.h"
#include "jit/cpu/vec_emitter.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit::row_detail {
namespace x86 = asmjit::x86;
namespace Inst = asmjit::x86::Inst;
using asmjit::imm;
using asmjit::Label;

inline int vec_lanes(const LoopKernel& k, JitIsa isa) { return cpu_kernel_lanes(k, isa); }

template <class E>
class RowRenderer {
 public:
  RowRenderer(E& cc, const LoopKernel& k, const KernelVariant& v)
      : cc_(cc), k_(k), v_(v), isa_(v.isa), L_(vec_lanes(k, v.isa)) {}

  void render();

 private:
  // Helpers (row_renderer.cpp; the templates here).
  bool kmask() const { return isa_ == JitIsa::Avx512; }
  bool vex() const { return isa_ != JitIsa::Sse2; }
  bool contiguous(int j) const { return v_.layout[j] == InnerLayout::Contiguous; }

  void move(x86::Vec d, x86::Vec s) {
    if (d.id() != s.id()) cc_.emit(vex() ? Inst::kIdVmovaps : Inst::kIdMovaps, d, s);
  }
  // A mask in registers of its own (a loop-carried one: updated in place, mask_or_to).
  AsmMask fresh_mask(const AsmMask& m);

  // The emitter of t's lanes (Int64 sums in 64-bit lanes: with_vec_ops).
  template <class Fn>
  auto on(DType t, int lanes, Fn fn) {
    return with_vec_ops(*ctx_, t, lanes, fn);
  }

  // (T)(n + offset), in every lane.
  x86::Vec row_size(const Expr& e);

  // Lane 0 of x (a scalar of t) in every lane of a register of L lanes.
  x86::Vec broadcast_scalar(DType t, x86::Vec x);

  std::vector<x86::Vec> body(const std::vector<x86::Gp>& cur, const x86::KReg* tail,
                             const std::vector<uint8_t>& want, const std::vector<uint8_t>& store) {
    return emit_body(*ctx_, L_, k_, v_.layout, cur, params_, tail, want, preset_, store);
  }

  void advance(int elements);
  // Software prefetch of the lines of a row ahead of the one at cur_ (ahead_ bytes on) that the
  // next `elements` elements of each contiguous input cover: the hardware prefetchers stop at
  // each 4 KiB page, and a row of 4 KiB is a page. A prefetch never faults, past the last row
  // included.
  void prefetch_next_row(int elements);
  // The byte distance from a row of each contiguous input to the row its last pass prefetches:
  // the first row at least 8 KiB on, at most 8 rows on (rows of 4 KiB: 2 rows; of 1 KiB: 8; of
  // 8 KiB or more: the next), so at most 16 KiB ahead. Computed once per call into a stack slot
  // (ahead_slot_), which the pass loads at each row. Why these distances, measured: docs/jit.md
  // "Prefetch".
  void prefetch_distances();
  // The same for a count in a register.
  void advance_by(x86::Gp c);
  // In a fused pass (render(), "pipelined"): the previous row's element values at ecur_ and
  // `first` elements on, `tail`-masked, stored as the element pass stores them (`full`: a
  // whole vector, non-temporal where the variant streams).
  void fused_element_body(const x86::KReg* tail, int first, bool full);
  // New stash cursors at the start of the scratch rows at `base`.
  std::vector<x86::Gp> stash_cursors(x86::Gp base);
  // The operands a body reads (its Loads) or writes (the outputs `store` marks) when it
  // evaluates `want` taking the expressions `known` marks as given (as emit_body walks them).
  std::vector<uint8_t> operands_of(const std::vector<uint8_t>& want,
                                   const std::vector<uint8_t>& known,
                                   const std::vector<uint8_t>& store) const;
  std::vector<uint8_t> known(const std::vector<x86::Vec>& preset) const;
  // New cursors at `base` (base_ by default) for the operands `used` marks (the others none:
  // never referenced): each pass walks registers of its own, live over that pass only (the
  // recorder's linear scan, reg_alloc.h, sees one interval per register).
  std::vector<x86::Gp> cursors(const std::vector<uint8_t>& used,
                               const std::vector<x86::Gp>* base = nullptr);
  // The last pass stores the stashed values of one body (`tail`: AVX-512 lanes; elsewhere whole
  // vectors, the scratch row has room past its end).
  // `first`: the body's elements start that many elements on (an unrolled body's copy).
  int stash_disp(size_t i, int first) const {
    return first * static_cast<int>(itemsize(k_.exprs[stash_[i]].type));
  }
  void store_stash(const std::vector<x86::Vec>& out, const x86::KReg* tail, int first = 0);
  void load_stash(const x86::KReg* tail, int first = 0);
  // The instructions emitted since `before` (a copy for interleave()).
  template <class Mark>
  auto since(Mark before) const {
    return body_range(cc_, before);
  }
  using Copies =
      std::vector<decltype(body_range(std::declval<E&>(), body_mark(std::declval<E&>())))>;

  // The tail of `cnt` (< L) elements at cur_: AVX-512 masks the lanes; AVX2 and SSE2 copy the
  // contiguous inputs into stack buffers first (and the outputs out of them after `emit`).
  template <class Emit>
  void tail_body(x86::Gp cnt, bool outputs, const Emit& emit);
  void zero64(x86::Gp p);
  void copy_bytes(x86::Gp dst, x86::Gp src, x86::Gp cnt, int esize);

  // The passes (row_passes.cpp).
  // The passes of Reduces `from`, from + 1, ... of a row, each followed by the row values it
  // makes computable.
  void other_passes(size_t from);

  // An earlier Reduce of the same op, type and operand (layer norm from mean and var reduces x
  // twice): its row value is this one's, so this pass is not emitted. Not for the last Reduce
  // when it fills the scratch row (row_stash), nor for ReduceFirst.
  int32_t earlier_twin(int r) const;

  // ---- one pass: the Reduce expression reduces_[r] over the row, by its row program ----
  void pass(int r);

  template <class T>
  x86::Vec identity(AsmVecOps<T, E>& o, ExprOp op, bool integer = false);
  // The high half of a vector register (the low half is the register's narrower view).
  x86::Vec high_half(x86::Vec v, int bytes, bool dbl);
  x86::Vec low_half(x86::Vec v, int bytes) { return bytes == 64 ? x86::Vec(v.ymm()) : v.xmm(); }

  template <class T>
  void pass_typed(int r, int32_t id, const Expr& e);

  // ---- ReduceFirst: the index of the first element whose flag is nonzero (else n) ----
  // Vector by vector from the row's start, stopping at the first vector with a hit; the tail
  // (masked on AVX-512, from zeroed buffers elsewhere) counts its first `rem` lanes only.
  x86::Gp hit_bits(DType t, x86::Vec flag);
  void pass_first(int32_t id, const Expr& e);

  // Numeric row values computable now (every Reduce they read is done), once per row.
  void hoist_row_values();

  // The stores (row_stores.cpp).
  // ---- the element stores, over the row once more ----
  void element_pass();

  void row_stores();

  E& cc_;
  const LoopKernel& k_;
  const KernelVariant& v_;
  JitIsa isa_;
  int L_;
  int nops_ = 0;
  x86::Gp outer_, n_, params_;
  // Pipelined rows (render()): the pass being emitted carries the previous row's element
  // bodies (fused_), at ecur_ and escur_, with that row's values prev_.
  bool fused_ = false;
  std::vector<x86::Gp> ecur_, escur_;
  std::vector<x86::Gp> ebase_;  // the previous row's operands
  std::vector<x86::Vec> prev_;
  x86::Gp swrite_, sread_;  // the scratch rows the passes fill and the element pass reads
  std::vector<x86::Gp> base_, cur_;
  // Per input the pass being emitted prefetches: its prefetch distance, loaded from
  // ahead_slot_ (prefetch_distances).
  std::vector<x86::Gp> ahead_;
  std::vector<x86::Mem> ahead_slot_;
  int prefetch_pass_ = -1;  // the Reduce pass that prefetches the next row
  std::vector<int> esize_;
  std::unique_ptr<EmitContextT<E>> ctx_;
  std::vector<uint8_t> row_, elem_store_;
  std::vector<int32_t> reduces_;
  std::vector<x86::Vec> preset_;
  x86::Mem stack_, lanes_buf_;
  std::vector<x86::Mem> tail_buf_;
  std::vector<int32_t> stash_;  // row_stash(k_)
  std::vector<x86::Gp> scur_;   // per stashed value: its place in the scratch row
  x86::Gp sbase_, sstride_;
  bool stash_on_ = false;  // the pass being emitted walks the scratch rows
};

// Here, not in row_renderer.cpp: the passes and the element pass call it with their bodies.
template <class E>
template <class Emit>
void RowRenderer<E>::tail_body(x86::Gp cnt, bool outputs, const Emit& emit) {
  if (kmask()) {
    x86::Gp bits = cc_.newInt64();
    x86::KReg m = cc_.newKw();
    cc_.mov(bits, -1);
    cc_.bzhi(bits, bits, cnt);
    cc_.kmovw(m, bits.r32());
    emit(cur_, &m);
    return;
  }
  std::vector<x86::Gp> cur = cur_;
  for (int j = 0; j < nops_; ++j) {
    const bool output = j < k_.num_outputs();
    if (!contiguous(j) || (output && !outputs) || !cur_[j].isValid()) continue;
    cur[j] = cc_.newIntPtr();
    cc_.lea(cur[j], tail_buf_[j]);
    if (output) continue;
    zero64(cur[j]);
    copy_bytes(cur[j], cur_[j], cnt, esize_[j]);
  }
  emit(cur, nullptr);
  if (!outputs) return;
  for (int j = 0; j < k_.num_outputs(); ++j)
    if (contiguous(j) && elem_store_[j] && cur_[j].isValid())
      copy_bytes(cur_[j], cur[j], cnt, esize_[j]);
}

}  // namespace kiln::jit::row_detail

#include "jit/cpu/render_reduce.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "jit/cpu/emit_function.h"
#include "jit/cpu/interleave.h"
#include "jit/cpu/reduce_ops.h"
#include "jit/loop/row_program.h"
#include "runtime/error.h"

namespace kiln::jit {

namespace {

using namespace asmjit;
namespace Inst = x86::Inst;

constexpr double kQuietNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

namespace {

// The expressions over `roots` and what they read, stopping at row values (computed before).
std::vector<uint8_t> closure(const LoopKernel& k, const std::vector<uint8_t>& row,
                             std::vector<int32_t> roots, const std::vector<uint8_t>& stop) {
  std::vector<uint8_t> in(k.exprs.size(), 0);
  while (!roots.empty()) {
    const int32_t i = roots.back();
    roots.pop_back();
    if (in[i]) continue;
    in[i] = 1;
    if (row[i] || stop[i]) continue;
    const Expr& e = k.exprs[i];
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) roots.push_back(o);
  }
  return in;
}

}  // namespace

std::vector<int32_t> row_stash(const LoopKernel& k) {
  const std::vector<uint8_t> row = k.row_values();
  int32_t last = -1;
  for (size_t i = 0; i < k.exprs.size(); ++i)
    if (expr_is_reduce(k.exprs[i].op)) last = static_cast<int32_t>(i);
  // A ReduceFirst pass may stop at its first hit: it cannot fill a scratch row.
  if (last >= 0 && k.exprs[last].op == ExprOp::ReduceFirst) return {};
  std::vector<int32_t> stores;
  for (int32_t s : k.stores)
    if (!row[s]) stores.push_back(s);
  if (last < 0 || stores.empty()) return {};
  const std::vector<uint8_t> none(k.exprs.size(), 0);
  const std::vector<uint8_t> in_pass = closure(k, row, {k.exprs[last].a}, none);
  std::vector<uint8_t> costly(k.exprs.size(), 0), shared(k.exprs.size(), 0);
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr& e = k.exprs[i];
    if (row[i]) continue;
    costly[i] = expr_is_transcendental(e.op);
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0 && !row[o]) costly[i] = costly[i] || costly[o];
    shared[i] = costly[i] && in_pass[i] && is_floating(e.type);
  }
  const std::vector<uint8_t> reached = closure(k, row, stores, shared);
  std::vector<int32_t> out;
  for (size_t i = 0; i < k.exprs.size(); ++i)
    if (shared[i] && reached[i]) out.push_back(static_cast<int32_t>(i));
  return out;
}

int row_pipelined_pass(const LoopKernel& k, JitIsa isa) {
  if (isa != JitIsa::Avx512 || !cpu_kernel_unrolls(k) || row_stash(k).empty()) return -1;
  const std::vector<uint8_t> row = k.row_values();
  bool any_elem = false;
  for (int32_t s : k.stores) any_elem = any_elem || !row[s];
  std::vector<int32_t> reduces;
  for (size_t i = 0; i < k.exprs.size(); ++i)
    if (expr_is_reduce(k.exprs[i].op)) reduces.push_back(static_cast<int32_t>(i));
  for (int32_t r : reduces)
    if (k.exprs[r].op == ExprOp::ReduceFirst) return -1;
  if (!any_elem || reduces.empty()) return -1;
  // The first pass: in a softmax the max of row o + 1, which reads that row from memory, so
  // the division fills the wait (docs/jit.md, "Reductions": along the last pass, next to the
  // vector math, it is as fast in L1 and slower on rows from memory).
  return 0;
}

bool row_pipelined(const LoopKernel& k, JitIsa isa) { return row_pipelined_pass(k, isa) >= 0; }

size_t row_scratch_words(const LoopKernel& k, JitIsa isa, int64_t n) {
  const size_t rows = row_stash(k).size();
  // Pipelined: two scratch rows in turn, and a dummy row per output (render(), row -1).
  return static_cast<size_t>(n + 64) *
         (row_pipelined(k, isa) ? 2 * rows + static_cast<size_t>(k.num_outputs()) : rows);
}

bool row_pieces_aligned(const std::vector<int64_t>& program, int64_t lanes) {
  int64_t start = 0;
  for (size_t i = 0; i < program.size() && program[i] != 0;) {
    if (program[i] == 2) {
      ++i;
      continue;
    }
    if (start % lanes != 0) return false;
    start += program[i + 1];
    i += 3;
  }
  return true;
}

namespace {

int vec_lanes(const LoopKernel& k, JitIsa isa) { return cpu_kernel_lanes(k, isa); }

template <class E>
class RowRenderer {
 public:
  RowRenderer(E& cc, const LoopKernel& k, const KernelVariant& v)
      : cc_(cc), k_(k), v_(v), isa_(v.isa), L_(vec_lanes(k, v.isa)) {}

  void render() {
    const FunctionArgs args = begin_function(cc_, isa_);
    x86::Gp ptrs = args.ptrs, inner = args.inner;
    (void)inner;  // rows are contiguous or broadcast: the inner strides follow from the layout
    // The arguments used past the entry in registers of their own: the recorder never spills
    // an argument (reg_alloc.h), and these are read once per row or pass.
    auto own = [&](x86::Gp a, const char* name) {
      x86::Gp r = cc_.newIntPtr(name);
      cc_.mov(r, a);
      return r;
    };
    outer_ = own(args.outer, "outer");
    n_ = own(args.n_inner, "n_inner");
    x86::Gp n_outer = own(args.n_outer, "n_outer");
    params_ = own(args.params, "params");

    nops_ = k_.num_operands();
    for (int j = 0; j < nops_; ++j) {
      base_.push_back(cc_.newIntPtr());
      cc_.mov(base_[j], x86::ptr(ptrs, j * 8));
      esize_.push_back(static_cast<int>(itemsize(k_.operand_dtype(j))));
    }
    ctx_ = std::make_unique<EmitContextT<E>>(EmitContextT<E>{cc_, isa_, cc_.cursor(), {}});
    row_ = k_.row_values();
    const size_t ne = k_.exprs.size();
    preset_.assign(ne, x86::Vec());
    for (size_t i = 0; i < ne; ++i)
      if (expr_is_reduce(k_.exprs[i].op)) reduces_.push_back(static_cast<int32_t>(i));
    elem_store_.assign(static_cast<size_t>(k_.num_outputs()), 0);
    for (int32_t j = 0; j < k_.num_outputs(); ++j) {
      elem_store_[j] = !row_[k_.stores[j]];
      KILN_CHECK(elem_store_[j] || k_.output_dtype(j) != DType::Int32,
                 "cpu row kernel: output {} stores a {} row value (not rendered)", j,
                 k_.output_dtype(j));
    }
    // Costly element values the last pass computes and the element pass needs (exp(x - m) of a
    // softmax): stored to a scratch row by that pass, loaded back by the element pass.
    stash_ = row_stash(k_);
    if (!stash_.empty()) {
      sbase_ = cc_.newIntPtr("scratch");
      sstride_ = cc_.newInt64("scratch_stride");
      cc_.mov(sbase_, x86::ptr(params_, (k_.num_params() + static_cast<int>(reduces_.size())) * 8));
      cc_.lea(sstride_, x86::ptr(n_, 64));  // (n + 64) * 8 bytes per stashed value
      cc_.shl(sstride_, 3);
      swrite_ = sread_ = sbase_;
    }
    stack_ = cc_.newStack(64 * 8, 16);
    lanes_buf_ = cc_.newStack(64, 64);
    for (int j = 0; j < nops_; ++j) tail_buf_.push_back(cc_.newStack(64, 64));

    // RowSize values: the row length is the same for every row of a call.
    for (size_t i = 0; i < ne; ++i)
      if (k_.exprs[i].op == ExprOp::RowSize) preset_[i] = row_size(k_.exprs[i]);
    std::vector<x86::Vec> fixed = preset_;  // valid for the whole call

    // The last Reduce pass prefetches the next row's inputs (prefetch_next_row).
    prefetch_pass_ = static_cast<int>(reduces_.size()) - 1;
    Label l_outer = cc_.newLabel(), l_done = cc_.newLabel();
    x86::Gp o = cc_.newInt64("o");
    cc_.xor_(o, o);
    const int fuse = row_pipelined_pass(k_, isa_);
    if (fuse < 0) {
      cc_.bind(l_outer);
      cc_.cmp(o, n_outer);
      cc_.jge(l_done);
      preset_ = fixed;
      other_passes(0);
      element_pass();
      row_stores();
      for (int j = 0; j < nops_; ++j) cc_.add(base_[j], x86::ptr(outer_, j * 8));
      cc_.inc(o);
      cc_.jmp(l_outer);
    } else {
      // Pipelined (render_reduce.h, row_pipelined_pass): the element pass of row o - 1 rides
      // along the first Reduce pass of row o; row o - 1's values are carried in registers of
      // their own, and the scratch rows alternate between two buffers. Every pass is emitted
      // once, the element pass only inside the first (compile time): a call's first row
      // carries the element bodies of a row -1 whose outputs are dummy rows of the scratch
      // (its inputs row 0's, its values zeros), and one more iteration after the last row runs
      // the first pass over that row again, carrying its element bodies. Laid out so that
      // every register is written before it is read in program order, and what the loop
      // carries is referenced before it (the recorder's register assignment: reg_alloc.h).
      KILN_CHECK(fuse == 0, "cpu row kernel: pipelined along pass {}", fuse);
      const int ns = static_cast<int>(stash_.size());
      swrite_ = cc_.newIntPtr("scratch_w");
      sread_ = cc_.newIntPtr("scratch_r");
      cc_.mov(swrite_, sbase_);
      cc_.mov(sread_, sstride_);
      cc_.imul(sread_, sread_, ns);
      cc_.add(sread_, sbase_);
      // The previous row's operands: at first the dummy rows (outputs) and row 0 (inputs).
      std::vector<x86::Gp> pbase(static_cast<size_t>(nops_));
      for (int j = 0; j < nops_; ++j) {
        pbase[j] = cc_.newIntPtr("prev_row");
        if (j >= k_.num_outputs()) {
          cc_.mov(pbase[j], base_[j]);
          continue;
        }
        cc_.mov(pbase[j], sstride_);  // from a cache line on (non-temporal stores)
        cc_.imul(pbase[j], pbase[j], 2 * ns + j);
        cc_.lea(pbase[j], x86::ptr(sbase_, pbase[j], 0, 63));
        cc_.and_(pbase[j], -64);
      }
      // Row values carried to the next row's first pass: every numeric one the passes and
      // hoists make (hoist_row_values).
      std::vector<int32_t> carried;
      for (size_t i = 0; i < ne; ++i)
        if (row_[i] && !fixed[i].isValid() && k_.exprs[i].type != DType::Bool &&
            k_.exprs[i].op != ExprOp::Const && k_.exprs[i].op != ExprOp::Param)
          carried.push_back(static_cast<int32_t>(i));
      std::vector<x86::Vec> mine = fixed;  // the previous row's values, zeros for row -1
      const int32_t r0 = reduces_[0];
      const DType t0 = k_.exprs[r0].type;
      cc_.cmp(o, n_outer);
      cc_.jge(l_done);
      Label l_last = cc_.newLabel();
      for (int32_t i : carried) {  // zeros for row -1
        mine[i] =
            AsmVecOps<float, E>::new_vec_of(cc_, L_ * static_cast<int>(itemsize(k_.exprs[i].type)));
        if (vex())
          cc_.emit(Inst::kIdVxorps, mine[i], mine[i], mine[i]);
        else
          cc_.emit(Inst::kIdXorps, mine[i], mine[i]);
      }
      cc_.bind(l_outer);
      preset_ = fixed;  // row o's first pass with row o - 1's element bodies
      prev_ = mine;
      fused_ = true;
      std::swap(ebase_, pbase);
      pass(0);
      std::swap(ebase_, pbase);
      fused_ = false;
      const x86::Vec v0 = AsmVecOps<float, E>::new_vec_of(cc_, L_ * static_cast<int>(itemsize(t0)));
      move(v0, preset_[r0]);
      std::swap(base_, pbase);  // row o - 1's row values
      preset_ = mine;
      row_stores();
      std::swap(base_, pbase);
      cc_.cmp(o, n_outer);
      cc_.jge(l_done);  // that was the last row's element pass
      preset_ = fixed;  // row o's other passes
      preset_[r0] = v0;
      hoist_row_values();
      other_passes(1);
      for (int32_t i : carried) {
        KILN_CHECK(preset_[i].isValid(), "cpu row kernel: row value {} not computed", i);
        move(mine[i], preset_[i]);
      }
      {  // the next row fills the scratch rows this one's reads
        x86::Gp t = cc_.newIntPtr();
        cc_.mov(t, swrite_);
        cc_.mov(swrite_, sread_);
        cc_.mov(sread_, t);
      }
      for (int j = 0; j < nops_; ++j) cc_.mov(pbase[j], base_[j]);
      cc_.inc(o);
      cc_.cmp(o, n_outer);
      cc_.jge(l_last);  // the row after the last: the last again (its first pass reads it)
      for (int j = 0; j < nops_; ++j) cc_.add(base_[j], x86::ptr(outer_, j * 8));
      cc_.bind(l_last);
      cc_.jmp(l_outer);
    }
    cc_.bind(l_done);
    if (v_.streaming) cc_.sfence();  // non-temporal stores are visible before the kernel returns
    end_function(cc_);
  }

 private:
  bool kmask() const { return isa_ == JitIsa::Avx512; }
  bool vex() const { return isa_ != JitIsa::Sse2; }
  bool contiguous(int j) const { return v_.layout[j] == InnerLayout::Contiguous; }

  void move(x86::Vec d, x86::Vec s) {
    if (d.id() != s.id()) cc_.emit(vex() ? Inst::kIdVmovaps : Inst::kIdMovaps, d, s);
  }
  // A mask in registers of its own (a loop-carried one), and assigning to it.
  AsmMask fresh_mask(const AsmMask& m) {
    AsmMask r;
    if (kmask()) {
      r.k = cc_.newKw();
      cc_.kmovw(r.k, m.k);
    } else {
      r.v = AsmVecOps<float, E>::new_vec_of(cc_, m.v.size());
      move(r.v, m.v);
    }
    return r;
  }
  void move_mask(const AsmMask& d, const AsmMask& s) {
    if (kmask()) {
      if (d.k.id() != s.k.id()) cc_.kmovw(d.k, s.k);
    } else {
      move(d.v, s.v);
    }
  }

  template <class Fn>
  auto on(DType t, int lanes, Fn fn) {
    if (t == DType::Float64) {
      AsmVecOps<double, E> o(*ctx_, lanes);
      return fn(o);
    }
    AsmVecOps<float, E> o(*ctx_, lanes);
    return fn(o);
  }

  // (T)(n + offset), in every lane.
  x86::Vec row_size(const Expr& e) {
    x86::Gp g = cc_.newInt64();
    cc_.mov(g, n_);
    if (e.ivalue != 0) cc_.add(g, e.ivalue);
    x86::Xmm x = cc_.newXmm();
    const bool f32 = e.type == DType::Float32;
    if (vex()) {
      cc_.vxorps(x, x, x);
      cc_.emit(f32 ? Inst::kIdVcvtsi2ss : Inst::kIdVcvtsi2sd, x, x, g);
    } else {
      cc_.xorps(x, x);
      cc_.emit(f32 ? Inst::kIdCvtsi2ss : Inst::kIdCvtsi2sd, x, g);
    }
    return broadcast_scalar(e.type, x);
  }

  // Lane 0 of x (a scalar of t) in every lane of a register of L lanes.
  x86::Vec broadcast_scalar(DType t, x86::Vec x) {
    x86::Mem tmp = lanes_buf_;
    return on(t, L_, [&](auto& vo) {
      using T = typename std::decay_t<decltype(vo)>::T;
      AsmVecOps<T, E> so(*ctx_, 1);
      so.store(tmp, x.xmm());
      return vo.load_broadcast(tmp);
    });
  }

  std::vector<x86::Vec> body(const std::vector<x86::Gp>& cur, const x86::KReg* tail,
                             const std::vector<uint8_t>& want, const std::vector<uint8_t>& store) {
    return emit_body(*ctx_, L_, k_, v_.layout, cur, params_, tail, want, preset_, store);
  }

  void advance(int elements) {
    for (int j = 0; j < nops_; ++j)
      if (contiguous(j)) {
        if (cur_[j].isValid()) cc_.add(cur_[j], elements * esize_[j]);
        if (fused_ && ecur_[j].isValid()) cc_.add(ecur_[j], elements * esize_[j]);
      }
    for (size_t i = 0; i < stash_.size(); ++i) {
      const int es = elements * static_cast<int>(itemsize(k_.exprs[stash_[i]].type));
      if (stash_on_ && i < scur_.size()) cc_.add(scur_[i], es);
      if (fused_ && i < escur_.size()) cc_.add(escur_[i], es);
    }
  }
  // Software prefetch of the lines of the row after the one at cur_ that the next `elements`
  // elements of each contiguous input cover (rows of 4 KiB are pages: the hardware prefetchers
  // start over on each; a prefetch never faults, past the last row included).
  void prefetch_next_row(int elements) {
    for (int j = k_.num_outputs(); j < nops_; ++j) {
      if (!contiguous(j) || !ostride_[j].isValid()) continue;
      const int bytes = elements * esize_[j];
      for (int b = 0; b < bytes; b += 64) cc_.prefetcht0(x86::ptr(cur_[j], ostride_[j], 0, b));
    }
  }
  // The same for a count in a register.
  void advance_by(x86::Gp c) {
    auto add = [&](x86::Gp p, int es) {
      x86::Gp d = cc_.newInt64();
      cc_.imul(d, c, es);
      cc_.add(p, d);
    };
    for (int j = 0; j < nops_; ++j)
      if (contiguous(j)) {
        if (cur_[j].isValid()) add(cur_[j], esize_[j]);
        if (fused_ && ecur_[j].isValid()) add(ecur_[j], esize_[j]);
      }
    for (size_t i = 0; i < stash_.size(); ++i) {
      const int es = static_cast<int>(itemsize(k_.exprs[stash_[i]].type));
      if (stash_on_ && i < scur_.size()) add(scur_[i], es);
      if (fused_ && i < escur_.size()) add(escur_[i], es);
    }
  }
  // In a fused pass (render(), "pipelined"): the previous row's element values at ecur_ and
  // `first` elements on, `tail`-masked, stored as the element pass stores them (`full`: a
  // whole vector, non-temporal where the variant streams).
  void fused_element_body(const x86::KReg* tail, int first, bool full) {
    std::vector<x86::Vec> ep = prev_;
    for (size_t i = 0; i < escur_.size(); ++i)
      ep[stash_[i]] = on(k_.exprs[stash_[i]].type, L_, [&](auto& vo) {
        return vo.load(x86::ptr(escur_[i], stash_disp(i, first)), tail);
      });
    emit_body(*ctx_, L_, k_, v_.layout, ecur_, params_, tail, std::vector<uint8_t>(ep.size(), 0),
              ep, elem_store_, full && v_.streaming, first);
  }
  // New stash cursors at the start of the scratch rows at `base`.
  std::vector<x86::Gp> stash_cursors(x86::Gp base) {
    std::vector<x86::Gp> cur;
    for (size_t i = 0; i < stash_.size(); ++i) {
      cur.push_back(cc_.newIntPtr("scratch_cur"));
      if (i == 0) {
        cc_.mov(cur[i], base);
        continue;
      }
      cc_.mov(cur[i], sstride_);
      cc_.imul(cur[i], cur[i], static_cast<int>(i));
      cc_.add(cur[i], base);
    }
    return cur;
  }
  // The operands a body reads (its Loads) or writes (the outputs `store` marks) when it
  // evaluates `want` taking the expressions `known` marks as given (as emit_body walks them).
  std::vector<uint8_t> operands_of(const std::vector<uint8_t>& want,
                                   const std::vector<uint8_t>& known,
                                   const std::vector<uint8_t>& store) const {
    const size_t ne = k_.exprs.size();
    std::vector<uint8_t> need(want), used(static_cast<size_t>(nops_), 0);
    for (int32_t j = 0; j < k_.num_outputs(); ++j)
      if (store[j]) need[k_.stores[j]] = used[j] = 1;
    for (size_t i = ne; i-- > 0;) {
      if (!need[i] || known[i]) continue;
      const Expr& e = k_.exprs[i];
      if (e.op == ExprOp::Load) used[k_.num_outputs() + e.index] = 1;
      for (int32_t o : {e.a, e.b, e.c})
        if (o >= 0) need[o] = 1;
    }
    return used;
  }
  std::vector<uint8_t> known(const std::vector<x86::Vec>& preset) const {
    std::vector<uint8_t> out(preset.size(), 0);
    for (size_t i = 0; i < preset.size(); ++i) out[i] = preset[i].isValid();
    return out;
  }
  // New cursors at `base` (base_ by default) for the operands `used` marks (the others none:
  // never referenced): each pass walks registers of its own, live over that pass only (the
  // recorder's linear scan, reg_alloc.h, sees one interval per register).
  std::vector<x86::Gp> cursors(const std::vector<uint8_t>& used,
                               const std::vector<x86::Gp>* base = nullptr) {
    std::vector<x86::Gp> cur(static_cast<size_t>(nops_));
    for (int j = 0; j < nops_; ++j) {
      if (!used[j]) continue;
      cur[j] = cc_.newIntPtr("cur");
      cc_.mov(cur[j], (base != nullptr ? *base : base_)[j]);
    }
    return cur;
  }
  // The last pass stores the stashed values of one body (`tail`: AVX-512 lanes; elsewhere whole
  // vectors, the scratch row has room past its end).
  // `first`: the body's elements start that many elements on (an unrolled body's copy).
  int stash_disp(size_t i, int first) const {
    return first * static_cast<int>(itemsize(k_.exprs[stash_[i]].type));
  }
  void store_stash(const std::vector<x86::Vec>& out, const x86::KReg* tail, int first = 0) {
    for (size_t i = 0; i < scur_.size(); ++i)
      on(k_.exprs[stash_[i]].type, L_, [&](auto& vo) {
        vo.store(x86::ptr(scur_[i], stash_disp(i, first)), out[stash_[i]], tail);
        return 0;
      });
  }
  void load_stash(const x86::KReg* tail, int first = 0) {
    for (size_t i = 0; i < scur_.size(); ++i)
      preset_[stash_[i]] = on(k_.exprs[stash_[i]].type, L_, [&](auto& vo) {
        return vo.load(x86::ptr(scur_[i], stash_disp(i, first)), tail);
      });
  }
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
  void tail_body(x86::Gp cnt, bool outputs, const Emit& emit) {
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
  void zero64(x86::Gp p) {
    x86::Xmm z = cc_.newXmm();
    if (vex())
      cc_.vxorps(z, z, z);
    else
      cc_.xorps(z, z);
    for (int b = 0; b < 64; b += 16)
      cc_.emit(vex() ? Inst::kIdVmovups : Inst::kIdMovups, x86::xmmword_ptr(p, b), z);
  }
  void copy_bytes(x86::Gp dst, x86::Gp src, x86::Gp cnt, int esize) {
    x86::Gp nb = cc_.newInt64(), i = cc_.newInt64(), t = cc_.newGpd();
    Label l = cc_.newLabel(), done = cc_.newLabel();
    cc_.imul(nb, cnt, esize);
    cc_.xor_(i, i);
    cc_.bind(l);
    cc_.cmp(i, nb);
    cc_.jge(done);
    cc_.movzx(t, x86::byte_ptr(src, i));
    cc_.mov(x86::byte_ptr(dst, i), t.r8());
    cc_.inc(i);
    cc_.jmp(l);
    cc_.bind(done);
  }

  // The passes of Reduces `from`, from + 1, ... of a row, each followed by the row values it
  // makes computable.
  void other_passes(size_t from) {
    for (size_t r = from; r < reduces_.size(); ++r) {
      if (const int32_t same = earlier_twin(static_cast<int>(r)); same >= 0)
        preset_[reduces_[r]] = preset_[same];  // computed by that pass (its bits)
      else
        pass(static_cast<int>(r));
      hoist_row_values();
    }
  }

  // An earlier Reduce of the same op, type and operand (layer norm from mean and var reduces x
  // twice): its row value is this one's, so this pass is not emitted. Not for the last Reduce
  // when it fills the scratch row (row_stash), nor for ReduceFirst.
  int32_t earlier_twin(int r) const {
    const Expr& e = k_.exprs[reduces_[r]];
    if (e.op == ExprOp::ReduceFirst) return -1;
    if (r + 1 == static_cast<int>(reduces_.size()) && !stash_.empty()) return -1;
    for (int q = 0; q < r; ++q) {
      const Expr& f = k_.exprs[reduces_[q]];
      if (f.op == e.op && f.type == e.type && f.a == e.a) return reduces_[q];
    }
    return -1;
  }

  // ---- one pass: the Reduce expression reduces_[r] over the row, by its row program ----
  void pass(int r) {
    const int32_t id = reduces_[r];
    const Expr& e = k_.exprs[id];
    if (e.op == ExprOp::ReduceFirst) return pass_first(id, e);
    on(e.type, 1, [&](auto& so) {
      using T = typename std::decay_t<decltype(so)>::T;
      pass_typed<T>(r, id, e);
      return 0;
    });
  }

  template <class T>
  x86::Vec identity(AsmVecOps<T, E>& o, ExprOp op) {
    return reduce_identity(o, op);
  }
  template <class T>
  x86::Vec combine(AsmVecOps<T, E>& o, ExprOp op, x86::Vec a, x86::Vec b) {
    return reduce_combine(o, op, a, b);
  }
  // The high half of a vector register (the low half is the register's narrower view).
  x86::Vec high_half(x86::Vec v, int bytes, bool dbl) {
    x86::Vec d = AsmVecOps<float, E>::new_vec_of(cc_, bytes / 2);
    if (bytes == 64)
      cc_.emit(dbl ? Inst::kIdVextractf64x4 : Inst::kIdVextractf32x8, d, v, imm(1));
    else
      cc_.emit(Inst::kIdVextractf128, d, v, imm(1));
    return d;
  }
  x86::Vec low_half(x86::Vec v, int bytes) { return bytes == 64 ? x86::Vec(v.ymm()) : v.xmm(); }

  template <class T>
  void pass_typed(int r, int32_t id, const Expr& e) {
    const ExprOp op = e.op;
    const DType t = e.type;
    const int es = static_cast<int>(sizeof(T));
    const int A = reduce_lanes(op, t);
    const int P = std::min(A, L_);  // lanes of one accumulator register
    const int G = A / P;            // accumulator registers
    const bool split = L_ > A;      // a vector feeds the accumulator in two halves
    AsmVecOps<T, E> ao(*ctx_, P), so(*ctx_, 1);
    std::vector<uint8_t> want(k_.exprs.size(), 0), no_store(k_.num_outputs(), 0);
    want[e.a] = 1;

    const bool stash = r + 1 == static_cast<int>(reduces_.size()) && !stash_.empty();
    std::vector<uint8_t> want_stash = want;
    for (int32_t i : stash_) want_stash[i] = want_stash[i] || stash;
    cur_ = cursors(operands_of(want_stash, known(preset_), no_store));
    // The last pass prefetches the next row of the contiguous inputs it reads, at most four
    // (each holds a register for its row stride over the pass).
    ostride_.assign(static_cast<size_t>(nops_), x86::Gp());
    for (int j = k_.num_outputs(), taken = 0; r == prefetch_pass_ && j < nops_ && taken < 4; ++j)
      if (contiguous(j) && cur_[j].isValid()) {
        ++taken;
        ostride_[j] = cc_.newInt64("row_stride");
        cc_.mov(ostride_[j], x86::ptr(outer_, j * 8));
      }
    if (fused_) {  // the element bodies write the previous row
      std::vector<uint8_t> k = known(prev_);
      for (int32_t i : stash_) k[i] = 1;
      ecur_ = cursors(operands_of(std::vector<uint8_t>(k.size(), 0), k, elem_store_), &ebase_);
      escur_ = stash_cursors(sread_);
    }
    stash_on_ = stash;
    scur_.clear();
    if (stash) scur_ = stash_cursors(swrite_);
    x86::Gp prog = cc_.newIntPtr("prog"), sp = cc_.newIntPtr("sp"), sb = cc_.newIntPtr("stack");
    cc_.mov(prog, x86::ptr(params_, (k_.num_params() + r) * 8));
    cc_.lea(sb, stack_);
    cc_.mov(sp, sb);
    Label l_next = cc_.newLabel(), l_leaf = cc_.newLabel(), l_end = cc_.newLabel();
    x86::Gp w = cc_.newInt64("w");
    cc_.bind(l_next);
    cc_.mov(w, x86::ptr(prog));
    cc_.cmp(w, 1);
    cc_.je(l_leaf);
    cc_.test(w, w);
    cc_.jz(l_end);
    {  // 2: combine the two latest results
      x86::Vec a = so.load(x86::ptr(sp, -2 * 8)), b = so.load(x86::ptr(sp, -8));
      so.store(x86::ptr(sp, -2 * 8), combine(so, op, a, b));
      cc_.sub(sp, 8);
      cc_.add(prog, 8);
      cc_.jmp(l_next);
    }
    cc_.bind(l_leaf);
    {
      x86::Gp len = cc_.newInt64("len"), cnt = cc_.newInt64("vec");
      cc_.mov(len, x86::ptr(prog, 8));
      cc_.mov(cnt, x86::ptr(prog, 16));
      cc_.add(prog, 24);
      cc_.sub(len, cnt);  // the elements after the lanes
      std::vector<x86::Vec> acc(static_cast<size_t>(G));
      for (auto& a : acc) {
        a = ao.new_vec();
        move(a, identity(ao, op));
      }
      // Lane by lane as eager's lanes. Max / min as eager's range_extreme: a lane keeps
      // maxps(acc, v) (minps), one instruction on the loop-carried chain, and a NaN is noted
      // apart in `nan_seen` (per lane of the vectors read), which makes the lanes NaN before
      // they fold.
      const bool extreme = op == ExprOp::ReduceMax || op == ExprOp::ReduceMin;
      AsmVecOps<T, E> vo(*ctx_, L_);
      AsmMask nan_seen;
      if (extreme) {
        const x86::Vec id = identity(vo, op);
        nan_seen = fresh_mask(vo.unord(id, id));  // all false
      }
      auto feed = [&](x86::Vec& a, x86::Vec v) {
        if (!extreme) return move(a, combine(ao, op, a, v));
        move(a, op == ExprOp::ReduceMax ? ao.gt_select(a, v) : ao.lt_select(a, v));
      };
      // `valid`: only these lanes were read (a masked group); the others hold what the
      // prologue made of zeros, which may be NaN (0 / 0, log(0) * 0) and must not count.
      auto note_nan = [&](x86::Vec v, const AsmMask* valid = nullptr) {
        if (!extreme) return;
        AsmMask nan = vo.unord(v, v);
        if (valid != nullptr) nan = vo.mask_and(nan, *valid);
        move_mask(nan_seen, vo.mask_or(nan_seen, nan));
      };
      Label l_vec = cc_.newLabel(), l_vdone = cc_.newLabel();
      const int step = split ? L_ : A;
      const int per_step = split ? 1 : G;  // bodies of L_ lanes per step
      // The vector math's long chains: `unroll` steps per iteration while they last, their
      // bodies interleaved (render.h, KernelVariant::unroll); the lanes are fed in row order
      // after them, so every lane sees what it saw one step at a time.
      // At most 8 bodies per iteration (SSE2 Float64 sums take 4 per step): compile time.
      if (const int U = std::max(1, std::min(v_.unroll, 8 / per_step)); U > 1) {
        Label l_multi = cc_.newLabel();
        cc_.bind(l_multi);
        cc_.cmp(cnt, U * step);
        cc_.jl(l_vec);
        Copies copies;
        std::vector<x86::Vec> vals;
        for (int j = 0; j < U * per_step; ++j) {
          const auto before = body_mark(cc_);
          const std::vector<x86::Vec> out =
              emit_body(*ctx_, L_, k_, v_.layout, cur_, params_, nullptr, want_stash, preset_,
                        no_store, false, j * L_);
          if (stash) store_stash(out, nullptr, j * L_);
          vals.push_back(out[e.a]);
          copies.push_back(since(before));
          if (fused_) {
            const auto at = body_mark(cc_);
            fused_element_body(nullptr, j * L_, true);
            copies.push_back(since(at));
          }
        }
        interleave(cc_, copies);  // left as emitted (still correct) if not straight-line
        if (r == prefetch_pass_) prefetch_next_row(U * step);
        for (int j = 0; j < U * per_step; ++j) {
          note_nan(vals[j]);
          if (split) {
            feed(acc[0], low_half(vals[j], L_ * es));
            feed(acc[0], high_half(vals[j], L_ * es, es == 8));
          } else {
            feed(acc[j % G], vals[j]);
          }
        }
        advance(U * step);
        cc_.sub(cnt, U * step);
        cc_.jmp(l_multi);
      }
      cc_.bind(l_vec);
      cc_.cmp(cnt, step);
      cc_.jl(l_vdone);
      for (int g = 0; g < (split ? 1 : G); ++g) {
        const std::vector<x86::Vec> out = body(cur_, nullptr, want_stash, no_store);
        if (stash) store_stash(out, nullptr);
        if (fused_) fused_element_body(nullptr, 0, true);
        x86::Vec v = out[e.a];
        note_nan(v);
        if (split) {
          feed(acc[0], low_half(v, L_ * es));
          feed(acc[0], high_half(v, L_ * es, es == 8));
        } else {
          feed(acc[g], v);
        }
        advance(L_);
      }
      cc_.sub(cnt, step);
      cc_.jmp(l_vec);
      cc_.bind(l_vdone);
      if (split) {  // one more group of A lanes (the vector part is a multiple of A)
        Label l_no = cc_.newLabel();
        cc_.test(cnt, cnt);
        cc_.jz(l_no);
        x86::Gp bits = cc_.newInt64();
        x86::KReg m = cc_.newKw();
        cc_.mov(bits, (int64_t{1} << A) - 1);
        cc_.kmovw(m, bits.r32());
        const std::vector<x86::Vec> out = body(cur_, &m, want_stash, no_store);
        if (stash) store_stash(out, &m);
        if (fused_) fused_element_body(&m, 0, false);
        x86::Vec v = out[e.a];
        AsmMask read;
        read.k = m;
        note_nan(v, &read);
        feed(acc[0], low_half(v, L_ * es));
        advance(A);
        cc_.bind(l_no);
      }
      if (extreme) {  // a NaN read in any lane makes the result NaN, as eager's
        AsmMask any = nan_seen;
        if (split) {  // the vectors' upper lanes fed the same accumulator lanes
          any.k = cc_.newKw();
          cc_.kshiftrw(any.k, nan_seen.k, imm(P));
          cc_.korw(any.k, any.k, nan_seen.k);
        }
        for (auto& a : acc) move(a, ao.select(any, ao.splat(kQuietNaN), a));
      }
      // The lanes, in eager's order: a tree for sums and products, in order for max / min.
      x86::Mem lanes = lanes_buf_;
      for (int g = 0; g < G; ++g) ao.store(lanes.cloneAdjusted(g * P * es), acc[g]);
      auto lane = [&](int i) {
        x86::Mem m = lanes.cloneAdjusted(i * es);
        return so.load(m);
      };
      x86::Vec s = so.new_vec();
      if (op == ExprOp::ReduceSum || op == ExprOp::ReduceProd) {
        auto c = [&](x86::Vec a, x86::Vec b) { return combine(so, op, a, b); };
        move(s, c(c(c(lane(0), lane(1)), c(lane(2), lane(3))),
                  c(c(lane(4), lane(5)), c(lane(6), lane(7)))));
      } else {
        move(s, identity(so, op));
        for (int i = 0; i < A; ++i) move(s, combine(so, op, s, lane(i)));
      }
      // The rest, in order, L at a time.
      Label l_rest = cc_.newLabel(), l_rdone = cc_.newLabel();
      x86::Gp c = cc_.newInt64("c");
      cc_.bind(l_rest);
      cc_.test(len, len);
      cc_.jz(l_rdone);
      cc_.mov(c, L_);
      cc_.cmp(len, c);
      cc_.cmovl(c, len);
      tail_body(c, false, [&](const std::vector<x86::Gp>& cur, const x86::KReg* m) {
        const std::vector<x86::Vec> out =
            emit_body(*ctx_, L_, k_, v_.layout, cur, params_, m, want_stash, preset_, no_store);
        if (stash) store_stash(out, m);
        if (fused_) fused_element_body(m, 0, false);  // AVX-512 only: m is the tail's mask
        x86::Vec v = out[e.a];
        on(t, L_, [&](auto& vo) {
          vo.store(lanes, v);
          return 0;
        });
      });
      {
        x86::Gp i = cc_.newInt64("i");
        Label l_f = cc_.newLabel(), l_fd = cc_.newLabel();
        x86::Gp lb = cc_.newIntPtr();
        cc_.lea(lb, lanes);
        cc_.xor_(i, i);
        cc_.bind(l_f);
        cc_.cmp(i, c);
        cc_.jge(l_fd);
        move(s, combine(so, op, s, so.load(x86::ptr(lb, i, es == 8 ? 3 : 2))));
        cc_.inc(i);
        cc_.jmp(l_f);
        cc_.bind(l_fd);
      }
      advance_by(c);
      cc_.sub(len, c);
      cc_.jmp(l_rest);
      cc_.bind(l_rdone);
      so.store(x86::ptr(sp), s);
      cc_.add(sp, 8);
      cc_.jmp(l_next);
    }
    cc_.bind(l_end);
    preset_[id] = broadcast_scalar(t, so.load(x86::ptr(sb)));
  }

  // ---- ReduceFirst: the index of the first element whose flag is nonzero (else n) ----
  // Vector by vector from the row's start, stopping at the first vector with a hit; the tail
  // (masked on AVX-512, from zeroed buffers elsewhere) counts its first `rem` lanes only.
  x86::Gp hit_bits(DType t, x86::Vec flag) {
    return on(t, L_, [&](auto& o) {
      const AsmMask m = o.ne(flag, o.splat(0.0));
      x86::Gp bits = cc_.newGpd("hits");
      if (kmask())
        cc_.kmovw(bits, m.k);
      else
        cc_.emit(vex() ? (t == DType::Float64 ? Inst::kIdVmovmskpd : Inst::kIdVmovmskps)
                       : (t == DType::Float64 ? Inst::kIdMovmskpd : Inst::kIdMovmskps),
                 bits, m.v);
      return bits;
    });
  }
  void pass_first(int32_t id, const Expr& e) {
    const DType ft = k_.exprs[e.a].type;
    std::vector<uint8_t> want(k_.exprs.size(), 0), no_store(k_.num_outputs(), 0);
    want[e.a] = 1;
    stash_on_ = false;
    cur_ = cursors(operands_of(want, known(preset_), no_store));
    x86::Gp i = cc_.newInt64("i"), rem = cc_.newInt64("rem"), result = cc_.newInt64("first");
    cc_.xor_(i, i);
    cc_.mov(rem, n_);
    cc_.mov(result, n_);
    Label l_vec = cc_.newLabel(), l_tail = cc_.newLabel(), l_found = cc_.newLabel(),
          l_done = cc_.newLabel();
    x86::Gp bits = cc_.newGpd("bits");
    cc_.bind(l_vec);
    cc_.cmp(rem, L_);
    cc_.jl(l_tail);
    {
      const std::vector<x86::Vec> out = body(cur_, nullptr, want, no_store);
      cc_.mov(bits, hit_bits(ft, out[e.a]));
    }
    // The L lanes only: a Float32 flag in a kernel of 8-byte lanes fills half a register (SSE2:
    // movmskps reports the upper half's lanes too).
    cc_.test(bits, (1 << L_) - 1);
    cc_.jnz(l_found);
    advance(L_);
    cc_.add(i, L_);
    cc_.sub(rem, L_);
    cc_.jmp(l_vec);
    cc_.bind(l_tail);
    cc_.test(rem, rem);
    cc_.jz(l_done);
    tail_body(rem, false, [&](const std::vector<x86::Gp>& cur, const x86::KReg* m) {
      const std::vector<x86::Vec> out =
          emit_body(*ctx_, L_, k_, v_.layout, cur, params_, m, want, preset_, no_store);
      cc_.mov(bits, hit_bits(ft, out[e.a]));
    });
    {  // only the first rem lanes: bits &= (1 << rem) - 1 (rem < L <= 16)
      x86::Gp lanes = cc_.newGpd("lanes"), sh = cc_.newGpd("shift");
      cc_.mov(sh, rem.r32());
      cc_.mov(lanes, 1);
      cc_.shl(lanes, sh.r8());
      cc_.dec(lanes);
      cc_.and_(bits, lanes);
    }
    cc_.test(bits, bits);
    cc_.jz(l_done);
    cc_.bind(l_found);
    {
      cc_.and_(bits, (1 << L_) - 1);
      x86::Gp lane = cc_.newGpd("lane");
      cc_.bsf(lane, bits);
      cc_.add(i, lane.r64());
      cc_.mov(result, i);
    }
    cc_.bind(l_done);
    // The index in every Int64 lane (the double emitter's registers).
    x86::Mem slot = lanes_buf_;
    slot.setSize(8);
    cc_.mov(slot, result);
    AsmVecOps<double, E> d(*ctx_, L_);
    preset_[id] = d.load_broadcast(lanes_buf_);
  }

  // Numeric row values computable now (every Reduce they read is done), once per row.
  void hoist_row_values() {
    const size_t ne = k_.exprs.size();
    std::vector<uint8_t> ready(ne, 0), want(ne, 0);
    for (size_t i = 0; i < ne; ++i) {
      const Expr& e = k_.exprs[i];
      if (!row_[i]) continue;
      if (expr_is_reduce(e.op)) {
        ready[i] = preset_[i].isValid();
        continue;
      }
      bool ok = true;
      for (int32_t o : {e.a, e.b, e.c})
        if (o >= 0) ok = ok && ready[o];
      ready[i] = ok;
      want[i] = ok && !preset_[i].isValid() && e.type != DType::Bool && e.op != ExprOp::Const &&
                e.op != ExprOp::Param;
    }
    bool any = false;
    for (uint8_t x : want) any = any || x;
    if (!any) return;
    std::vector<uint8_t> no_store(static_cast<size_t>(k_.num_outputs()), 0);
    std::vector<x86::Vec> out = body(base_, nullptr, want, no_store);
    for (size_t i = 0; i < ne; ++i)
      if (want[i]) preset_[i] = out[i];
  }

  // ---- the element stores, over the row once more ----
  void element_pass() {
    bool any_elem = false;
    for (uint8_t e : elem_store_) any_elem = any_elem || e;
    if (!any_elem) return;
    std::vector<uint8_t> none(k_.exprs.size(), 0);
    {
      std::vector<uint8_t> k = known(preset_);
      for (int32_t i : stash_) k[i] = 1;
      cur_ = cursors(operands_of(none, k, elem_store_));
    }
    stash_on_ = true;
    scur_ = stash_cursors(sread_);
    x86::Gp rem = cc_.newInt64("rem");
    cc_.mov(rem, n_);
    Label l_vec = cc_.newLabel(), l_tail = cc_.newLabel(), l_end = cc_.newLabel();
    if (const int U = std::max(1, v_.unroll); U > 1) {  // as in the passes
      Label l_multi = cc_.newLabel();
      cc_.bind(l_multi);
      cc_.cmp(rem, U * L_);
      cc_.jl(l_vec);
      Copies copies;
      for (int u = 0; u < U; ++u) {
        const auto before = body_mark(cc_);
        load_stash(nullptr, u * L_);
        emit_body(*ctx_, L_, k_, v_.layout, cur_, params_, nullptr, none, preset_, elem_store_,
                  v_.streaming, u * L_);
        copies.push_back(since(before));
      }
      interleave(cc_, copies);
      advance(U * L_);
      cc_.sub(rem, U * L_);
      cc_.jmp(l_multi);
    }
    cc_.bind(l_vec);
    cc_.cmp(rem, L_);
    cc_.jl(l_tail);
    load_stash(nullptr);
    emit_body(*ctx_, L_, k_, v_.layout, cur_, params_, nullptr, none, preset_, elem_store_,
              v_.streaming);
    advance(L_);
    cc_.sub(rem, L_);
    cc_.jmp(l_vec);
    cc_.bind(l_tail);
    cc_.test(rem, rem);
    cc_.jz(l_end);
    tail_body(rem, true, [&](const std::vector<x86::Gp>& cur, const x86::KReg* m) {
      load_stash(m);
      emit_body(*ctx_, L_, k_, v_.layout, cur, params_, m, none, preset_, elem_store_);
    });
    cc_.bind(l_end);
    for (int32_t i : stash_) preset_[i] = x86::Vec();
  }

  void row_stores() {
    const size_t ne = k_.exprs.size();
    std::vector<uint8_t> want(ne, 0), no_store(static_cast<size_t>(k_.num_outputs()), 0);
    bool any = false;
    for (int32_t j = 0; j < k_.num_outputs(); ++j)
      if (!elem_store_[j] && !preset_[k_.stores[j]].isValid()) want[k_.stores[j]] = any = true;
    std::vector<x86::Vec> out = preset_;
    if (any) {
      std::vector<x86::Vec> got = body(base_, nullptr, want, no_store);
      for (size_t i = 0; i < ne; ++i)
        if (want[i]) out[i] = got[i];
    }
    for (int32_t j = 0; j < k_.num_outputs(); ++j) {
      if (elem_store_[j] || !is_floating(k_.output_dtype(j))) continue;
      on(k_.output_dtype(j), 1, [&](auto& so) {
        so.store(x86::ptr(base_[j]), out[k_.stores[j]].xmm());
        return 0;
      });
    }
    // Int64 and Bool row values (argmax, all / any): a vector of them stored into a stack
    // buffer by the body emitter (all lanes are equal), then one element copied out.
    for (int32_t j = 0; j < k_.num_outputs(); ++j) {
      if (elem_store_[j] || is_floating(k_.output_dtype(j))) continue;
      std::vector<uint8_t> only(static_cast<size_t>(k_.num_outputs()), 0);
      only[j] = 1;
      std::vector<x86::Gp> cur = base_;
      cur[j] = cc_.newIntPtr();
      cc_.lea(cur[j], tail_buf_[j]);
      std::vector<x86::Vec> p = preset_;
      for (size_t i = 0; i < ne; ++i)
        if (!p[i].isValid() && out[i].isValid()) p[i] = out[i];
      emit_body(*ctx_, L_, k_, v_.layout, cur, params_, nullptr, std::vector<uint8_t>(ne, 0), p,
                only);
      x86::Gp t = cc_.newInt64();
      if (k_.output_dtype(j) == DType::Bool) {
        cc_.movzx(t.r32(), x86::byte_ptr(cur[j]));
        cc_.mov(x86::byte_ptr(base_[j]), t.r8());
      } else {
        cc_.mov(t, x86::qword_ptr(cur[j]));
        cc_.mov(x86::qword_ptr(base_[j]), t);
      }
    }
  }

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
  // The row strides of the inputs the pass being emitted prefetches (prefetch_next_row).
  std::vector<x86::Gp> ostride_;
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

}  // namespace

namespace {

template <class E>
void render_rows(E& cc, const LoopKernel& k, const KernelVariant& v) {
  for (InnerLayout l : v.layout)
    KILN_CHECK(l != InnerLayout::Strided, "cpu row kernel: a strided row (not rendered)");
  RowRenderer<E>(cc, k, v).render();
}

}  // namespace

void render_row_function(KernelCompiler& cc, const LoopKernel& k, const KernelVariant& v) {
  render_rows(cc, k, v);
}
void render_row_function(RecordingAssembler& as, const LoopKernel& k, const KernelVariant& v) {
  render_rows(as, k, v);
}

}  // namespace kiln::jit

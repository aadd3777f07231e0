// The row renderer's passes (row_renderer.h): one per Reduce expression over the row, by its row
// program, lane by lane in eager's order (ReduceFirst's stops at the first hit), each followed
// by the row values it makes computable.
#include <algorithm>
#include <limits>

#include "jit/cpu/interleave.h"
#include "jit/cpu/reduce_ops.h"
#include "jit/cpu/row_renderer.h"
#include "jit/loop/row_program.h"

namespace kiln::jit::row_detail {

constexpr double kQuietNaN = std::numeric_limits<double>::quiet_NaN();

template <class E>
void RowRenderer<E>::other_passes(size_t from) {
  for (size_t r = from; r < reduces_.size(); ++r) {
    if (const int32_t same = earlier_twin(static_cast<int>(r)); same >= 0)
      preset_[reduces_[r]] = preset_[same];  // computed by that pass (its bits)
    else
      pass(static_cast<int>(r));
    hoist_row_values();
  }
}

template <class E>
int32_t RowRenderer<E>::earlier_twin(int r) const {
  const Expr& e = k_.exprs[reduces_[r]];
  if (e.op == ExprOp::ReduceFirst) return -1;
  if (r + 1 == static_cast<int>(reduces_.size()) && !stash_.empty()) return -1;
  for (int q = 0; q < r; ++q) {
    const Expr& f = k_.exprs[reduces_[q]];
    if (f.op == e.op && f.type == e.type && f.a == e.a) return reduces_[q];
  }
  return -1;
}

template <class E>
void RowRenderer<E>::pass(int r) {
  const int32_t id = reduces_[r];
  const Expr& e = k_.exprs[id];
  if (e.op == ExprOp::ReduceFirst) return pass_first(id, e);
  KILN_CHECK(!expr_is_arg_reduce(e.op),
             "cpu row kernel: %{} ({}) is rendered in column kernels only", id, expr_op_name(e.op));
  on(e.type, 1, [&](auto& so) {
    using T = typename std::decay_t<decltype(so)>::T;
    pass_typed<T>(r, id, e);
    return 0;
  });
}

template <class E>
template <class T>
x86::Vec RowRenderer<E>::identity(AsmVecOps<T, E>& o, ExprOp op, bool integer) {
  return reduce_identity(o, op, integer);
}

template <class E>
x86::Vec RowRenderer<E>::high_half(x86::Vec v, int bytes, bool dbl) {
  x86::Vec d = AsmVecOps<float, E>::new_vec_of(cc_, bytes / 2);
  if (bytes == 64)
    cc_.emit(dbl ? Inst::kIdVextractf64x4 : Inst::kIdVextractf32x8, d, v, imm(1));
  else if (kmask())  // EVEX's form: registers 16-31 too
    cc_.emit(dbl ? Inst::kIdVextractf64x2 : Inst::kIdVextractf32x4, d, v, imm(1));
  else
    cc_.emit(Inst::kIdVextractf128, d, v, imm(1));
  return d;
}

template <class E>
template <class T>
void RowRenderer<E>::pass_typed(int r, int32_t id, const Expr& e) {
  const ExprOp op = e.op;
  const DType t = e.type;
  // Combines two partial results: an Int64 sum adds integers (wrapping).
  auto combine = [integer = !is_floating(t)](auto& o, ExprOp c, x86::Vec a, x86::Vec b) {
    return reduce_combine(o, c, a, b, integer);
  };
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
  // The last pass prefetches a row ahead of the contiguous inputs it reads, at most four (each
  // holds a register for its distance over the pass; prefetch_next_row).
  ahead_.assign(static_cast<size_t>(nops_), x86::Gp());
  for (int j = k_.num_outputs(), taken = 0; r == prefetch_pass_ && j < nops_ && taken < 4; ++j)
    if (contiguous(j) && cur_[j].isValid()) {
      ++taken;
      ahead_[j] = cc_.newInt64("prefetch_ahead");
      cc_.mov(ahead_[j], ahead_slot_[j]);
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
  // Where a call (word 5) goes on; 0 outside a call.
  x86::Gp ret = cc_.newIntPtr("return");
  cc_.xor_(ret, ret);
  Label l_next = cc_.newLabel(), l_leaf = cc_.newLabel(), l_end = cc_.newLabel(),
        l_zero = cc_.newLabel();
  x86::Gp w = cc_.newInt64("w");
  cc_.bind(l_next);
  cc_.mov(w, x86::ptr(prog));
  cc_.cmp(w, 1);
  cc_.je(l_leaf);
  cc_.test(w, w);
  cc_.jz(l_zero);
  Label l_slot = cc_.newLabel();
  cc_.cmp(w, 2);
  cc_.jne(l_slot);
  {  // 2: combine the two latest results
    x86::Vec a = so.load(x86::ptr(sp, -2 * 8)), b = so.load(x86::ptr(sp, -8));
    so.store(x86::ptr(sp, -2 * 8), combine(so, op, a, b));
    cc_.sub(sp, 8);
    cc_.add(prog, 8);
    cc_.jmp(l_next);
  }
  cc_.bind(l_slot);
  {  // 3 addr: push the partial result at addr; 4 addr: pop the latest into addr (a long row
     // split across threads); 5 addr: call the program at addr (a whole chunk; row_program.h)
    Label l_pop = cc_.newLabel(), l_push = cc_.newLabel();
    x86::Gp slot = cc_.newIntPtr("slot");
    cc_.mov(slot, x86::ptr(prog, 8));
    cc_.add(prog, 16);
    cc_.cmp(w, 5);
    cc_.jne(l_push);
    cc_.mov(ret, prog);
    cc_.mov(prog, slot);
    cc_.jmp(l_next);
    cc_.bind(l_push);
    cc_.cmp(w, 3);
    cc_.jne(l_pop);
    so.store(x86::ptr(sp), so.load(x86::ptr(slot)));
    cc_.add(sp, 8);
    cc_.jmp(l_next);
    cc_.bind(l_pop);
    so.store(x86::ptr(slot), so.load(x86::ptr(sp, -8)));
    cc_.sub(sp, 8);
    cc_.jmp(l_next);
  }
  cc_.bind(l_zero);  // 0: the end of a call, or of the program
  cc_.test(ret, ret);
  cc_.jz(l_end);
  cc_.mov(prog, ret);
  cc_.xor_(ret, ret);
  cc_.jmp(l_next);
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
      move(a, identity(ao, op, !is_floating(t)));
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
      if (!extreme)  // in place: a move after each update was a third of a sum pass's code
        return reduce_combine_into(ao, op, a, v, !is_floating(t),
                                   [&](x86::Vec d, x86::Vec s) { move(d, s); });
      if (op == ExprOp::ReduceMax)
        ao.gt_select_to(a, v);
      else
        ao.lt_select_to(a, v);
    };
    // `valid`: only these lanes were read (a masked group); the others hold what the
    // prologue made of zeros, which may be NaN (0 / 0, log(0) * 0) and must not count.
    auto note_nan = [&](x86::Vec v, const AsmMask* valid = nullptr) {
      if (!extreme) return;
      AsmMask nan = vo.unord(v, v);
      if (valid != nullptr) nan = vo.mask_and(nan, *valid);
      vo.mask_or_to(nan_seen, nan);
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
      // Each accumulator's values of this iteration, in row order.
      std::vector<std::vector<x86::Vec>> per_acc(acc.size());
      for (int j = 0; j < U * per_step; ++j) {
        if (split) {
          per_acc[0].push_back(low_half(vals[j], L_ * es));
          per_acc[0].push_back(high_half(vals[j], L_ * es, es == 8));
        } else {
          per_acc[static_cast<size_t>(j % G)].push_back(vals[j]);
        }
      }
      if (extreme) {
        // Max / min keep "the later of two equal values" (a > v ? a : v), which is associative
        // over an ordered sequence: folding neighbours pairwise, in order, finds the same last
        // maximal element as the chain (NaN lanes aside: nan_seen makes them NaN). So the
        // loop-carried chain takes one instruction per iteration instead of one per value (the
        // softmax's max pass was bound by the chain: 2 maxps of 4 cycles per AVX-512 vector).
        for (size_t g = 0; g < acc.size(); ++g) {
          std::vector<x86::Vec> xs = std::move(per_acc[g]);
          while (xs.size() > 1) {
            std::vector<x86::Vec> folded;
            for (size_t i = 0; i + 1 < xs.size(); i += 2)
              folded.push_back(op == ExprOp::ReduceMax ? ao.gt_select(xs[i], xs[i + 1])
                                                       : ao.lt_select(xs[i], xs[i + 1]));
            if (xs.size() % 2 == 1) folded.push_back(xs.back());
            xs = std::move(folded);
          }
          if (!xs.empty()) feed(acc[g], xs[0]);
        }
        AsmMask any_nan = vo.unord(vals[0], vals[0]);
        for (int j = 1; j < U * per_step; ++j)
          any_nan = vo.mask_or(any_nan, vo.unord(vals[j], vals[j]));
        vo.mask_or_to(nan_seen, any_nan);
      } else {
        for (size_t g = 0; g < acc.size(); ++g)
          for (x86::Vec v : per_acc[g]) feed(acc[g], v);
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
    // A floating sum's 8 lanes in one register (Float32 on AVX2 and AVX-512, Float64 on
    // AVX-512) or two (Float64 on AVX2) fold their tree in registers: pairs of neighbours, then
    // pairs of pairs, then the halves, each addition with the earlier lanes on the left, as the
    // scalar tree below: the same bits without the lanes' stores and eight loads (8-13% off a
    // Float32 sum pass in L1: docs/jit.md). A floating max / min in one register folds the same
    // tree: eager folds its lanes in order, and "the later of two equal values, NaN first"
    // (reduce_combine) is associative over an ordered sequence (the NaN lanes are one constant).
    constexpr bool dbl = std::is_same_v<T, double>;
    const bool sum = op == ExprOp::ReduceSum;
    const bool reg_fold = is_floating(t) && vex() &&
                          (sum ? P * G == 8 && (dbl ? P == 8 || P == 4 : P == 8)
                               : extreme && G == 1 && P == (dbl ? 4 : 8));
    if (!reg_fold)
      for (int g = 0; g < G; ++g) ao.store(lanes.cloneAdjusted(g * P * es), acc[g]);
    auto lane = [&](int i) {
      x86::Mem m = lanes.cloneAdjusted(i * es);
      return so.load(m);
    };
    x86::Vec s = so.new_vec();
    if (reg_fold) {
      auto c = [&](auto& o, x86::Vec a, x86::Vec b) { return combine(o, op, a, b); };
      // a (op) (a's neighbours swapped): lane 2i holds l(2i) (op) l(2i + 1).
      auto pairs = [&](x86::Vec a) {
        x86::Vec p = ao.new_vec();
        if (dbl)
          cc_.emit(Inst::kIdVpermilpd, p, a, imm(P == 8 ? 0x55 : 0x5));
        else
          cc_.emit(Inst::kIdVpermilps, p, a, imm(0xB1));
        return c(ao, a, p);
      };
      const int bytes = P * es;
      if (dbl && P == 4) {  // ymm of 4: (l0 (op) l1) (op) (l2 (op) l3) from each, then both
        x86::Vec u;
        for (int g = 0; g < G; ++g) {
          const x86::Vec t1 = pairs(acc[g]);
          const x86::Vec ug = c(so, t1.xmm(), high_half(t1, bytes, dbl));
          u = g == 0 ? ug : c(so, u, ug);
        }
        move(s, u);
      } else {  // one register of 8: pairs, pairs of pairs (lanes 0 and 4), the halves
        const x86::Vec t1 = pairs(acc[0]);
        x86::Vec p2 = ao.new_vec();
        if (dbl)
          cc_.emit(Inst::kIdVpermpd, p2, t1, imm(0x4E));
        else
          cc_.emit(Inst::kIdVpermilps, p2, t1, imm(0x4E));
        const x86::Vec t2 = c(ao, t1, p2);
        move(s, c(so, t2.xmm(), high_half(t2, bytes, dbl).xmm()));
      }
    } else if (op == ExprOp::ReduceSum || op == ExprOp::ReduceProd) {
      auto c = [&](x86::Vec a, x86::Vec b) { return combine(so, op, a, b); };
      move(s, c(c(c(lane(0), lane(1)), c(lane(2), lane(3))),
                c(c(lane(4), lane(5)), c(lane(6), lane(7)))));
    } else {
      move(s, identity(so, op, !is_floating(t)));
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
      reduce_combine_into(so, op, s, so.load(x86::ptr(lb, i, es == 8 ? 3 : 2)), !is_floating(t),
                          [&](x86::Vec d, x86::Vec r) { move(d, r); });
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

template <class E>
x86::Gp RowRenderer<E>::hit_bits(DType t, x86::Vec flag) {
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

template <class E>
void RowRenderer<E>::pass_first(int32_t id, const Expr& e) {
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

template <class E>
void RowRenderer<E>::hoist_row_values() {
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

// What render() calls (row_renderer.cpp).
#define KILN_ROW_PASSES(E)                            \
  template void RowRenderer<E>::other_passes(size_t); \
  template void RowRenderer<E>::pass(int);            \
  template void RowRenderer<E>::hoist_row_values();
KILN_ROW_PASSES(KernelCompiler)
KILN_ROW_PASSES(RecordingAssembler)
#undef KILN_ROW_PASSES

}  // namespace kiln::jit::row_detail

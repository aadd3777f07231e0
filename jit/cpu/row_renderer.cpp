// The row renderer's driver (RowRenderer::render(), row_renderer.h) and the helpers its passes
// share: cursors over the operands and the scratch rows, the stashed values, the fused element
// bodies of a pipelined pass, tails.
#include "jit/cpu/row_renderer.h"

#include "jit/cpu/render_reduce.h"
#include "runtime/error.h"

namespace kiln::jit::row_detail {

template <class E>
void RowRenderer<E>::render() {
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
  ctx_ = std::make_unique<EmitContextT<E>>(cc_, isa_, cc_.cursor());
  row_ = k_.row_values();
  const size_t ne = k_.exprs.size();
  preset_.assign(ne, x86::Vec());
  for (size_t i = 0; i < ne; ++i)
    if (expr_is_reduce(k_.exprs[i].op)) reduces_.push_back(static_cast<int32_t>(i));
  elem_store_.assign(static_cast<size_t>(k_.num_outputs()), 0);
  for (int32_t j = 0; j < k_.num_outputs(); ++j) elem_store_[j] = !row_[k_.stores[j]];
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

  // The last Reduce pass prefetches a later row's inputs (prefetch_next_row).
  prefetch_pass_ = static_cast<int>(reduces_.size()) - 1;
  prefetch_distances();
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

template <class E>
AsmMask RowRenderer<E>::fresh_mask(const AsmMask& m) {
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

template <class E>
x86::Vec RowRenderer<E>::row_size(const Expr& e) {
  return broadcast_scalar(e.type, count_as_float(cc_, isa_, n_, e.ivalue, e.type));
}

template <class E>
x86::Vec RowRenderer<E>::broadcast_scalar(DType t, x86::Vec x) {
  x86::Mem tmp = lanes_buf_;
  return on(t, L_, [&](auto& vo) {
    using T = typename std::decay_t<decltype(vo)>::T;
    AsmVecOps<T, E> so(*ctx_, 1);
    so.store(tmp, x.xmm());
    return vo.load_broadcast(tmp);
  });
}

template <class E>
void RowRenderer<E>::advance(int elements) {
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

template <class E>
void RowRenderer<E>::prefetch_next_row(int elements) {
  for (int j = k_.num_outputs(); j < nops_; ++j) {
    if (!contiguous(j) || !ahead_[j].isValid()) continue;
    const int bytes = elements * esize_[j];
    for (int b = 0; b < bytes; b += 64) cc_.prefetcht0(x86::ptr(cur_[j], ahead_[j], 0, b));
  }
}

template <class E>
void RowRenderer<E>::prefetch_distances() {
  constexpr int kAheadBytes = 8192;
  ahead_slot_.assign(static_cast<size_t>(nops_), x86::Mem());
  for (int j = k_.num_outputs(); j < nops_; ++j) {
    if (!contiguous(j)) continue;
    x86::Gp ahead = cc_.newInt64("prefetch_ahead"), row_bytes = cc_.newInt64("row_bytes"),
            farther = cc_.newInt64();
    cc_.mov(ahead, x86::ptr(outer_, j * 8));  // the row stride: the next row
    cc_.imul(row_bytes, n_, esize_[j]);
    // Twice as far while a row is shorter than 8 KiB, 4 KiB, 2 KiB (each implies the one before).
    for (int shorter_than = kAheadBytes; shorter_than >= kAheadBytes / 4; shorter_than /= 2) {
      cc_.lea(farther, x86::ptr(ahead, ahead));
      cc_.cmp(row_bytes, shorter_than);
      cc_.cmovl(ahead, farther);
    }
    ahead_slot_[j] = cc_.newStack(8, 8);
    cc_.mov(ahead_slot_[j], ahead);
  }
}

template <class E>
void RowRenderer<E>::advance_by(x86::Gp c) {
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

template <class E>
void RowRenderer<E>::fused_element_body(const x86::KReg* tail, int first, bool full) {
  std::vector<x86::Vec> ep = prev_;
  for (size_t i = 0; i < escur_.size(); ++i)
    ep[stash_[i]] = on(k_.exprs[stash_[i]].type, L_, [&](auto& vo) {
      return vo.load(x86::ptr(escur_[i], stash_disp(i, first)), tail);
    });
  emit_body(*ctx_, L_, k_, v_.layout, ecur_, params_, tail, std::vector<uint8_t>(ep.size(), 0), ep,
            elem_store_, full && v_.streaming, first);
}

template <class E>
std::vector<x86::Gp> RowRenderer<E>::stash_cursors(x86::Gp base) {
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

template <class E>
std::vector<uint8_t> RowRenderer<E>::operands_of(const std::vector<uint8_t>& want,
                                                 const std::vector<uint8_t>& known,
                                                 const std::vector<uint8_t>& store) const {
  return body_operands(k_, want, known, store);
}

template <class E>
std::vector<uint8_t> RowRenderer<E>::known(const std::vector<x86::Vec>& preset) const {
  std::vector<uint8_t> out(preset.size(), 0);
  for (size_t i = 0; i < preset.size(); ++i) out[i] = preset[i].isValid();
  return out;
}

template <class E>
std::vector<x86::Gp> RowRenderer<E>::cursors(const std::vector<uint8_t>& used,
                                             const std::vector<x86::Gp>* base) {
  return pass_cursors(cc_, used, base != nullptr ? *base : base_);
}

template <class E>
void RowRenderer<E>::store_stash(const std::vector<x86::Vec>& out, const x86::KReg* tail,
                                 int first) {
  for (size_t i = 0; i < scur_.size(); ++i)
    on(k_.exprs[stash_[i]].type, L_, [&](auto& vo) {
      vo.store(x86::ptr(scur_[i], stash_disp(i, first)), out[stash_[i]], tail);
      return 0;
    });
}

template <class E>
void RowRenderer<E>::load_stash(const x86::KReg* tail, int first) {
  for (size_t i = 0; i < scur_.size(); ++i)
    preset_[stash_[i]] = on(k_.exprs[stash_[i]].type, L_, [&](auto& vo) {
      return vo.load(x86::ptr(scur_[i], stash_disp(i, first)), tail);
    });
}

template <class E>
void RowRenderer<E>::zero64(x86::Gp p) {
  x86::Xmm z = cc_.newXmm();
  if (vex())
    cc_.vxorps(z, z, z);
  else
    cc_.xorps(z, z);
  for (int b = 0; b < 64; b += 16)
    cc_.emit(vex() ? Inst::kIdVmovups : Inst::kIdMovups, x86::xmmword_ptr(p, b), z);
}

template <class E>
void RowRenderer<E>::copy_bytes(x86::Gp dst, x86::Gp src, x86::Gp cnt, int esize) {
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

// What render_reduce.cpp (render()), row_passes.cpp and row_stores.cpp call (row_renderer.h).
#define KILN_ROW_RENDERER_MEMBERS(E)                                                              \
  template void RowRenderer<E>::render();                                                         \
  template AsmMask RowRenderer<E>::fresh_mask(const AsmMask&);                                    \
  template x86::Vec RowRenderer<E>::broadcast_scalar(DType, x86::Vec);                            \
  template void RowRenderer<E>::advance(int);                                                     \
  template void RowRenderer<E>::prefetch_next_row(int);                                           \
  template void RowRenderer<E>::prefetch_distances();                                             \
  template void RowRenderer<E>::advance_by(x86::Gp);                                              \
  template void RowRenderer<E>::fused_element_body(const x86::KReg*, int, bool);                  \
  template std::vector<x86::Gp> RowRenderer<E>::stash_cursors(x86::Gp);                           \
  template std::vector<uint8_t> RowRenderer<E>::operands_of(                                      \
      const std::vector<uint8_t>&, const std::vector<uint8_t>&, const std::vector<uint8_t>&)      \
      const;                                                                                      \
  template std::vector<uint8_t> RowRenderer<E>::known(const std::vector<x86::Vec>&) const;        \
  template std::vector<x86::Gp> RowRenderer<E>::cursors(const std::vector<uint8_t>&,              \
                                                        const std::vector<x86::Gp>*);             \
  template void RowRenderer<E>::store_stash(const std::vector<x86::Vec>&, const x86::KReg*, int); \
  template void RowRenderer<E>::load_stash(const x86::KReg*, int);                                \
  template void RowRenderer<E>::zero64(x86::Gp);                                                  \
  template void RowRenderer<E>::copy_bytes(x86::Gp, x86::Gp, x86::Gp, int);
KILN_ROW_RENDERER_MEMBERS(KernelCompiler)
KILN_ROW_RENDERER_MEMBERS(RecordingAssembler)
#undef KILN_ROW_RENDERER_MEMBERS

}  // namespace kiln::jit::row_detail

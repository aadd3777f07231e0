// The row renderer's stores (row_renderer.h): the element pass (the element outputs, over the
// row once more, with the stashed values loaded back) and the row values' stores.
#include <algorithm>

#include "jit/cpu/interleave.h"
#include "jit/cpu/row_renderer.h"

namespace kiln::jit::row_detail {

template <class E>
void RowRenderer<E>::element_pass() {
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

template <class E>
void RowRenderer<E>::row_stores() {
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
  // Integer and Bool row values (argmax, all / any, a cast of a row value): a vector of them
  // stored into a stack buffer by the body emitter (all lanes are equal), then one element
  // copied out. (Int32 ones, a max cast to Int32, failed to render until 2026-11-30: JitFuzz
  // seed 13003446 warned and ran the kernel's nodes eagerly.)
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
    } else if (k_.output_dtype(j) == DType::Int32) {
      cc_.mov(t.r32(), x86::dword_ptr(cur[j]));
      cc_.mov(x86::dword_ptr(base_[j]), t.r32());
    } else {
      cc_.mov(t, x86::qword_ptr(cur[j]));
      cc_.mov(x86::qword_ptr(base_[j]), t);
    }
  }
}

// What render() calls (row_renderer.cpp).
#define KILN_ROW_STORES(E)                      \
  template void RowRenderer<E>::element_pass(); \
  template void RowRenderer<E>::row_stores();
KILN_ROW_STORES(KernelCompiler)
KILN_ROW_STORES(RecordingAssembler)
#undef KILN_ROW_STORES

}  // namespace kiln::jit::row_detail

// Row kernels (render_reduce.h): the planning of a row function (row_stash, row_pipelined_pass,
// row_scratch_words, row_pieces_aligned) and its entry, render_row_function, which runs the
// row renderer (row_renderer.h).
#include "jit/cpu/render_reduce.h"

#include "jit/cpu/row_renderer.h"
#include "jit/loop/row_program.h"
#include "runtime/error.h"

namespace kiln::jit {

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
  const std::vector<uint8_t> costly = k.costly_element_values();
  std::vector<uint8_t> shared(k.exprs.size(), 0);
  for (size_t i = 0; i < k.exprs.size(); ++i)
    shared[i] = costly[i] && in_pass[i] && is_floating(k.exprs[i].type);
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
  return row_scratch_words(row_stash(k).size(), row_pipelined(k, isa), k.num_outputs(), n);
}

size_t row_scratch_words(size_t stash_values, bool pipelined, int32_t outputs, int64_t n) {
  // Pipelined: two scratch rows in turn, and a dummy row per output (render(), row -1).
  return static_cast<size_t>(n + 64) *
         (pipelined ? 2 * stash_values + static_cast<size_t>(outputs) : stash_values);
}

bool row_pieces_aligned(const std::vector<int64_t>& program, int64_t lanes) {
  int64_t start = 0;
  bool aligned = true;
  if (!program.empty())
    for_each_piece(program.data(), [&](int64_t len, int64_t) {
      aligned = aligned && start % lanes == 0;
      start += len;
    });
  return aligned;
}

namespace {

template <class E>
void render_rows(E& cc, const LoopKernel& k, const KernelVariant& v) {
  for (InnerLayout l : v.layout)
    KILN_CHECK(l != InnerLayout::Strided, "cpu row kernel: a strided row (not rendered)");
  row_detail::RowRenderer<E>(cc, k, v).render();
}

}  // namespace

void render_row_function(KernelCompiler& cc, const LoopKernel& k, const KernelVariant& v) {
  render_rows(cc, k, v);
}
void render_row_function(RecordingAssembler& as, const LoopKernel& k, const KernelVariant& v) {
  render_rows(as, k, v);
}

}  // namespace kiln::jit

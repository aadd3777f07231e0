#include "jit/cpu/baseline_row_kernel.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "jit/loop/row_fold.h"
#include "jit/loop/row_program.h"
#include "runtime/error.h"
#include "runtime/profiler.h"
#include "runtime/small_vector.h"

namespace kiln::jit {

bool BaselineRowKernel::takes_rows(int64_t n) { return n <= kRowProgramChunk; }

std::unique_ptr<BaselineRowKernel> BaselineRowKernel::make(const LoopKernel& k, JitIsa isa) {
  const int64_t t0 = profiler::now_ns();
  for (const Expr& e : k.exprs)
    if (expr_is_reduce(e.op) &&
        (expr_is_arg_reduce(e.op) || !is_floating(k.exprs[static_cast<size_t>(e.a)].type)))
      return nullptr;  // column kernels only; the CPU's row kernels reduce floats
  auto b = std::unique_ptr<BaselineRowKernel>(new BaselineRowKernel());
  b->cut_ = baseline_cut::cut_made(k, isa, t0);
  return b->cut_ == nullptr ? nullptr : std::move(b);
}

void BaselineRowKernel::run(std::span<const InnerLayout> layout, char* const* ptrs,
                            const int64_t* outer, int64_t n, int64_t rows, const uint64_t* params,
                            const std::vector<std::vector<int64_t>>& programs) const {
  KILN_CHECK(takes_rows(n), "baseline row kernel: rows of {} elements (at most {})", n,
             kRowProgramChunk);
  if (rows <= 0) return;
  const baseline_cut::Cut& c = *cut_;
  const std::vector<uint64_t> words = baseline_cut::part_params(c, params, n);
  const int64_t block = std::max<int64_t>(1, kBlockElements / std::max<int64_t>(n, 1));
  // The slots (kBlockElements words each, at least a block's rows) and the row buffer.
  const size_t slot_words = static_cast<size_t>(c.slots) * kBlockElements;
  std::unique_ptr<uint64_t[]> scratch(
      new uint64_t[slot_words + static_cast<size_t>(block * n) + 16]);
  const auto base = (reinterpret_cast<uintptr_t>(scratch.get()) + 63) & ~uintptr_t{63};
  char* slots = reinterpret_cast<char*>(base);
  char* buffer = slots + slot_words * 8;
  // Operand o: from one row to the next outer[o] (a values part's step); along the row its
  // element size, or 0 where broadcast.
  const size_t nops = c.operand_types.size();
  SmallVector<int64_t, 16> along(nops);
  for (size_t o = 0; o < nops; ++o)
    along[o] = layout[o] == InnerLayout::Contiguous
                   ? static_cast<int64_t>(itemsize(c.operand_types[o]))
                   : 0;
  SmallVector<char*, 16> p(nops);
  baseline_cut::Place at;
  at.ptrs = p.data();
  at.value_step = outer;
  at.elem_in = along.data();
  at.elem_out = outer;
  at.elem_inner = n;
  at.slots = slots;
  at.slot_bytes = kBlockElements * 8;
  at.slot_along_inner = false;  // a row's value along its row: broadcast
  at.buffer = buffer;
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t count = std::min(block, rows - r0);
    for (size_t j = 0; j < nops; ++j) p[j] = ptrs[j] + r0 * outer[j];
    at.values = at.elem_outer = count;
    for (const baseline_cut::Step& s : c.steps) {
      const auto es = static_cast<int64_t>(itemsize(s.type));
      at.buffer_outer = n * es;
      const bool direct =
          s.direct >= 0 && layout[static_cast<size_t>(s.direct)] == InnerLayout::Contiguous;
      if (!direct) baseline_cut::run_part(s.part, at, words.data());
      if (s.reduce < 0) continue;
      char* to = slots + static_cast<int64_t>(s.slot) * at.slot_bytes;
      for (int64_t r = 0; r < count; ++r) {
        const char* values =
            direct ? p[static_cast<size_t>(s.direct)] + r * outer[s.direct] : buffer + r * n * es;
        if (s.op == ExprOp::ReduceFirst) {
          const int64_t i = first_nonzero(s.type, values, n);
          std::memcpy(to + r * 8, &i, 8);
        } else {
          const uint64_t bits =
              fold_row(s.op, s.type, programs[static_cast<size_t>(s.reduce)].data(), values);
          std::memcpy(to + r * es, &bits, static_cast<size_t>(es));
        }
      }
    }
  }
}

}  // namespace kiln::jit

#include "jit/cpu/baseline_column_kernel.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "jit/cpu/render_cols.h"
#include "jit/loop/row_fold.h"
#include "jit/loop/row_program.h"
#include "runtime/error.h"
#include "runtime/profiler.h"
#include "runtime/small_vector.h"

namespace kiln::jit {

std::unique_ptr<BaselineColumnKernel> BaselineColumnKernel::make(const LoopKernel& k, JitIsa isa) {
  const int64_t t0 = profiler::now_ns();
  if (!k.has_reduce() || !column_kernel_ok(k)) return nullptr;
  for (const Expr& e : k.exprs) {
    if (!expr_is_reduce(e.op)) continue;
    const DType t = k.exprs[static_cast<size_t>(e.a)].type;
    const bool ok = expr_is_arg_reduce(e.op)    ? t == DType::Float64
                    : e.op == ExprOp::ReduceSum ? is_floating(t) || t == DType::Int64
                                                : is_floating(t);
    if (!ok) return nullptr;
  }
  auto b = std::unique_ptr<BaselineColumnKernel>(new BaselineColumnKernel());
  b->cut_ = baseline_cut::cut_made(k, isa, t0);
  return b->cut_ == nullptr ? nullptr : std::move(b);
}

void BaselineColumnKernel::run(std::span<const InnerLayout> layout, char* const* ptrs,
                               const int64_t* row_stride, int64_t n, int64_t w,
                               const uint64_t* params, const std::vector<int64_t>& program) const {
  if (w <= 0) return;
  const baseline_cut::Cut& c = *cut_;
  const std::vector<uint64_t> words = baseline_cut::part_params(c, params, n);
  const size_t nops = c.operand_types.size();
  SmallVector<int64_t, 16> along(nops), none(nops, 0);
  for (size_t o = 0; o < nops; ++o)
    along[o] = layout[o] == InnerLayout::Contiguous
                   ? static_cast<int64_t>(itemsize(c.operand_types[o]))
                   : 0;
  // Scratch: the slots, the program's levels (16 bytes a column: an argmax's value and row),
  // a piece's buffer (at most 64 rows, the column program's runs).
  constexpr int64_t kPieceRows = 64;
  const int64_t depth = program_depth(program);
  const size_t slot_words = static_cast<size_t>(c.slots) * kBlockColumns;
  const size_t level_words = 2 * kBlockColumns;
  const size_t words_needed = slot_words + static_cast<size_t>(depth) * level_words +
                              static_cast<size_t>(kPieceRows * kBlockColumns) + 16;
  std::unique_ptr<uint64_t[]> scratch(new uint64_t[words_needed]);
  const auto base = (reinterpret_cast<uintptr_t>(scratch.get()) + 63) & ~uintptr_t{63};
  char* slots = reinterpret_cast<char*>(base);
  char* levels = slots + slot_words * 8;
  char* buffer = levels + static_cast<size_t>(depth) * level_words * 8;
  SmallVector<char*, 16> p(nops), piece(nops);
  baseline_cut::Place at;
  at.value_step = along.data();
  at.elem_in = along.data();
  at.elem_out = row_stride;
  at.slots = slots;
  at.slot_bytes = kBlockColumns * 8;
  at.slot_along_inner = true;  // a column's value down its rows: along the columns
  at.buffer = buffer;
  for (int64_t c0 = 0; c0 < w; c0 += kBlockColumns) {
    const int64_t cols = std::min(kBlockColumns, w - c0);
    for (size_t o = 0; o < nops; ++o) p[o] = ptrs[o] + c0 * along[o];
    at.values = at.elem_inner = cols;
    for (const baseline_cut::Step& s : c.steps) {
      if (s.reduce < 0) {
        at.ptrs = p.data();
        at.elem_outer = n;
        baseline_cut::run_part(s.part, at, words.data());
        continue;
      }
      const bool arg = expr_is_arg_reduce(s.op);
      const auto es = static_cast<int64_t>(itemsize(s.type));
      at.ptrs = piece.data();
      at.buffer_outer = cols * es;
      int64_t top = 0, row = 0;  // levels in use; the next piece's first row
      auto level = [&](int64_t i) { return levels + i * static_cast<int64_t>(level_words) * 8; };
      for (size_t i = 0; program[i] != 0;) {
        if (program[i] == 1) {
          const int64_t len = program[i + 1];
          for (size_t o = 0; o < nops; ++o) piece[o] = p[o] + row * row_stride[o];
          at.elem_outer = len;
          baseline_cut::run_part(s.part, at, words.data());
          if (arg)
            fold_column_piece_arg(s.op, reinterpret_cast<const double*>(buffer), len, cols, row,
                                  level(top));
          else
            fold_column_piece(s.op, s.type, buffer, len, cols, level(top));
          ++top;
          row += len;
          i += 3;
        } else {
          KILN_CHECK(program[i] == 2 && top >= 2, "baseline column kernel: program word {}",
                     program[i]);
          if (arg)
            combine_column_levels_arg(s.op, level(top - 2), level(top - 1), cols);
          else
            combine_column_levels(s.op, s.type, level(top - 2), level(top - 1), cols);
          --top;
          i += 1;
        }
      }
      KILN_CHECK(top == 1, "baseline column kernel: {} results left", top);
      char* to = slots + static_cast<int64_t>(s.slot) * at.slot_bytes;
      // An argmax's result is its rows (after the values in its level).
      std::memcpy(to, arg ? level(0) + cols * 8 : level(0),
                  static_cast<size_t>(cols * static_cast<int64_t>(itemsize(s.result))));
    }
  }
}

}  // namespace kiln::jit

#include "jit/cpu/render_cols.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "jit/cpu/reduce_ops.h"
#include "jit/cpu/render_reduce.h"
#include "runtime/error.h"

namespace kiln::jit {

using namespace asmjit;
namespace Inst = x86::Inst;

namespace {

// Per expression: whether it is computed from a Reduce's result (the Reduces included).
std::vector<uint8_t> after_reduce(const LoopKernel& k) {
  std::vector<uint8_t> after(k.exprs.size(), 0);
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr& e = k.exprs[i];
    after[i] = expr_is_reduce(e.op);
    for (int32_t o : {e.a, e.b, e.c}) after[i] = after[i] || (o >= 0 && after[o]);
  }
  return after;
}

}  // namespace

bool column_kernel_ok(const LoopKernel& k) {
  const std::vector<uint8_t> row = k.row_values(), after = after_reduce(k);
  for (const Expr& e : k.exprs) {
    if (e.op == ExprOp::ReduceFirst) return false;         // (rows only)
    if (expr_is_reduce(e.op) && after[e.a]) return false;  // a second pass over the rows
  }
  for (int32_t s : k.stores)
    if (row[s] && !is_floating(k.exprs[s].type)) return false;
  return true;
}

namespace {

constexpr int kSlot = 64;  // bytes per vector on the stack of partial results

class ColRenderer {
 public:
  ColRenderer(x86::Compiler& cc, const LoopKernel& k, const KernelVariant& v)
      : cc_(cc), k_(k), v_(v), isa_(v.isa), L_(cpu_kernel_lanes(k, v.isa)) {}

  void render() {
    FuncNode* f = cc_.addFunc(FuncSignatureT<void, char* const*, const int64_t*, const int64_t*,
                                             int64_t, int64_t, const void*>(CallConvId::kHost));
    if (isa_ != JitIsa::Sse2) {
      f->frame().setAvxEnabled();
      f->frame().setAvxCleanup();
    }
    if (isa_ == JitIsa::Avx512) f->frame().setAvx512Enabled();
    x86::Gp ptrs = cc_.newIntPtr("ptrs"), unused = cc_.newIntPtr("unused");
    rstride_ = cc_.newIntPtr("row_strides");
    w_ = cc_.newInt64("columns");
    n_ = cc_.newInt64("rows");
    params_ = cc_.newIntPtr("params");
    f->setArg(0, ptrs);
    f->setArg(1, rstride_);
    f->setArg(2, unused);
    f->setArg(3, w_);
    f->setArg(4, n_);
    f->setArg(5, params_);
    (void)unused;

    nops_ = k_.num_operands();
    for (int j = 0; j < nops_; ++j) {
      base_.push_back(cc_.newIntPtr());
      cur_.push_back(cc_.newIntPtr());
      cc_.mov(base_[j], x86::ptr(ptrs, j * 8));
      esize_.push_back(static_cast<int>(itemsize(k_.operand_dtype(j))));
    }
    ctx_ = std::make_unique<EmitContext>(EmitContext{cc_, isa_, cc_.cursor(), {}});
    const std::vector<uint8_t> row = k_.row_values();
    const size_t ne = k_.exprs.size();
    for (size_t i = 0; i < ne; ++i)
      if (expr_is_reduce(k_.exprs[i].op)) reduces_.push_back(static_cast<int32_t>(i));
    elem_store_.assign(static_cast<size_t>(k_.num_outputs()), 0);
    row_store_ = elem_store_;
    for (int32_t j = 0; j < k_.num_outputs(); ++j)
      (row[k_.stores[j]] ? row_store_ : elem_store_)[j] = 1;
    want_.assign(ne, 0);
    for (int32_t r : reduces_) want_[k_.exprs[r].a] = 1;
    // An epilogue (element stores reading a reduction's result: `x - x.mean(0)`): the element
    // stores move to a second pass over the block's rows, after its row values.
    const std::vector<uint8_t> after = after_reduce(k_);
    for (int32_t j = 0; j < k_.num_outputs(); ++j)
      epilogue_ = epilogue_ || (elem_store_[j] && after[k_.stores[j]]);
    pass_store_ = epilogue_ ? std::vector<uint8_t>(elem_store_.size(), 0) : elem_store_;
    hoist_.assign(ne, 0);
    for (size_t i = 0; i < ne; ++i) {
      const Expr& e = k_.exprs[i];
      hoist_[i] = epilogue_ && row[i] && after[i] && !expr_is_reduce(e.op) && e.type != DType::Bool;
    }
    // Independent accumulators: up to 4 vectors of columns side by side (fewer with more
    // Reduces, so that the accumulators stay in registers).
    const int R = static_cast<int>(reduces_.size());
    groups_ = std::max(1, std::min(4, 4 / R));
    lanes_buf_ = cc_.newStack(kSlot, 64);
    stack_ = cc_.newStack(static_cast<uint32_t>(kColStackDepth * R * groups_ * kSlot), 64);

    // RowSize: the reduced rows' count, the same for every column of the call; at the vector
    // width and as a scalar (the AVX2 / SSE2 column tail).
    preset_l_.assign(ne, x86::Vec());
    preset_1_.assign(ne, x86::Vec());
    for (size_t i = 0; i < ne; ++i)
      if (k_.exprs[i].op == ExprOp::RowSize) {
        preset_1_[i] = row_size(k_.exprs[i]);
        preset_l_[i] = broadcast(k_.exprs[i].type, preset_1_[i]);
      }

    x86::Gp rem = cc_.newInt64("rem");
    cc_.mov(rem, w_);
    auto loop = [&](int groups, int lanes, const std::vector<x86::Vec>& preset) {
      Label l = cc_.newLabel(), done = cc_.newLabel();
      cc_.bind(l);
      cc_.cmp(rem, groups * lanes);
      cc_.jl(done);
      block(groups, lanes, nullptr, preset);
      advance_columns(groups * lanes);
      cc_.sub(rem, groups * lanes);
      cc_.jmp(l);
      cc_.bind(done);
    };
    if (groups_ > 1) loop(groups_, L_, preset_l_);
    loop(1, L_, preset_l_);
    if (isa_ == JitIsa::Avx512) {  // the last columns: one masked block
      Label done = cc_.newLabel();
      cc_.test(rem, rem);
      cc_.jz(done);
      x86::Gp bits = cc_.newInt64();
      x86::KReg m = cc_.newKw("tail");
      cc_.mov(bits, -1);
      cc_.bzhi(bits, bits, rem);
      cc_.kmovw(m, bits.r32());
      block(1, L_, &m, preset_l_);
      cc_.bind(done);
    } else {
      loop(1, 1, preset_1_);  // a scalar block per column left
    }
    cc_.endFunc();
  }

 private:
  bool vex() const { return isa_ != JitIsa::Sse2; }

  template <class Fn>
  auto on(DType t, int lanes, Fn fn) {
    if (t == DType::Float64) {
      AsmVecOps<double> o(*ctx_, lanes);
      return fn(o);
    }
    AsmVecOps<float> o(*ctx_, lanes);
    return fn(o);
  }

  void move(x86::Vec d, x86::Vec s) {
    if (d.id() != s.id()) cc_.emit(vex() ? Inst::kIdVmovaps : Inst::kIdMovaps, d, s);
  }

  // (T)(n + offset) in lane 0 (n: the reduced rows), as static_cast converts it.
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
    return x;
  }
  x86::Vec broadcast(DType t, x86::Vec x) {
    return on(t, L_, [&](auto& vo) {
      using T = typename std::decay_t<decltype(vo)>::T;
      AsmVecOps<T> so(*ctx_, 1);
      so.store(lanes_buf_, x.xmm());
      return vo.load_broadcast(lanes_buf_);
    });
  }

  void advance_columns(int columns) {
    for (int j = 0; j < nops_; ++j)
      if (v_.layout[j] == InnerLayout::Contiguous) cc_.add(base_[j], columns * esize_[j]);
  }

  int32_t slot(size_t r, int g) const {
    return static_cast<int32_t>((r * static_cast<size_t>(groups_) + static_cast<size_t>(g)) *
                                kSlot);
  }

  // `groups` vectors of `lanes` columns from base_: the column program over the rows, then the
  // row values and their stores.
  void block(int groups, int lanes, const x86::KReg* tail, const std::vector<x86::Vec>& preset) {
    const int32_t frame = static_cast<int32_t>(reduces_.size()) * groups_ * kSlot;
    x86::Gp prog = cc_.newIntPtr("prog"), sp = cc_.newIntPtr("sp"), sb = cc_.newIntPtr("stack");
    cc_.mov(prog, x86::ptr(params_, k_.num_params() * 8));
    cc_.lea(sb, stack_);
    cc_.mov(sp, sb);
    for (int j = 0; j < nops_; ++j) cc_.mov(cur_[j], base_[j]);
    Label l_next = cc_.newLabel(), l_leaf = cc_.newLabel(), l_end = cc_.newLabel();
    x86::Gp word = cc_.newInt64("word");
    cc_.bind(l_next);
    cc_.mov(word, x86::ptr(prog));
    cc_.cmp(word, 1);
    cc_.je(l_leaf);
    cc_.test(word, word);
    cc_.jz(l_end);
    // 2: combine the two latest partial results (earlier on the left).
    for (size_t r = 0; r < reduces_.size(); ++r)
      for (int g = 0; g < groups; ++g) {
        const Expr& e = k_.exprs[reduces_[r]];
        on(e.type, lanes, [&](auto& o) {
          x86::Vec a = o.load(x86::ptr(sp, slot(r, g) - 2 * frame));
          x86::Vec b = o.load(x86::ptr(sp, slot(r, g) - frame));
          o.store(x86::ptr(sp, slot(r, g) - 2 * frame), reduce_combine(o, e.op, a, b));
          return 0;
        });
      }
    cc_.sub(sp, frame);
    cc_.add(prog, 8);
    cc_.jmp(l_next);

    // 1 len 0: the next `len` rows folded in order from the identity.
    cc_.bind(l_leaf);
    x86::Gp len = cc_.newInt64("len");
    cc_.mov(len, x86::ptr(prog, 8));
    cc_.add(prog, 24);
    std::vector<x86::Vec> acc;
    for (size_t r = 0; r < reduces_.size(); ++r)
      for (int g = 0; g < groups; ++g)
        acc.push_back(on(k_.exprs[reduces_[r]].type, lanes, [&](auto& o) {
          x86::Vec a = o.new_vec();
          move(a, reduce_identity(o, k_.exprs[reduces_[r]].op));
          return a;
        }));
    Label l_row = cc_.newLabel(), l_rows_done = cc_.newLabel();
    cc_.bind(l_row);
    cc_.test(len, len);
    cc_.jz(l_rows_done);
    for (int g = 0; g < groups; ++g) {
      const std::vector<x86::Vec> out = emit_body(*ctx_, lanes, k_, v_.layout, cur_, params_, tail,
                                                  want_, preset, pass_store_, false, g * lanes);
      for (size_t r = 0; r < reduces_.size(); ++r) {
        const Expr& e = k_.exprs[reduces_[r]];
        x86::Vec& a = acc[r * static_cast<size_t>(groups) + static_cast<size_t>(g)];
        on(e.type, lanes, [&](auto& o) {
          move(a, reduce_combine(o, e.op, a, out[e.a]));
          return 0;
        });
      }
    }
    for (int j = 0; j < nops_; ++j) cc_.add(cur_[j], x86::ptr(rstride_, j * 8));
    cc_.dec(len);
    cc_.jmp(l_row);
    cc_.bind(l_rows_done);
    for (size_t r = 0; r < reduces_.size(); ++r)
      for (int g = 0; g < groups; ++g)
        on(k_.exprs[reduces_[r]].type, lanes, [&](auto& o) {
          o.store(x86::ptr(sp, slot(r, g)), acc[r * static_cast<size_t>(groups) + g]);
          return 0;
        });
    cc_.add(sp, frame);
    cc_.jmp(l_next);

    // The result is the one partial left: the row values, stored at row 0 of each column.
    cc_.bind(l_end);
    const std::vector<uint8_t> none(k_.exprs.size(), 0);
    std::vector<std::vector<x86::Vec>> presets;
    for (int g = 0; g < groups; ++g) {
      std::vector<x86::Vec> p = preset;
      for (size_t r = 0; r < reduces_.size(); ++r)
        p[reduces_[r]] = on(k_.exprs[reduces_[r]].type, lanes,
                            [&](auto& o) { return o.load(x86::ptr(sb, slot(r, g))); });
      // The row values the epilogue reads are computed here once, with the row stores.
      const std::vector<x86::Vec> out = emit_body(*ctx_, lanes, k_, v_.layout, base_, params_, tail,
                                                  hoist_, p, row_store_, false, g * lanes);
      for (size_t i = 0; i < p.size(); ++i)
        if (hoist_[i] && !p[i].isValid()) p[i] = out[i];
      presets.push_back(std::move(p));
    }
    if (!epilogue_) return;
    // The epilogue: the block's rows once more, storing the element values.
    x86::Gp rows = cc_.newInt64("rows");
    cc_.mov(rows, n_);
    for (int j = 0; j < nops_; ++j) cc_.mov(cur_[j], base_[j]);
    Label l_epi = cc_.newLabel(), l_epi_done = cc_.newLabel();
    cc_.bind(l_epi);
    cc_.test(rows, rows);
    cc_.jz(l_epi_done);
    for (int g = 0; g < groups; ++g)
      emit_body(*ctx_, lanes, k_, v_.layout, cur_, params_, tail, none, presets[g], elem_store_,
                false, g * lanes);
    for (int j = 0; j < nops_; ++j) cc_.add(cur_[j], x86::ptr(rstride_, j * 8));
    cc_.dec(rows);
    cc_.jmp(l_epi);
    cc_.bind(l_epi_done);
  }

  x86::Compiler& cc_;
  const LoopKernel& k_;
  const KernelVariant& v_;
  JitIsa isa_;
  int L_;
  int nops_ = 0;
  int groups_ = 1;
  x86::Gp rstride_, w_, n_, params_;
  std::vector<x86::Gp> base_, cur_;
  std::vector<int> esize_;
  std::unique_ptr<EmitContext> ctx_;
  std::vector<int32_t> reduces_;
  std::vector<uint8_t> elem_store_, row_store_, want_, pass_store_, hoist_;
  bool epilogue_ = false;
  std::vector<x86::Vec> preset_l_, preset_1_;
  x86::Mem stack_, lanes_buf_;
};

}  // namespace

void render_column_function(x86::Compiler& cc, const LoopKernel& k, const KernelVariant& v) {
  KILN_CHECK(column_kernel_ok(k),
             "cpu column kernel: a reduction reads another's result, or a row value is not a "
             "float (not rendered)");
  for (InnerLayout l : v.layout)
    KILN_CHECK(l != InnerLayout::Strided, "cpu column kernel: strided columns (not rendered)");
  ColRenderer(cc, k, v).render();
}

}  // namespace kiln::jit

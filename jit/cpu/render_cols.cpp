#include "jit/cpu/render_cols.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "jit/cpu/emit_function.h"
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
  bool arg = false;
  for (const Expr& e : k.exprs) {
    if (e.op == ExprOp::ReduceFirst) return false;            // (rows only)
    if (e.op == ExprOp::Load && e.ivalue != 0) return false;  // a row load (rows only)
    if (expr_is_reduce(e.op) && after[e.a]) return false;     // a second pass over the rows
    // ReduceArgMax / ReduceArgMin of computed Float64 values (the lowering's cast: the running
    // row index then has the value's 64-bit lanes). An input's argmax as it is (its Load, cast)
    // is declined, its node runs eagerly: eager scans the columns in place in the input's own
    // lanes (Float32 with Int32 rows, 8 a vector on AVX2), [8192, 1024] 4.1 ms against 4.7 as a
    // kernel (Float64 lanes), [2048, 4096] 4.2 against 6.8. With a producer fused the kernel is
    // the faster (`(x * w + 1).argmax(0)` [65536, 128]: 12.8 ms eagerly, 7.1 as a kernel).
    if (expr_is_arg_reduce(e.op)) {
      const Expr& v = k.exprs[e.a];
      if (v.type != DType::Float64 || v.op == ExprOp::Load ||
          (v.op == ExprOp::Cast && k.exprs[v.a].op == ExprOp::Load))
        return false;
      arg = true;
    }
  }
  // Row values stored: floats, and Int64 sums (the planner fuses nothing reading one) of
  // integers and Bools loaded as they are. A count of float flags (`(x > 0.5).sum(0)`) is
  // declined: Float32 loads in 64-bit lanes and the flags' 0/1 made per vector ran 0.82x eager's
  // compare and Bool sum ([8192, 1024], 6.5 against 5.3 ms); its nodes run eagerly (parity).
  bool float_loads = false;
  for (const Expr& e : k.exprs)
    float_loads = float_loads || (e.op == ExprOp::Load && is_floating(e.type));
  for (int32_t s : k.stores)
    if (row[s] && !is_floating(k.exprs[s].type) &&
        (k.exprs[s].type != DType::Int64 || (float_loads && !arg)))
      return false;
  return true;
}

bool column_kernel_has_epilogue(const LoopKernel& k) {
  const std::vector<uint8_t> row = k.row_values(), after = after_reduce(k);
  for (int32_t s : k.stores)
    if (!row[s] && after[s]) return true;
  return false;
}

namespace {

// The scratch rows one Reduce's partial results take per level: an argmax's values and rows.
int scratch_slots_of(ExprOp op) { return expr_is_arg_reduce(op) ? 2 : 1; }

}  // namespace

int column_scratch_slots(const LoopKernel& k) {
  int slots = 0;
  for (const Expr& e : k.exprs)
    if (expr_is_reduce(e.op)) slots += scratch_slots_of(e.op);
  return slots;
}

namespace {

constexpr int kSlot = 64;  // bytes of one vector

template <class E>
class ColRenderer {
 public:
  ColRenderer(E& cc, const LoopKernel& k, const KernelVariant& v)
      : cc_(cc), k_(k), v_(v), isa_(v.isa), L_(cpu_kernel_lanes(k, v.isa)) {}

  void render() {
    // The arguments (KernelFn's, used otherwise): the row strides in `inner`, the columns in
    // n_inner and the rows in n_outer.
    const FunctionArgs args = begin_function(cc_, isa_);
    x86::Gp ptrs = args.ptrs, unused = args.outer;
    rstride_ = args.inner;
    w_ = args.n_inner;
    n_ = args.n_outer;
    params_ = args.params;
    (void)unused;

    nops_ = k_.num_operands();
    for (int j = 0; j < nops_; ++j) {
      base_.push_back(cc_.newIntPtr());
      cc_.mov(base_[j], x86::ptr(ptrs, j * 8));
      esize_.push_back(static_cast<int>(itemsize(k_.operand_dtype(j))));
    }
    ctx_ = std::make_unique<EmitContextT<E>>(cc_, isa_, cc_.cursor());
    const std::vector<uint8_t> row = k_.row_values();
    const size_t ne = k_.exprs.size();
    // Each Reduce's partial results take a scratch row of columns per level (its slot); an
    // argmax / argmin takes two, its values and their row indices.
    for (size_t i = 0; i < ne; ++i)
      if (expr_is_reduce(k_.exprs[i].op)) {
        reduces_.push_back(static_cast<int32_t>(i));
        slot_.push_back(nslots_);
        nslots_ += scratch_slots_of(k_.exprs[i].op);
        has_arg_ = has_arg_ || expr_is_arg_reduce(k_.exprs[i].op);
      }
    elem_store_.assign(static_cast<size_t>(k_.num_outputs()), 0);
    row_store_ = elem_store_;
    for (int32_t j = 0; j < k_.num_outputs(); ++j)
      (row[k_.stores[j]] ? row_store_ : elem_store_)[j] = 1;
    want_.assign(ne, 0);
    for (int32_t r : reduces_) want_[k_.exprs[r].a] = 1;
    // An epilogue (element stores reading a reduction's result: `x - x.mean(0)`): the element
    // stores move to a second pass over the rows, after the row values.
    epilogue_ = column_kernel_has_epilogue(k_);
    pass_store_ = epilogue_ ? std::vector<uint8_t>(elem_store_.size(), 0) : elem_store_;
    // Blocks of up to 4 vectors of columns per step of a row (fewer with more Reduces).
    const int R = nslots_;
    groups_ = std::max(1, std::min(4, 4 / R));
    // 64-bit lanes over 4-byte loads only (Float64 or Int64 sums of Float32 or Int32 values)
    // load half a register per vector: on AVX-512 twice the vectors side by side, so that a
    // block still spans 4 cache lines of each row ([8192, 1024] `x.to(kFloat64).sum(0)`: 5.5 ->
    // 5.0 ms, best of 200; eager 15.0).
    bool narrow = isa_ == JitIsa::Avx512 && R == 1;
    for (const Expr& e : k_.exprs)
      if (e.op == ExprOp::Load) narrow = narrow && itemsize(e.type) * L_ * 2 == 64;
    if (narrow) groups_ *= 2;
    lanes_buf_ = cc_.newStack(kSlot, 64);

    // RowSize: the reduced rows' count, the same for every column of the call; at the vector
    // width and as a scalar (the AVX2 / SSE2 column tail).
    preset_l_.assign(ne, x86::Vec());
    preset_1_.assign(ne, x86::Vec());
    for (size_t i = 0; i < ne; ++i)
      if (k_.exprs[i].op == ExprOp::RowSize) {
        preset_1_[i] = row_size(k_.exprs[i]);
        preset_l_[i] = broadcast(k_.exprs[i].type, preset_1_[i]);
      }

    // Scratch for the partial results (the launcher's, per thread): a level per stack entry,
    // in it a row of wpad_ (w rounded up to 16) columns per slot, 8 bytes per column.
    wpad8_ = cc_.newInt64("wpad8");
    lvl_ = cc_.newInt64("level");
    sb_ = cc_.newIntPtr("scratch");
    cc_.lea(wpad8_, x86::ptr(w_, 15));
    cc_.and_(wpad8_, -16);
    cc_.shl(wpad8_, 3);
    cc_.imul(lvl_, wpad8_, R);
    cc_.mov(sb_, x86::ptr(params_, (k_.num_params() + 1) * 8));
    if (has_arg_) {                  // the absolute index of the current piece's first row
      row0_ = cc_.newInt64("row0");  // the call's first row: a chunk's, where rows split
      cc_.mov(row0_, x86::ptr(params_, (k_.num_params() + 2) * 8));
    }
    rowoff_ = cc_.newStack(static_cast<uint32_t>(nops_ * 8), 8);
    {
      x86::Gp z = cc_.newInt64();
      cc_.xor_(z, z);
      for (int j = 0; j < nops_; ++j) cc_.mov(rowoff_.cloneAdjusted(j * 8), z);
    }
    // What each pass reads and writes: the reducing pass its loads and element stores; the row
    // values' pass (finish) and the epilogue take the Reduces' results (and RowSize) as given.
    std::vector<uint8_t> given(ne, 0);
    for (size_t i = 0; i < ne; ++i)
      given[i] = expr_is_reduce(k_.exprs[i].op) || k_.exprs[i].op == ExprOp::RowSize;
    const std::vector<uint8_t> none(ne, 0);
    pass_used_ = body_operands(k_, want_, given, pass_store_);
    finish_used_ = body_operands(k_, none, given, row_store_);
    epilogue_used_ = body_operands(k_, none, given, elem_store_);

    // The column program once for all the call's columns: each piece walks its rows in memory
    // order, each row across all the columns (piece_rows).
    x86::Gp prog = cc_.newIntPtr("prog"), sp = cc_.newIntPtr("sp");
    cc_.mov(prog, x86::ptr(params_, k_.num_params() * 8));
    cc_.mov(sp, sb_);
    Label l_next = cc_.newLabel(), l_leaf = cc_.newLabel(), l_end = cc_.newLabel();
    Label l_push = cc_.newLabel(), l_pop = cc_.newLabel();
    x86::Gp word = cc_.newInt64("word");
    cc_.bind(l_next);
    cc_.mov(word, x86::ptr(prog));
    cc_.cmp(word, 1);
    cc_.je(l_leaf);
    cc_.test(word, word);
    cc_.jz(l_end);
    cc_.cmp(word, 3);
    cc_.je(l_push);
    cc_.cmp(word, 4);
    cc_.je(l_pop);
    combine_levels(sp);  // 2: the two latest partial results, earlier on the left
    cc_.sub(sp, lvl_);
    cc_.add(prog, 8);
    cc_.jmp(l_next);

    // 3 addr: a level stored at addr (by a call over other rows: row_program.h) pushed; 4 addr:
    // the latest level popped into addr.
    auto slot_word = [&](bool push) {
      x86::Gp addr = cc_.newIntPtr("slot");
      cc_.mov(addr, x86::ptr(prog, 8));
      if (push) {
        copy_level(sp, addr);
        cc_.add(sp, lvl_);
      } else {
        cc_.sub(sp, lvl_);
        copy_level(addr, sp);
      }
      cc_.add(prog, 16);
      cc_.jmp(l_next);
    };
    cc_.bind(l_push);
    slot_word(true);
    cc_.bind(l_pop);
    slot_word(false);

    cc_.bind(l_leaf);  // 1 len 0: the next `len` rows folded in order from the identity
    x86::Gp len = cc_.newInt64("len");
    cc_.mov(len, x86::ptr(prog, 8));
    cc_.add(prog, 24);
    const std::vector<x86::Gp> rb = level_rows(sp);
    colcur_.assign(static_cast<size_t>(nops_), x86::Gp());  // the identities read nothing
    columns([&](int groups, int lanes, const x86::KReg*, const std::vector<x86::Vec>&) {
      start_piece(groups, lanes, rb);
    });
    piece_rows(len, rb);
    for (int j = 0; j < nops_; ++j) {  // the next piece's first row
      x86::Gp d = cc_.newInt64();
      cc_.mov(d, x86::ptr(rstride_, j * 8));
      cc_.imul(d, len);
      cc_.add(rowoff_.cloneAdjusted(j * 8), d);
    }
    if (has_arg_) cc_.add(row0_, len);
    cc_.add(sp, lvl_);
    cc_.jmp(l_next);

    // The result is the one partial left (level 0): the row values, stored at row 0 of each
    // column, then the epilogue.
    cc_.bind(l_end);
    colcur_ = pass_cursors(cc_, finish_used_, base_);
    std::vector<x86::Gp> r0 = level_rows(sb_);
    columns([&](int groups, int lanes, const x86::KReg* tail, const std::vector<x86::Vec>& pre) {
      finish(groups, lanes, tail, pre, r0);
    });
    if (epilogue_) epilogue(r0);
    if (v_.streaming) cc_.sfence();  // non-temporal stores are visible before the kernel returns
    end_function(cc_);
  }

 private:
  bool vex() const { return isa_ != JitIsa::Sse2; }
  // Element stores of whole vectors go around the caches in a streaming variant (the launcher
  // checked that every such store is vector-aligned); a masked or scalar one never does.
  bool streams(int lanes, const x86::KReg* tail) const {
    return v_.streaming && lanes == L_ && tail == nullptr;
  }

  // The emitter of t's lanes (Int64 sums in 64-bit lanes: with_vec_ops).
  template <class Fn>
  auto on(DType t, int lanes, Fn fn) {
    return with_vec_ops(*ctx_, t, lanes, fn);
  }

  void move(x86::Vec d, x86::Vec s) {
    if (d.id() != s.id()) cc_.emit(vex() ? Inst::kIdVmovaps : Inst::kIdMovaps, d, s);
  }

  // (T)(n + offset) in lane 0 (n: the reduced rows), as static_cast converts it.
  // (n: all the reduced rows, the launch word after the first row's: a call may walk a chunk
  // of them, or none.)
  x86::Vec row_size(const Expr& e) {
    x86::Gp all = cc_.newInt64("rows");
    cc_.mov(all, x86::ptr(params_, (k_.num_params() + 3) * 8));
    return count_as_float(cc_, isa_, all, e.ivalue, e.type);
  }
  x86::Vec broadcast(DType t, x86::Vec x) {
    return on(t, L_, [&](auto& vo) {
      using T = typename std::decay_t<decltype(vo)>::T;
      AsmVecOps<T, E> so(*ctx_, 1);
      so.store(lanes_buf_, x.xmm());
      return vo.load_broadcast(lanes_buf_);
    });
  }

  // A level's bytes (lvl_, a multiple of 128) from `from` to `to`, 16 at a time.
  void copy_level(x86::Gp to, x86::Gp from) {
    x86::Gp off = cc_.newInt64("off");
    cc_.xor_(off, off);
    Label l = cc_.newLabel(), done = cc_.newLabel();
    cc_.bind(l);
    cc_.cmp(off, lvl_);
    cc_.jge(done);
    x86::Vec t = cc_.newXmm("copy");
    cc_.emit(vex() ? Inst::kIdVmovups : Inst::kIdMovups, t, x86::ptr(from, off));
    cc_.emit(vex() ? Inst::kIdVmovups : Inst::kIdMovups, x86::ptr(to, off), t);
    cc_.add(off, 16);
    cc_.jmp(l);
    cc_.bind(done);
  }

  // Per slot: the start of its row of columns in the level at `level`.
  std::vector<x86::Gp> level_rows(x86::Gp level) {
    std::vector<x86::Gp> rows;
    for (int r = 0; r < nslots_; ++r) {
      x86::Gp p = cc_.newIntPtr();
      cc_.mov(p, wpad8_);
      cc_.imul(p, r);
      cc_.add(p, level);
      rows.push_back(p);
    }
    return rows;
  }
  // A Reduce's partial results for the vector `g` of the block at col_ (an argmax's values).
  x86::Mem partial(const std::vector<x86::Gp>& rows, size_t r, int g, int lanes) {
    const Expr& e = k_.exprs[reduces_[r]];
    const int es =
        static_cast<int>(itemsize(expr_is_arg_reduce(e.op) ? k_.exprs[e.a].type : e.type));
    return x86::ptr(rows[slot_[r]], col_, es == 8 ? 3 : 2, g * lanes * es);
  }
  // An argmax's partial row indices (Int64) for the vector `g` of the block at col_.
  x86::Mem partial_index(const std::vector<x86::Gp>& rows, size_t r, int g, int lanes) {
    return x86::ptr(rows[slot_[r] + 1], col_, 3, g * lanes * 8);
  }

  // Whether the argmax (ReduceArgMax; argmin: ReduceArgMin) candidate v replaces best, a later
  // row's value against an earlier one's: eager's `better`, best not NaN and v NaN or beyond it
  // (a tie keeps the earlier row; +0 and -0 tie).
  template <class O>
  auto arg_takes(O& o, ExprOp op, x86::Vec best, x86::Vec v) {
    return o.mask_and(
        o.eq(best, best),
        o.mask_or(o.unord(v, v), op == ExprOp::ReduceArgMax ? o.gt(v, best) : o.lt(v, best)));
  }

  // The pass's row cursors one reduced row on.
  void next_row(const std::vector<x86::Gp>& rowcur) {
    for (int j = 0; j < nops_; ++j)
      if (rowcur[j].isValid()) cc_.add(rowcur[j], x86::ptr(rstride_, j * 8));
  }

  // Runs `block(groups, lanes, tail, preset)` over the call's columns from colcur_ / col_ = 0
  // (a new col_ per call, as the pass's cursors):
  // blocks of groups_ vectors, then single vectors, then the last columns (AVX-512: one masked
  // vector; AVX2, SSE2: one column at a time).
  template <class Block>
  void columns(const Block& block) {
    x86::Gp rem = cc_.newInt64("rem");
    col_ = cc_.newInt64("col");
    cc_.mov(rem, w_);
    cc_.xor_(col_, col_);
    auto loop = [&](int groups, int lanes, const std::vector<x86::Vec>& preset) {
      Label l = cc_.newLabel(), done = cc_.newLabel();
      cc_.bind(l);
      cc_.cmp(rem, groups * lanes);
      cc_.jl(done);
      block(groups, lanes, nullptr, preset);
      for (int j = 0; j < nops_; ++j)
        if (colcur_[j].isValid() && v_.layout[j] == InnerLayout::Contiguous)
          cc_.add(colcur_[j], groups * lanes * esize_[j]);
      cc_.add(col_, groups * lanes);
      cc_.sub(rem, groups * lanes);
      cc_.jmp(l);
      cc_.bind(done);
    };
    if (groups_ > 1) loop(groups_, L_, preset_l_);
    loop(1, L_, preset_l_);
    if (isa_ == JitIsa::Avx512) {
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
      loop(1, 1, preset_1_);
    }
  }

  // 2: level sp - 2 combined with level sp - 1 into sp - 2, every column (whole vectors: the
  // rows are padded to 16 columns, the padding never stored).
  void combine_levels(x86::Gp sp) {
    x86::Gp a = cc_.newIntPtr("a"), b = cc_.newIntPtr("b");
    cc_.mov(b, sp);
    cc_.sub(b, lvl_);
    cc_.mov(a, b);
    cc_.sub(a, lvl_);
    const std::vector<x86::Gp> ra = level_rows(a), rbs = level_rows(b);
    x86::Gp rem = cc_.newInt64("rem");
    col_ = cc_.newInt64("col");
    cc_.mov(rem, w_);
    cc_.xor_(col_, col_);
    Label l = cc_.newLabel(), done = cc_.newLabel();
    cc_.bind(l);
    cc_.test(rem, rem);
    cc_.jle(done);
    for (size_t r = 0; r < reduces_.size(); ++r) {
      const Expr& e = k_.exprs[reduces_[r]];
      if (expr_is_arg_reduce(e.op)) {  // the later level's row where its value is better
        on(DType::Float64, L_, [&](auto& o) {
          const x86::Vec va = o.load(partial(ra, r, 0, L_)), vb = o.load(partial(rbs, r, 0, L_));
          const x86::Vec ia = o.load(partial_index(ra, r, 0, L_)),
                         ib = o.load(partial_index(rbs, r, 0, L_));
          const auto take = arg_takes(o, e.op, va, vb);
          o.store(partial(ra, r, 0, L_), o.select(take, vb, va));
          o.store(partial_index(ra, r, 0, L_), o.select(take, ib, ia));
          return 0;
        });
        continue;
      }
      on(e.type, L_, [&](auto& o) {
        const x86::Vec x = o.load(partial(ra, r, 0, L_)), y = o.load(partial(rbs, r, 0, L_));
        o.store(partial(ra, r, 0, L_), reduce_combine(o, e.op, x, y, !is_floating(e.type)));
        return 0;
      });
    }
    cc_.add(col_, L_);
    cc_.sub(rem, L_);
    cc_.jmp(l);
    cc_.bind(done);
  }

  // A piece's partial results start as each Reduce's identity (an argmax's values below every
  // value, argmin's above, their rows the piece's first: a column of -inf keeps that row), for
  // the vectors of the block at col_ in the level at `rows`.
  void start_piece(int groups, int lanes, const std::vector<x86::Gp>& rows) {
    for (size_t r = 0; r < reduces_.size(); ++r) {
      const ExprOp op = k_.exprs[reduces_[r]].op;
      for (int g = 0; g < groups; ++g) {
        if (expr_is_arg_reduce(op)) {
          on(DType::Float64, lanes, [&](auto& o) {
            const double inf = std::numeric_limits<double>::infinity();
            o.store(partial(rows, r, g, lanes), o.splat(op == ExprOp::ReduceArgMax ? -inf : inf));
            cc_.mov(lanes_buf_, row0_);
            o.store(partial_index(rows, r, g, lanes), o.load_broadcast(lanes_buf_));
            return 0;
          });
          continue;
        }
        const DType t = k_.exprs[reduces_[r]].type;
        on(t, lanes, [&](auto& o) {
          o.store(partial(rows, r, g, lanes), reduce_identity(o, op, !is_floating(t)));
          return 0;
        });
      }
    }
  }

  // The piece's `len` rows from rowoff_, in memory order: each row across all the call's
  // columns, every vector's value folded into its partial result in the level at `rows`
  // (loaded, combined, stored back: the accumulators live in the scratch, in L1). Each column
  // is folded in row order from the identity, as eager's runs are. Walking a block of columns
  // down the piece's rows instead (one register accumulator per vector) touched a new page of
  // a row-major input at every row: the hardware prefetchers never ran ahead.
  void piece_rows(x86::Gp len_in, const std::vector<x86::Gp>& rows) {
    x86::Gp len = cc_.newInt64("rows_left");
    cc_.mov(len, len_in);
    const std::vector<x86::Gp> rowcur = pass_cursors(cc_, pass_used_, base_);
    for (int j = 0; j < nops_; ++j)
      if (rowcur[j].isValid()) cc_.add(rowcur[j], rowoff_.cloneAdjusted(j * 8));
    x86::Gp index;  // (argmax) the current row's index
    if (has_arg_) {
      index = cc_.newInt64("index");
      cc_.mov(index, row0_);
    }
    Label l_row = cc_.newLabel(), l_rows_done = cc_.newLabel();
    cc_.bind(l_row);
    cc_.test(len, len);
    cc_.jz(l_rows_done);
    colcur_ = pass_cursors(cc_, pass_used_, rowcur);
    if (has_arg_) cc_.mov(lanes_buf_, index);
    columns([&](int groups, int lanes, const x86::KReg* tail, const std::vector<x86::Vec>& pre) {
      fold_row(groups, lanes, tail, pre, rows);
    });
    next_row(rowcur);
    if (has_arg_) cc_.inc(index);
    cc_.dec(len);
    cc_.jmp(l_row);
    cc_.bind(l_rows_done);
  }

  // One row of the block at colcur_ / col_ folded into its partial results.
  void fold_row(int groups, int lanes, const x86::KReg* tail, const std::vector<x86::Vec>& preset,
                const std::vector<x86::Gp>& rows) {
    x86::Vec row;  // (argmax) the row's index in every lane
    if (has_arg_)
      on(DType::Float64, lanes, [&](auto& o) {
        row = o.load_broadcast(lanes_buf_);
        return 0;
      });
    for (int g = 0; g < groups; ++g) {
      const std::vector<x86::Vec> out =
          emit_body(*ctx_, lanes, k_, v_.layout, colcur_, params_, tail, want_, preset, pass_store_,
                    streams(lanes, tail), g * lanes);
      for (size_t r = 0; r < reduces_.size(); ++r) {
        const Expr& e = k_.exprs[reduces_[r]];
        if (expr_is_arg_reduce(e.op)) {
          on(DType::Float64, lanes, [&](auto& o) {
            const x86::Vec best = o.load(partial(rows, r, g, lanes)),
                           at = o.load(partial_index(rows, r, g, lanes));
            const auto take = arg_takes(o, e.op, best, out[e.a]);
            o.store(partial_index(rows, r, g, lanes), o.select(take, row, at));
            o.store(partial(rows, r, g, lanes), o.select(take, out[e.a], best));
            return 0;
          });
          continue;
        }
        on(e.type, lanes, [&](auto& o) {
          const x86::Vec a = o.load(partial(rows, r, g, lanes));
          o.store(partial(rows, r, g, lanes),
                  reduce_combine(o, e.op, a, out[e.a], !is_floating(e.type)));
          return 0;
        });
      }
    }
  }

  // The results of one block (level 0 at `rows`): its row values and row stores.
  void finish(int groups, int lanes, const x86::KReg* tail, const std::vector<x86::Vec>& preset,
              const std::vector<x86::Gp>& rows) {
    const std::vector<uint8_t> none(k_.exprs.size(), 0);
    for (int g = 0; g < groups; ++g)
      emit_body(*ctx_, lanes, k_, v_.layout, colcur_, params_, tail, none,
                with_results(preset, rows, g, lanes), row_store_, false, g * lanes);
  }

  // `preset` with the Reduces' results of vector g of the block at col_ (level 0 at `rows`).
  std::vector<x86::Vec> with_results(const std::vector<x86::Vec>& preset,
                                     const std::vector<x86::Gp>& rows, int g, int lanes) {
    std::vector<x86::Vec> p = preset;
    for (size_t r = 0; r < reduces_.size(); ++r) {
      const bool arg = expr_is_arg_reduce(k_.exprs[reduces_[r]].op);  // its result: the rows
      p[reduces_[r]] = on(k_.exprs[reduces_[r]].type, lanes, [&](auto& o) {
        return o.load(arg ? partial_index(rows, r, g, lanes) : partial(rows, r, g, lanes));
      });
    }
    return p;
  }

  // The epilogue: every row once more, all its blocks of columns in turn (rows in memory
  // order), storing the element values; the row values they read are computed from the
  // Reduces' results (level 0 at `rows`) for each block.
  void epilogue(const std::vector<x86::Gp>& rows) {
    const std::vector<uint8_t> none(k_.exprs.size(), 0);
    const std::vector<x86::Gp> rowcur = pass_cursors(cc_, epilogue_used_, base_);
    x86::Gp left = cc_.newInt64("rows_left");
    cc_.mov(left, n_);
    Label l_epi = cc_.newLabel(), l_epi_done = cc_.newLabel();
    cc_.bind(l_epi);
    cc_.test(left, left);
    cc_.jz(l_epi_done);
    colcur_ = pass_cursors(cc_, epilogue_used_, rowcur);
    columns([&](int groups, int lanes, const x86::KReg* tail, const std::vector<x86::Vec>& pre) {
      for (int g = 0; g < groups; ++g)
        emit_body(*ctx_, lanes, k_, v_.layout, colcur_, params_, tail, none,
                  with_results(pre, rows, g, lanes), elem_store_, streams(lanes, tail), g * lanes);
    });
    next_row(rowcur);
    cc_.dec(left);
    cc_.jmp(l_epi);
    cc_.bind(l_epi_done);
  }

  E& cc_;
  const LoopKernel& k_;
  const KernelVariant& v_;
  JitIsa isa_;
  int L_;
  int nops_ = 0;
  int groups_ = 1;
  x86::Gp rstride_, w_, n_, params_;
  std::vector<x86::Gp> base_;
  std::vector<int> esize_;
  std::unique_ptr<EmitContextT<E>> ctx_;
  std::vector<int32_t> reduces_;
  std::vector<int> slot_;  // per Reduce: its first scratch row (an argmax's values; rows next)
  int nslots_ = 0;
  bool has_arg_ = false;  // a ReduceArgMax / ReduceArgMin
  x86::Gp row0_;          // (has_arg_) the current piece's first row
  std::vector<uint8_t> elem_store_, row_store_, want_, pass_store_;
  std::vector<uint8_t> pass_used_, finish_used_, epilogue_used_;  // operands of each pass
  bool epilogue_ = false;
  std::vector<x86::Vec> preset_l_, preset_1_;
  x86::Mem lanes_buf_, rowoff_;
  x86::Gp wpad8_, lvl_, sb_, col_;
  std::vector<x86::Gp> colcur_;  // the current pass's cursors (pass_cursors)
};

}  // namespace

namespace {

template <class E>
void render_columns(E& cc, const LoopKernel& k, const KernelVariant& v) {
  KILN_CHECK(column_kernel_ok(k),
             "cpu column kernel: a reduction reads another's result, or a row value is not a "
             "float (not rendered)");
  for (InnerLayout l : v.layout)
    KILN_CHECK(l != InnerLayout::Strided, "cpu column kernel: strided columns (not rendered)");
  ColRenderer<E>(cc, k, v).render();
}

}  // namespace

void render_column_function(KernelCompiler& cc, const LoopKernel& k, const KernelVariant& v) {
  render_columns(cc, k, v);
}
void render_column_function(RecordingAssembler& as, const LoopKernel& k, const KernelVariant& v) {
  render_columns(as, k, v);
}

}  // namespace kiln::jit

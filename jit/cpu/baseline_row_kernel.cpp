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

namespace {

using Arg = BaselineRowKernel::Arg;
using Source = BaselineRowKernel::Source;

// What the cutting knows of the row kernel.
struct Cut {
  const LoopKernel& k;
  std::vector<uint8_t> row;       // LoopKernel::row_values
  std::vector<int32_t> level;     // a row value: how many Reduces it waits for
  std::vector<int32_t> slot;      // a computed row value's array (Reduces and row operations)
  std::vector<int32_t> row_size;  // a RowSize: its param in the derived kernels
};

bool row_leaf(const Expr& e) {
  return e.op == ExprOp::Const || e.op == ExprOp::Param || e.op == ExprOp::RowSize ||
         e.op == ExprOp::Load;
}

// A pointwise kernel of the row kernel's expressions that stores `roots`: over the elements of
// the rows (`rows` false: every row value read from its array, or a leaf), or over the rows
// themselves, computing the row operations of `level` (-1: none, each read from its array).
// Null where an expression it needs cannot be had there (an element value in a rows kernel).
struct Derived {
  LoopKernel k;
  std::vector<Arg> args;
};
std::unique_ptr<Derived> derive(const Cut& c, const std::vector<std::pair<int32_t, Arg>>& roots,
                                bool rows, int32_t level) {
  const LoopKernel& k = c.k;
  const auto n = static_cast<int32_t>(k.exprs.size());
  const int32_t nout = k.num_outputs();
  enum class Form : uint8_t { Copy, Input, RowSize };
  std::vector<Form> form(static_cast<size_t>(n), Form::Copy);
  std::vector<Arg> from(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const Expr& e = k.exprs[static_cast<size_t>(i)];
    const auto u = static_cast<size_t>(i);
    if (e.op == ExprOp::RowSize) {
      form[u] = Form::RowSize;
    } else if (e.op == ExprOp::Load) {
      form[u] = Form::Input;
      from[u] = {Source::Operand, nout + e.index, e.type};
    } else if (c.row[u] && !row_leaf(e) && (!rows || c.level[u] != level || expr_is_reduce(e.op))) {
      form[u] = Form::Input;
      from[u] = {Source::RowValues, c.slot[u], e.type};
    }
  }
  std::vector<uint8_t> need(static_cast<size_t>(n), 0);
  for (const auto& [e, to] : roots) need[static_cast<size_t>(e)] = 1;
  for (int32_t i = n; i-- > 0;) {
    const auto u = static_cast<size_t>(i);
    if (!need[u] || form[u] != Form::Copy) continue;
    if (rows && !c.row[u]) return nullptr;
    const Expr& e = k.exprs[u];
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) need[static_cast<size_t>(o)] = 1;
  }
  auto d = std::make_unique<Derived>();
  d->k.params = k.params;
  for (int32_t i = 0; i < n; ++i)
    if (k.exprs[static_cast<size_t>(i)].op == ExprOp::RowSize)
      d->k.params.push_back(k.exprs[static_cast<size_t>(i)].type);
  for (const auto& [e, to] : roots) d->args.push_back(to);
  std::vector<Arg> inputs;
  std::vector<int32_t> map(static_cast<size_t>(n), -1);
  for (int32_t i = 0; i < n; ++i) {
    const auto u = static_cast<size_t>(i);
    if (!need[u]) continue;
    Expr e = k.exprs[u];
    switch (form[u]) {
      case Form::Copy:
        for (int32_t* o : {&e.a, &e.b, &e.c})
          if (*o >= 0) *o = map[static_cast<size_t>(*o)];
        break;
      case Form::RowSize:
        e = Expr{};
        e.op = ExprOp::Param;
        e.index = c.row_size[u];
        e.type = k.exprs[u].type;
        break;
      case Form::Input: {
        const Arg a = from[u];
        auto at = std::find(inputs.begin(), inputs.end(), a);
        if (at == inputs.end()) {
          inputs.push_back(a);
          d->k.inputs.push_back(a.type);
          at = inputs.end() - 1;
        }
        e = Expr{};
        e.op = ExprOp::Load;
        e.index = static_cast<int32_t>(at - inputs.begin());
        e.type = a.type;
        break;
      }
    }
    map[u] = static_cast<int32_t>(d->k.exprs.size());
    d->k.exprs.push_back(e);
  }
  for (const auto& [e, to] : roots) d->k.stores.push_back(map[static_cast<size_t>(e)]);
  d->args.insert(d->args.end(), inputs.begin(), inputs.end());
  return d;
}

}  // namespace

bool BaselineRowKernel::takes_rows(int64_t n) { return n <= kRowProgramChunk; }

std::unique_ptr<BaselineRowKernel> BaselineRowKernel::make(const LoopKernel& k, JitIsa isa,
                                                           int64_t elements) {
  const int64_t t0 = profiler::now_ns();
  if (!k.has_reduce() || k.uses_index()) return nullptr;
  const auto n = static_cast<int32_t>(k.exprs.size());
  Cut c{k, k.row_values(), std::vector<int32_t>(static_cast<size_t>(n), 0),
        std::vector<int32_t>(static_cast<size_t>(n), -1),
        std::vector<int32_t>(static_cast<size_t>(n), -1)};
  auto b = std::unique_ptr<BaselineRowKernel>(new BaselineRowKernel());
  b->num_outputs_ = k.num_outputs();
  b->num_params_ = k.num_params();
  for (int32_t j = 0; j < k.num_operands(); ++j) b->operand_types_.push_back(k.operand_dtype(j));
  std::vector<int32_t> reduces;
  for (int32_t i = 0; i < n; ++i) {
    const auto u = static_cast<size_t>(i);
    const Expr& e = k.exprs[u];
    if (expr_is_reduce(e.op)) {
      if (expr_is_arg_reduce(e.op)) return nullptr;  // column kernels only
      const Expr& operand = k.exprs[static_cast<size_t>(e.a)];
      if (c.row[static_cast<size_t>(e.a)] || !is_floating(operand.type)) return nullptr;
      reduces.push_back(i);
      c.level[u] = static_cast<int32_t>(reduces.size());
      c.slot[u] = b->slots_++;
      continue;
    }
    if (e.op == ExprOp::RowSize) {
      c.row_size[u] = b->num_params_ + static_cast<int32_t>(b->row_sizes_.size());
      b->row_sizes_.push_back({e.type, e.ivalue});
    }
    if (!c.row[u] || row_leaf(e)) continue;
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) c.level[u] = std::max(c.level[u], c.level[static_cast<size_t>(o)]);
    c.slot[u] = b->slots_++;
  }
  // The row operations each rows kernel stores: those read outside their level's kernel (by an
  // element value, by a row value of a later level) and the row outputs (stored last).
  std::vector<uint8_t> wanted(static_cast<size_t>(n), 0);
  for (int32_t i = 0; i < n; ++i) {
    const Expr& e = k.exprs[static_cast<size_t>(i)];
    for (int32_t o : {e.a, e.b, e.c}) {
      if (o < 0) continue;
      const auto uo = static_cast<size_t>(o);
      if (!c.row[static_cast<size_t>(i)] || expr_is_reduce(e.op) ||
          c.level[static_cast<size_t>(i)] != c.level[uo])
        wanted[uo] = 1;
    }
  }
  for (int32_t e : k.stores)
    if (c.row[static_cast<size_t>(e)]) wanted[static_cast<size_t>(e)] = 1;

  bool missing = false;
  auto part = [&](const std::vector<std::pair<int32_t, Arg>>& roots, bool rows,
                  int32_t level) -> Part {
    Part p;
    p.over_rows = rows;
    if (roots.empty()) return p;  // (after a miss too: every part queues what it misses)
    std::unique_ptr<Derived> d = derive(c, roots, rows, level);
    if (d == nullptr) {
      missing = true;
      return p;
    }
    p.code = BaselineKernel::build(d->k, isa);  // queues the op kernels it misses
    if (p.code == nullptr) missing = true;
    if (!rows) b->work_ += static_cast<int64_t>(d->k.exprs.size() + d->k.stores.size());
    p.args = std::move(d->args);
    return p;
  };
  auto rows_kernel = [&](int32_t level) {
    std::vector<std::pair<int32_t, Arg>> roots;
    for (int32_t i = 0; i < n; ++i) {
      const auto u = static_cast<size_t>(i);
      const Expr& e = k.exprs[u];
      if (c.row[u] && !row_leaf(e) && !expr_is_reduce(e.op) && c.level[u] == level && wanted[u])
        roots.push_back({i, {Source::RowValues, c.slot[u], e.type}});
    }
    if (!roots.empty()) b->steps_.push_back({part(roots, true, level)});
  };
  rows_kernel(0);
  for (size_t q = 0; q < reduces.size(); ++q) {
    const Expr& e = k.exprs[static_cast<size_t>(reduces[q])];
    const Expr& operand = k.exprs[static_cast<size_t>(e.a)];
    Step s;
    s.reduce = static_cast<int32_t>(q);
    s.op = e.op;
    s.type = operand.type;
    s.slot = c.slot[static_cast<size_t>(reduces[q])];
    if (operand.op == ExprOp::Load) s.direct = k.num_outputs() + operand.index;
    s.part = part({{e.a, {Source::RowBuffer, 0, operand.type}}}, false, -1);
    b->work_ += 4;  // the fold
    b->steps_.push_back(std::move(s));
    rows_kernel(static_cast<int32_t>(q) + 1);
  }
  std::vector<std::pair<int32_t, Arg>> element_outputs, row_outputs;
  for (int32_t j = 0; j < k.num_outputs(); ++j) {
    const int32_t e = k.stores[static_cast<size_t>(j)];
    (c.row[static_cast<size_t>(e)] ? row_outputs : element_outputs)
        .push_back({e, {Source::Operand, j, k.output_dtype(j)}});
  }
  if (!element_outputs.empty()) b->steps_.push_back({part(element_outputs, false, -1)});
  if (!row_outputs.empty()) b->steps_.push_back({part(row_outputs, true, -1)});
  if (missing || (elements > 0 && !b->pays(elements))) return nullptr;
  note_baseline_made(k, isa, t0, profiler::now_ns());
  return b;
}

void BaselineRowKernel::run_part(const Part& p, std::span<const InnerLayout> layout,
                                 char* const* ptrs, const int64_t* outer, int64_t n, int64_t rows,
                                 const uint64_t* params, char* arrays, char* buffer) const {
  const size_t nops = p.args.size();
  SmallVector<char*, 16> ptr(nops);
  SmallVector<int64_t, 16> in(nops), out(nops);
  for (size_t j = 0; j < nops; ++j) {
    const Arg& a = p.args[j];
    const auto es = static_cast<int64_t>(itemsize(a.type));
    switch (a.source) {
      case Source::Operand: {
        const auto o = static_cast<size_t>(a.index);
        ptr[j] = ptrs[o];
        in[j] = p.over_rows ? outer[o] : layout[o] == InnerLayout::Contiguous ? es : 0;
        out[j] = p.over_rows ? 0 : outer[o];
        break;
      }
      case Source::RowValues:
        ptr[j] = arrays + static_cast<int64_t>(a.index) * kBlockElements * 8;
        in[j] = p.over_rows ? es : 0;
        out[j] = p.over_rows ? 0 : es;
        break;
      case Source::RowBuffer:
        ptr[j] = buffer;
        in[j] = es;
        out[j] = n * es;
        break;
    }
  }
  if (p.over_rows)
    p.code->run(ptr.data(), in.data(), out.data(), rows, 1, params);
  else
    p.code->run(ptr.data(), in.data(), out.data(), n, rows, params);
}

void BaselineRowKernel::run(std::span<const InnerLayout> layout, char* const* ptrs,
                            const int64_t* outer, int64_t n, int64_t rows, const uint64_t* params,
                            const std::vector<std::vector<int64_t>>& programs) const {
  KILN_CHECK(takes_rows(n), "baseline row kernel: rows of {} elements (at most {})", n,
             kRowProgramChunk);
  if (rows <= 0) return;
  // The derived kernels' params: the kernel's, then each RowSize for rows of n.
  SmallVector<uint64_t, 16> words(static_cast<size_t>(num_params_) + row_sizes_.size(), 0);
  std::copy(params, params + num_params_, words.begin());
  for (size_t i = 0; i < row_sizes_.size(); ++i) {
    const int64_t v = n + row_sizes_[i].offset;
    uint64_t& w = words[static_cast<size_t>(num_params_) + i];
    if (row_sizes_[i].type == DType::Float32) {
      const auto f = static_cast<float>(v);
      std::memcpy(&w, &f, 4);
    } else {
      const auto d = static_cast<double>(v);
      std::memcpy(&w, &d, 8);
    }
  }
  const int64_t block = std::max<int64_t>(1, kBlockElements / std::max<int64_t>(n, 1));
  // The arrays (kBlockElements words each, at least a block's rows) and the row buffer.
  const size_t array_words = static_cast<size_t>(slots_) * kBlockElements;
  std::unique_ptr<uint64_t[]> scratch(
      new uint64_t[array_words + static_cast<size_t>(block * n) + 16]);
  const auto base = (reinterpret_cast<uintptr_t>(scratch.get()) + 63) & ~uintptr_t{63};
  char* arrays = reinterpret_cast<char*>(base);
  char* buffer = arrays + array_words * 8;
  const size_t nops = operand_types_.size();
  SmallVector<char*, 16> p(nops);
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t count = std::min(block, rows - r0);
    for (size_t j = 0; j < nops; ++j) p[j] = ptrs[j] + r0 * outer[j];
    for (const Step& s : steps_) {
      const bool direct =
          s.direct >= 0 && layout[static_cast<size_t>(s.direct)] == InnerLayout::Contiguous;
      if (s.part.code != nullptr && !direct)
        run_part(s.part, layout, p.data(), outer, n, count, words.data(), arrays, buffer);
      if (s.reduce < 0) continue;
      const auto es = static_cast<int64_t>(itemsize(s.type));
      char* to = arrays + static_cast<int64_t>(s.slot) * kBlockElements * 8;
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

#include "jit/cpu/baseline_cut.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "runtime/profiler.h"
#include "runtime/small_vector.h"

namespace kiln::jit::baseline_cut {

namespace {

// What the cutting knows of the kernel.
struct Sorted {
  const LoopKernel& k;
  std::vector<uint8_t> row;       // LoopKernel::row_values
  std::vector<int32_t> level;     // a row value: how many Reduces it waits for
  std::vector<int32_t> slot;      // a computed row value's slot (Reduces and row operations)
  std::vector<int32_t> row_size;  // a RowSize: its param in the parts
};

bool row_leaf(const Expr& e) {
  return e.op == ExprOp::Const || e.op == ExprOp::Param || e.op == ExprOp::RowSize ||
         e.op == ExprOp::Load;
}

// A pointwise kernel of the kernel's expressions that stores `roots`: over the elements
// (`values` false: every computed row value read from its slot, leaves as they are), or over the
// row values' index, computing the row operations of `level` (-1: none, each read from its
// slot). Null where an expression it needs cannot be had there (an element value in a values
// part).
struct Derived {
  LoopKernel k;
  std::vector<Arg> args;
};
std::unique_ptr<Derived> derive(const Sorted& c, const std::vector<std::pair<int32_t, Arg>>& roots,
                                bool values, int32_t level) {
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
    } else if (c.row[u] && !row_leaf(e) &&
               (!values || c.level[u] != level || expr_is_reduce(e.op))) {
      form[u] = Form::Input;
      from[u] = {Source::RowValues, c.slot[u], e.type};
    }
  }
  std::vector<uint8_t> need(static_cast<size_t>(n), 0);
  for (const auto& [e, to] : roots) need[static_cast<size_t>(e)] = 1;
  for (int32_t i = n; i-- > 0;) {
    const auto u = static_cast<size_t>(i);
    if (!need[u] || form[u] != Form::Copy) continue;
    if (values && !c.row[u]) return nullptr;
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

std::unique_ptr<Cut> cut(const LoopKernel& k, JitIsa isa) {
  if (!k.has_reduce() || k.uses_index()) return nullptr;
  const auto n = static_cast<int32_t>(k.exprs.size());
  Sorted c{k, k.row_values(), std::vector<int32_t>(static_cast<size_t>(n), 0),
           std::vector<int32_t>(static_cast<size_t>(n), -1),
           std::vector<int32_t>(static_cast<size_t>(n), -1)};
  auto b = std::make_unique<Cut>();
  b->num_params = k.num_params();
  for (int32_t j = 0; j < k.num_operands(); ++j) b->operand_types.push_back(k.operand_dtype(j));
  std::vector<int32_t> reduces;
  for (int32_t i = 0; i < n; ++i) {
    const auto u = static_cast<size_t>(i);
    const Expr& e = k.exprs[u];
    if (expr_is_reduce(e.op)) {
      if (c.row[static_cast<size_t>(e.a)]) return nullptr;  // a Reduce of a row value
      reduces.push_back(i);
      c.level[u] = static_cast<int32_t>(reduces.size());
      c.slot[u] = b->slots++;
      continue;
    }
    if (e.op == ExprOp::RowSize) {
      c.row_size[u] = b->num_params + static_cast<int32_t>(b->row_sizes.size());
      b->row_sizes.push_back({e.type, e.ivalue});
    }
    if (!c.row[u] || row_leaf(e)) continue;
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) c.level[u] = std::max(c.level[u], c.level[static_cast<size_t>(o)]);
    c.slot[u] = b->slots++;
  }
  // The row operations each values part stores: those read outside their level's part (by an
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
  auto part = [&](const std::vector<std::pair<int32_t, Arg>>& roots, bool values,
                  int32_t level) -> Part {
    Part p;
    p.over_values = values;
    if (roots.empty()) return p;  // (after a miss too: every part queues what it misses)
    std::unique_ptr<Derived> d = derive(c, roots, values, level);
    if (d == nullptr) {
      missing = true;
      return p;
    }
    p.code = BaselineKernel::make_part(d->k, isa);  // queues the op kernels it misses
    if (p.code == nullptr) missing = true;
    if (!values) b->work += static_cast<int64_t>(d->k.exprs.size() + d->k.stores.size());
    p.args = std::move(d->args);
    return p;
  };
  auto values_part = [&](int32_t level) {
    std::vector<std::pair<int32_t, Arg>> roots;
    for (int32_t i = 0; i < n; ++i) {
      const auto u = static_cast<size_t>(i);
      const Expr& e = k.exprs[u];
      if (c.row[u] && !row_leaf(e) && !expr_is_reduce(e.op) && c.level[u] == level && wanted[u])
        roots.push_back({i, {Source::RowValues, c.slot[u], e.type}});
    }
    if (!roots.empty()) b->steps.push_back({part(roots, true, level)});
  };
  values_part(0);
  for (size_t q = 0; q < reduces.size(); ++q) {
    const Expr& e = k.exprs[static_cast<size_t>(reduces[q])];
    const Expr& operand = k.exprs[static_cast<size_t>(e.a)];
    Step s;
    s.reduce = static_cast<int32_t>(q);
    s.op = e.op;
    s.type = operand.type;
    s.result = e.type;
    s.slot = c.slot[static_cast<size_t>(reduces[q])];
    if (operand.op == ExprOp::Load) s.direct = k.num_outputs() + operand.index;
    s.part = part({{e.a, {Source::Buffer, 0, operand.type}}}, false, -1);
    b->work += 4;  // the fold
    b->steps.push_back(std::move(s));
    values_part(static_cast<int32_t>(q) + 1);
  }
  std::vector<std::pair<int32_t, Arg>> element_outputs, row_outputs;
  for (int32_t j = 0; j < k.num_outputs(); ++j) {
    const int32_t e = k.stores[static_cast<size_t>(j)];
    (c.row[static_cast<size_t>(e)] ? row_outputs : element_outputs)
        .push_back({e, {Source::Operand, j, k.output_dtype(j)}});
  }
  if (!element_outputs.empty()) b->steps.push_back({part(element_outputs, false, -1)});
  if (!row_outputs.empty()) b->steps.push_back({part(row_outputs, true, -1)});
  if (missing) return nullptr;
  return b;
}

std::unique_ptr<Cut> cut_made(const LoopKernel& k, JitIsa isa, int64_t t0) {
  std::unique_ptr<Cut> c = cut(k, isa);
  if (c == nullptr) return nullptr;
  note_baseline_made(k, isa, t0, profiler::now_ns());
  return c;
}

std::vector<uint64_t> part_params(const Cut& c, const uint64_t* params, int64_t n) {
  std::vector<uint64_t> words(static_cast<size_t>(c.num_params) + c.row_sizes.size(), 0);
  std::copy(params, params + c.num_params, words.begin());
  for (size_t i = 0; i < c.row_sizes.size(); ++i) {
    const int64_t v = n + c.row_sizes[i].offset;
    uint64_t& w = words[static_cast<size_t>(c.num_params) + i];
    if (c.row_sizes[i].type == DType::Float32) {
      const auto f = static_cast<float>(v);
      std::memcpy(&w, &f, 4);
    } else {
      const auto d = static_cast<double>(v);
      std::memcpy(&w, &d, 8);
    }
  }
  return words;
}

void run_part(const Part& p, const Place& at, const uint64_t* params) {
  if (p.code == nullptr) return;
  const size_t nops = p.args.size();
  SmallVector<char*, 16> ptr(nops);
  SmallVector<int64_t, 16> in(nops), out(nops);
  for (size_t j = 0; j < nops; ++j) {
    const Arg& a = p.args[j];
    const auto es = static_cast<int64_t>(itemsize(a.type));
    switch (a.source) {
      case Source::Operand: {
        const auto o = static_cast<size_t>(a.index);
        ptr[j] = at.ptrs[o];
        in[j] = p.over_values ? at.value_step[o] : at.elem_in[o];
        out[j] = p.over_values ? 0 : at.elem_out[o];
        break;
      }
      case Source::RowValues:
        ptr[j] = at.slots + static_cast<int64_t>(a.index) * at.slot_bytes;
        in[j] = p.over_values || at.slot_along_inner ? es : 0;
        out[j] = p.over_values || at.slot_along_inner ? 0 : es;
        break;
      case Source::Buffer:
        ptr[j] = at.buffer;
        in[j] = es;
        out[j] = at.buffer_outer;
        break;
    }
  }
  if (p.over_values)
    p.code->run(ptr.data(), in.data(), out.data(), at.values, 1, params);
  else
    p.code->run(ptr.data(), in.data(), out.data(), at.elem_inner, at.elem_outer, params);
}

}  // namespace kiln::jit::baseline_cut

#include "jit/loop/loop_kernel.h"

#include <fmt/format.h>

#include <bit>

#include "runtime/error.h"

namespace kiln::jit {

const char* expr_op_name(ExprOp op) {
  switch (op) {
#define KILN_EXPR_NAME(name) \
  case ExprOp::name:         \
    return #name;
    KILN_FOR_EACH_EXPR_OP(KILN_EXPR_NAME)
#undef KILN_EXPR_NAME
    default:
      return "?";
  }
}

int expr_arity(ExprOp op) {
  switch (op) {
    case ExprOp::Load:
    case ExprOp::Const:
    case ExprOp::Param:
      return 0;
    case ExprOp::Add:
    case ExprOp::Sub:
    case ExprOp::Mul:
    case ExprOp::Div:
    case ExprOp::Maximum:
    case ExprOp::Minimum:
    case ExprOp::Lt:
    case ExprOp::Le:
    case ExprOp::Gt:
    case ExprOp::Ge:
    case ExprOp::Eq:
    case ExprOp::Ne:
      return 2;
    case ExprOp::Select:
      return 3;
    default:
      return 1;
  }
}

bool expr_is_compare(ExprOp op) { return op >= ExprOp::Lt && op <= ExprOp::Ne; }

bool expr_is_transcendental(ExprOp op) { return op >= ExprOp::Exp && op <= ExprOp::GeluTanh; }

namespace {

int32_t push(LoopKernel& k, Expr e) {
  k.exprs.push_back(e);
  return static_cast<int32_t>(k.exprs.size()) - 1;
}

}  // namespace

int32_t LoopKernel::load(int32_t input) { return push(*this, {ExprOp::Load, -1, -1, -1, input}); }
int32_t LoopKernel::constant(double v) {
  Expr e{ExprOp::Const};
  e.value = v;
  return push(*this, e);
}
int32_t LoopKernel::param(int32_t k) { return push(*this, {ExprOp::Param, -1, -1, -1, k}); }
int32_t LoopKernel::unary(ExprOp op, int32_t a) { return push(*this, {op, a}); }
int32_t LoopKernel::binary(ExprOp op, int32_t a, int32_t b) { return push(*this, {op, a, b}); }
int32_t LoopKernel::select(int32_t mask, int32_t a, int32_t b) {
  return push(*this, {ExprOp::Select, mask, a, b});
}

void LoopKernel::verify() const {
  KILN_CHECK(dtype == DType::Float32 || dtype == DType::Float64,
             "loop kernel: dtype {} (expected Float32 or Float64)", dtype);
  KILN_CHECK(!stores.empty(), "loop kernel: no stores");
  auto is_mask = [&](int32_t id) { return expr_is_compare(exprs[id].op); };
  for (size_t i = 0; i < exprs.size(); ++i) {
    const Expr& e = exprs[i];
    const int n = expr_arity(e.op);
    const int32_t ops[3] = {e.a, e.b, e.c};
    for (int k = 0; k < 3; ++k) {
      if (k < n) {
        KILN_CHECK(ops[k] >= 0 && ops[k] < static_cast<int32_t>(i),
                   "loop kernel: %{} ({}) reads %{}, not defined before it", i, expr_op_name(e.op),
                   ops[k]);
        const bool want_mask = e.op == ExprOp::Select && k == 0;
        KILN_CHECK(is_mask(ops[k]) == want_mask, "loop kernel: %{} ({}) operand {} is {}", i,
                   expr_op_name(e.op), k, want_mask ? "not a mask" : "a mask");
      } else {
        KILN_CHECK(ops[k] == -1, "loop kernel: %{} ({}) has an extra operand", i,
                   expr_op_name(e.op));
      }
    }
    if (e.op == ExprOp::Load)
      KILN_CHECK(e.index >= 0 && e.index < num_inputs, "loop kernel: %{} loads input {} of {}", i,
                 e.index, num_inputs);
    if (e.op == ExprOp::Param)
      KILN_CHECK(e.index >= 0 && e.index < num_params, "loop kernel: %{} reads param {} of {}", i,
                 e.index, num_params);
  }
  for (size_t k = 0; k < stores.size(); ++k) {
    KILN_CHECK(
        stores[k] >= 0 && stores[k] < static_cast<int32_t>(exprs.size()) && !is_mask(stores[k]),
        "loop kernel: store {} of %{} (not a float expression)", k, stores[k]);
  }
}

std::string to_text(const LoopKernel& k) {
  std::string s = fmt::format("kernel {} inputs={} params={}\n", dtype_name(k.dtype), k.num_inputs,
                              k.num_params);
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr& e = k.exprs[i];
    s += fmt::format("  %{} = {}", i, expr_op_name(e.op));
    if (e.op == ExprOp::Load) s += fmt::format(" in{}", e.index);
    if (e.op == ExprOp::Param) s += fmt::format(" p{}", e.index);
    if (e.op == ExprOp::Const) s += fmt::format(" {}", e.value);
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) s += fmt::format(" %{}", o);
    s += '\n';
  }
  for (size_t j = 0; j < k.stores.size(); ++j) s += fmt::format("  out{} = %{}\n", j, k.stores[j]);
  return s;
}

std::vector<uint64_t> encode(const LoopKernel& k) {
  std::vector<uint64_t> w;
  w.reserve(4 + k.exprs.size() * 5 + k.stores.size());
  w.push_back(static_cast<uint64_t>(k.dtype));
  w.push_back(static_cast<uint64_t>(k.num_inputs));
  w.push_back(static_cast<uint64_t>(k.num_params));
  w.push_back(k.exprs.size());
  for (const Expr& e : k.exprs) {
    w.push_back(static_cast<uint64_t>(e.op));
    w.push_back(static_cast<uint64_t>(static_cast<uint32_t>(e.a)) << 32 |
                static_cast<uint32_t>(e.b));
    w.push_back(static_cast<uint64_t>(static_cast<uint32_t>(e.c)) << 32 |
                static_cast<uint32_t>(e.index));
    w.push_back(std::bit_cast<uint64_t>(e.value));
  }
  for (int32_t s : k.stores) w.push_back(static_cast<uint64_t>(static_cast<uint32_t>(s)));
  return w;
}

uint64_t hash_words(const std::vector<uint64_t>& words) {
  uint64_t h = 0xcbf29ce484222325ull ^ words.size();
  for (uint64_t w : words) {
    h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace kiln::jit

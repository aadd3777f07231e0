#include "jit/loop/loop_kernel.h"

#include <fmt/format.h>

#include <bit>
#include <climits>
#include <cmath>

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
    case ExprOp::RandUniform:
    case ExprOp::RowSize:
      return 0;
    case ExprOp::Add:
    case ExprOp::Sub:
    case ExprOp::Mul:
    case ExprOp::Div:
    case ExprOp::Maximum:
    case ExprOp::Minimum:
    case ExprOp::Pow:
    case ExprOp::Lt:
    case ExprOp::Le:
    case ExprOp::Gt:
    case ExprOp::Ge:
    case ExprOp::Eq:
    case ExprOp::Ne:
    case ExprOp::And:
    case ExprOp::Or:
      return 2;
    case ExprOp::Select:
      return 3;
    default:
      return 1;
  }
}

bool expr_is_compare(ExprOp op) { return op >= ExprOp::Lt && op <= ExprOp::Ne; }

bool expr_is_transcendental(ExprOp op) { return op >= ExprOp::Exp && op <= ExprOp::GeluTanh; }

bool expr_is_reduce(ExprOp op) {
  return (op >= ExprOp::ReduceSum && op <= ExprOp::ReduceFirst) || expr_is_arg_reduce(op);
}

bool expr_is_arg_reduce(ExprOp op) {
  return op == ExprOp::ReduceArgMax || op == ExprOp::ReduceArgMin;
}

bool expr_accepts(ExprOp op, DType t) {
  switch (op) {
    case ExprOp::Load:
    case ExprOp::Const:
    case ExprOp::Cast:
      return true;
    case ExprOp::And:
    case ExprOp::Or:
    case ExprOp::Not:
      return t == DType::Bool;
    case ExprOp::Param:
    case ExprOp::Neg:
    case ExprOp::Abs:
    case ExprOp::Square:
    case ExprOp::Relu:
    case ExprOp::Sign:
    case ExprOp::Add:
    case ExprOp::Sub:
    case ExprOp::Mul:
    case ExprOp::Maximum:
    case ExprOp::Minimum:
    case ExprOp::Select:
    case ExprOp::Pow:  // floats: vecmath::pow; integers: int_pow
    // Integer reductions wrap (exact in any order); the CPU target renders float ones only.
    case ExprOp::ReduceSum:
    case ExprOp::ReduceProd:
    case ExprOp::ReduceMax:
    case ExprOp::ReduceMin:
      return t != DType::Bool;
    default:
      if (expr_is_compare(op)) return t != DType::Bool;  // the operands' type
      return is_floating(t);  // sqrt, rsqrt, reciprocal, div, transcendentals, rounding
  }
}

namespace {

int32_t push(LoopKernel& k, Expr e) {
  k.exprs.push_back(e);
  return static_cast<int32_t>(k.exprs.size()) - 1;
}

DType type_of(const LoopKernel& k, int32_t id) {
  return id >= 0 && id < static_cast<int32_t>(k.exprs.size()) ? k.exprs[id].type : DType::Float32;
}

bool representable(double v, DType t) {
  if (t == DType::Float32) return v != v || static_cast<double>(static_cast<float>(v)) == v;
  return true;
}

bool int_in_range(int64_t v, DType t) {
  if (t == DType::Bool) return v == 0 || v == 1;
  if (t == DType::Int32) return v >= INT32_MIN && v <= INT32_MAX;
  return t == DType::Int64;
}

}  // namespace

LoopKernel LoopKernel::uniform(DType t, int num_inputs, int num_params) {
  LoopKernel k;
  k.inputs.assign(static_cast<size_t>(num_inputs), t);
  k.params.assign(static_cast<size_t>(num_params), t);
  return k;
}

int32_t LoopKernel::load(int32_t input) {
  Expr e{ExprOp::Load, -1, -1, -1, input};
  e.type = input >= 0 && input < num_inputs() ? inputs[input] : DType::Float32;
  return push(*this, e);
}
int32_t LoopKernel::load_row(int32_t input) {
  Expr e{ExprOp::Load, -1, -1, -1, input};
  e.type = input >= 0 && input < num_inputs() ? inputs[input] : DType::Float32;
  e.ivalue = 1;
  return push(*this, e);
}
int32_t LoopKernel::constant(double v, DType t) {
  Expr e{ExprOp::Const};
  e.type = t;
  e.value = t == DType::Float32 ? static_cast<double>(static_cast<float>(v)) : v;
  return push(*this, e);
}
int32_t LoopKernel::constant_int(int64_t v, DType t) {
  Expr e{ExprOp::Const};
  e.type = t;
  e.ivalue = t == DType::Bool ? (v != 0) : t == DType::Int32 ? static_cast<int32_t>(v) : v;
  return push(*this, e);
}
int32_t LoopKernel::param(int32_t k) {
  Expr e{ExprOp::Param, -1, -1, -1, k};
  e.type = k >= 0 && k < num_params() ? params[k] : DType::Float32;
  return push(*this, e);
}
int32_t LoopKernel::rand_uniform(int32_t first_param, DType t) {
  Expr e{ExprOp::RandUniform, -1, -1, -1, first_param};
  e.type = t;
  return push(*this, e);
}
bool LoopKernel::uses_index() const {
  for (const Expr& e : exprs)
    if (e.op == ExprOp::RandUniform) return true;
  return false;
}
int32_t LoopKernel::unary(ExprOp op, int32_t a) {
  Expr e{op, a};
  e.type = op == ExprOp::Not ? DType::Bool : type_of(*this, a);
  return push(*this, e);
}
int32_t LoopKernel::binary(ExprOp op, int32_t a, int32_t b) {
  Expr e{op, a, b};
  e.type = expr_is_compare(op) || op == ExprOp::And || op == ExprOp::Or ? DType::Bool
                                                                        : type_of(*this, a);
  return push(*this, e);
}
int32_t LoopKernel::select(int32_t mask, int32_t a, int32_t b) {
  Expr e{ExprOp::Select, mask, a, b};
  e.type = type_of(*this, a);
  return push(*this, e);
}
int32_t LoopKernel::cast(int32_t a, DType t) {
  Expr e{ExprOp::Cast, a};
  e.type = t;
  return push(*this, e);
}
int32_t LoopKernel::as_type(int32_t a, DType t) { return type_of(*this, a) == t ? a : cast(a, t); }
int32_t LoopKernel::reduce(ExprOp op, int32_t a) {
  Expr e{op, a};
  e.type = type_of(*this, a);
  return push(*this, e);
}
int32_t LoopKernel::reduce_first(int32_t flag) {
  Expr e{ExprOp::ReduceFirst, flag};
  e.type = DType::Int64;
  return push(*this, e);
}
int32_t LoopKernel::reduce_arg(ExprOp op, int32_t value) {
  Expr e{op, value};
  e.type = DType::Int64;
  return push(*this, e);
}
int32_t LoopKernel::row_size(DType t, int64_t offset) {
  Expr e{ExprOp::RowSize};
  e.type = t;
  e.ivalue = offset;
  return push(*this, e);
}

bool LoopKernel::has_reduce() const {
  for (const Expr& e : exprs)
    if (expr_is_reduce(e.op)) return true;
  return false;
}

std::vector<uint8_t> LoopKernel::row_values() const {
  std::vector<uint8_t> row(exprs.size(), 0);
  for (size_t i = 0; i < exprs.size(); ++i) {
    const Expr& e = exprs[i];
    // Constants and params are row values when they are floats (row values are; a non-float
    // leaf, such as the Int32 1 that integer pow(x, 0) lowers to, is computed with the elements).
    if (expr_is_reduce(e.op) || e.op == ExprOp::RowSize ||
        ((e.op == ExprOp::Const || e.op == ExprOp::Param) && is_floating(e.type)) ||
        (e.op == ExprOp::Load && e.ivalue != 0)) {
      row[i] = 1;
      continue;
    }
    if (expr_arity(e.op) == 0) continue;  // loads, RandUniform, non-float constants and params
    bool r = true;
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) r = r && row[o];
    row[i] = r;
  }
  return row;
}

std::vector<uint8_t> LoopKernel::costly_element_values() const {
  const std::vector<uint8_t> row = row_values();
  std::vector<uint8_t> costly(exprs.size(), 0);
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (row[i]) continue;
    const Expr& e = exprs[i];
    costly[i] = expr_is_transcendental(e.op);
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0 && !row[o]) costly[i] = costly[i] || costly[o];
  }
  return costly;
}

void LoopKernel::verify() const {
  KILN_CHECK(!stores.empty(), "loop kernel: no stores");
  for (size_t p = 0; p < params.size(); ++p)
    KILN_CHECK(params[p] != DType::Bool, "loop kernel: param {} is Bool (params are numbers)", p);
  for (size_t i = 0; i < exprs.size(); ++i) {
    const Expr& e = exprs[i];
    KILN_CHECK(static_cast<int>(e.type) < kNumDTypes, "loop kernel: %{} ({}) has no value type", i,
               expr_op_name(e.op));
    const int n = expr_arity(e.op);
    const int32_t ops[3] = {e.a, e.b, e.c};
    for (int k = 0; k < 3; ++k) {
      if (k < n) {
        KILN_CHECK(ops[k] >= 0 && ops[k] < static_cast<int32_t>(i),
                   "loop kernel: %{} ({}) reads %{}, not defined before it", i, expr_op_name(e.op),
                   ops[k]);
      } else {
        KILN_CHECK(ops[k] == -1, "loop kernel: %{} ({}) has an extra operand", i,
                   expr_op_name(e.op));
      }
    }
    // The type each operand must have, and the result's.
    auto want = [&](int k, DType t) {
      const DType got = exprs[ops[k]].type;
      KILN_CHECK(got == t, "loop kernel: %{} ({}) operand {} is {} %{}, expected {}{}", i,
                 expr_op_name(e.op), k, got == DType::Bool ? "a mask" : dtype_name(got), ops[k],
                 t == DType::Bool ? "a mask" : dtype_name(t),
                 t != DType::Bool && got != DType::Bool ? " (insert a Cast)" : "");
    };
    auto result = [&](DType t) {
      KILN_CHECK(e.type == t, "loop kernel: %{} ({}) has type {}, expected {}", i,
                 expr_op_name(e.op), e.type, t);
    };
    switch (e.op) {
      case ExprOp::Load:
        KILN_CHECK(e.index >= 0 && e.index < num_inputs(), "loop kernel: %{} loads input {} of {}",
                   i, e.index, num_inputs());
        result(inputs[e.index]);
        KILN_CHECK(e.ivalue == 0 || (e.ivalue == 1 && is_floating(e.type) && has_reduce()),
                   "loop kernel: %{} is a row load of {} (float inputs of row kernels only)", i,
                   e.type);
        break;
      case ExprOp::Param:
        KILN_CHECK(e.index >= 0 && e.index < num_params(), "loop kernel: %{} reads param {} of {}",
                   i, e.index, num_params());
        result(params[e.index]);
        break;
      case ExprOp::RandUniform:
        KILN_CHECK(is_floating(e.type), "loop kernel: %{} (RandUniform) of type {}", i, e.type);
        KILN_CHECK(e.index >= 0 && e.index + 4 <= num_params(),
                   "loop kernel: %{} (RandUniform) reads params {}..{} of {}", i, e.index,
                   e.index + 3, num_params());
        for (int w = 0; w < 4; ++w)
          KILN_CHECK(params[e.index + w] == DType::Int32,
                     "loop kernel: %{} (RandUniform) param {} is {}, expected Int32", i,
                     e.index + w, params[e.index + w]);
        break;
      case ExprOp::Const:
        if (is_floating(e.type))
          KILN_CHECK(e.ivalue == 0 && representable(e.value, e.type),
                     "loop kernel: %{} (Const) {} is not a {} value", i, e.value, e.type);
        else
          KILN_CHECK(std::bit_cast<uint64_t>(e.value) == 0 && int_in_range(e.ivalue, e.type),
                     "loop kernel: %{} (Const) {} is not a {} value", i, e.ivalue, e.type);
        break;
      case ExprOp::Cast:
        KILN_CHECK(exprs[e.a].type != e.type, "loop kernel: %{} (Cast) from {} to itself", i,
                   e.type);
        break;
      case ExprOp::RowSize:
        KILN_CHECK(is_floating(e.type), "loop kernel: %{} (RowSize) of type {} (expected a float)",
                   i, e.type);
        break;
      case ExprOp::ReduceFirst:
      case ExprOp::ReduceArgMax:
      case ExprOp::ReduceArgMin:
        KILN_CHECK(is_floating(exprs[e.a].type), "loop kernel: %{} ({}) of a {} (expected a float)",
                   i, expr_op_name(e.op), exprs[e.a].type);
        result(DType::Int64);
        break;
      case ExprOp::Select:
        want(0, DType::Bool);
        KILN_CHECK(e.type != DType::Bool, "loop kernel: %{} (Select) of masks", i);
        want(1, e.type);
        want(2, e.type);
        break;
      default:
        if (expr_is_compare(e.op)) {
          const DType t = exprs[e.a].type;
          KILN_CHECK(t != DType::Bool, "loop kernel: %{} ({}) operand 0 is a mask", i,
                     expr_op_name(e.op));
          want(1, t);
          result(DType::Bool);
          break;
        }
        KILN_CHECK(expr_accepts(e.op, e.type), "loop kernel: %{} ({}) does not compute in {}", i,
                   expr_op_name(e.op), e.type == DType::Bool ? "masks" : dtype_name(e.type));
        for (int k = 0; k < n; ++k) want(k, e.type);
    }
    if (e.op != ExprOp::Const)
      KILN_CHECK(e.value == 0 && !std::signbit(e.value) &&
                     (e.ivalue == 0 || e.op == ExprOp::RowSize || e.op == ExprOp::Load),
                 "loop kernel: %{} ({}) carries a constant", i, expr_op_name(e.op));
    if (e.op != ExprOp::Load && e.op != ExprOp::Param && e.op != ExprOp::RandUniform)
      KILN_CHECK(e.index == -1, "loop kernel: %{} ({}) has an index", i, expr_op_name(e.op));
  }
  for (size_t k = 0; k < stores.size(); ++k)
    KILN_CHECK(stores[k] >= 0 && stores[k] < static_cast<int32_t>(exprs.size()),
               "loop kernel: store {} of %{} (not an expression)", k, stores[k]);
}

std::string to_text(const LoopKernel& k) {
  auto list = [](const std::vector<DType>& ts) {
    std::string s = "[";
    for (size_t i = 0; i < ts.size(); ++i) s += fmt::format("{}{}", i ? " " : "", ts[i]);
    return s + "]";
  };
  std::string s = fmt::format("kernel inputs={} params={}\n", list(k.inputs), list(k.params));
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr& e = k.exprs[i];
    s += fmt::format("  %{} = {}", i, expr_op_name(e.op));
    if (e.op == ExprOp::Load) s += fmt::format(" in{}{}", e.index, e.ivalue ? " row" : "");
    if (e.op == ExprOp::Param || e.op == ExprOp::RandUniform) s += fmt::format(" p{}", e.index);
    if (e.op == ExprOp::RowSize && e.ivalue != 0) s += fmt::format(" {:+}", e.ivalue);
    if (e.op == ExprOp::Const) {
      if (is_floating(e.type))
        s += fmt::format(" {}", e.value);
      else
        s += fmt::format(" {}", e.ivalue);
    }
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) s += fmt::format(" %{}", o);
    s += fmt::format(" : {}\n", e.type);
  }
  for (size_t j = 0; j < k.stores.size(); ++j) s += fmt::format("  out{} = %{}\n", j, k.stores[j]);
  return s;
}

std::vector<uint64_t> encode(const LoopKernel& k) {
  std::vector<uint64_t> w;
  w.reserve(4 + k.inputs.size() + k.params.size() + k.exprs.size() * 5 + k.stores.size());
  w.push_back(k.inputs.size());
  for (DType t : k.inputs) w.push_back(static_cast<uint64_t>(t));
  w.push_back(k.params.size());
  for (DType t : k.params) w.push_back(static_cast<uint64_t>(t));
  w.push_back(k.exprs.size());
  for (const Expr& e : k.exprs) {
    w.push_back(static_cast<uint64_t>(e.op) | static_cast<uint64_t>(e.type) << 8);
    w.push_back(static_cast<uint64_t>(static_cast<uint32_t>(e.a)) << 32 |
                static_cast<uint32_t>(e.b));
    w.push_back(static_cast<uint64_t>(static_cast<uint32_t>(e.c)) << 32 |
                static_cast<uint32_t>(e.index));
    w.push_back(std::bit_cast<uint64_t>(e.value));
    w.push_back(static_cast<uint64_t>(e.ivalue));
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

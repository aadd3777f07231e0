// The JIT's loop IR (jit/loop/loop_kernel.h) and kernel cache (jit/loop/kernel_cache.h): the
// builders, every verify() error, the golden text form, the canonical encoding (equal kernels
// encode equal, any differing field encodes differently) and the cache's hits, misses and
// word-for-word comparison of keys whose hashes collide.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "jit/loop/kernel_cache.h"
#include "jit/loop/loop_kernel.h"
#include "runtime/error.h"

namespace kiln::jit {
namespace {

// (in0 * p0 + 0.5) where in1 < in0, else in1; and relu(in0): a kernel with every kind of leaf,
// a compare, a select and two stores.
LoopKernel small_kernel() {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 2, 1);
  const int32_t x = k.load(0), y = k.load(1), p = k.param(0), c = k.constant(0.5, DType::Float32);
  const int32_t m = k.binary(ExprOp::Mul, x, p);
  const int32_t a = k.binary(ExprOp::Add, m, c);
  const int32_t lt = k.binary(ExprOp::Lt, y, x);
  const int32_t s = k.select(lt, a, y);
  const int32_t r = k.unary(ExprOp::Relu, x);
  k.stores = {s, r};
  return k;
}

// Fails unless verify() throws a kiln::Error whose message contains `part`.
void expect_verify_error(const LoopKernel& k, const std::string& part) {
  try {
    k.verify();
    ADD_FAILURE() << "verify() accepted the kernel; expected an error containing '" << part << "'\n"
                  << to_text(k);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(JitLoopIr, BuildersNumberExpressionsInOrder) {
  LoopKernel k = small_kernel();
  ASSERT_EQ(k.exprs.size(), 9u);
  EXPECT_EQ(k.exprs[0], (Expr{ExprOp::Load, -1, -1, -1, 0}));
  EXPECT_EQ(k.exprs[1], (Expr{ExprOp::Load, -1, -1, -1, 1}));
  EXPECT_EQ(k.exprs[2], (Expr{ExprOp::Param, -1, -1, -1, 0}));
  EXPECT_EQ(k.exprs[3].op, ExprOp::Const);
  EXPECT_EQ(k.exprs[3].value, 0.5);
  EXPECT_EQ(k.exprs[4], (Expr{ExprOp::Mul, 0, 2}));
  EXPECT_EQ(k.exprs[6], (Expr{ExprOp::Lt, 1, 0, -1, -1, 0, DType::Bool}));
  EXPECT_EQ(k.exprs[7], (Expr{ExprOp::Select, 6, 5, 1}));
  EXPECT_EQ(k.exprs[8], (Expr{ExprOp::Relu, 0}));
  EXPECT_EQ(k.num_outputs(), 2);
  EXPECT_EQ(k.num_operands(), 4);
  EXPECT_NO_THROW(k.verify());
}

TEST(JitLoopIr, OpTablesAreConsistent) {
  for (int i = 0; i < static_cast<int>(ExprOp::kCount); ++i) {
    const auto op = static_cast<ExprOp>(i);
    EXPECT_STRNE(expr_op_name(op), "?") << i;
    const int arity = expr_arity(op);
    if (op == ExprOp::Load || op == ExprOp::Const || op == ExprOp::Param) {
      EXPECT_EQ(arity, 0) << expr_op_name(op);
    } else if (op == ExprOp::Select) {
      EXPECT_EQ(arity, 3);
    } else if (expr_is_compare(op)) {
      EXPECT_EQ(arity, 2) << expr_op_name(op);
    }
    EXPECT_FALSE(expr_is_compare(op) && expr_is_transcendental(op)) << expr_op_name(op);
  }
  EXPECT_TRUE(expr_is_compare(ExprOp::Lt));
  EXPECT_TRUE(expr_is_compare(ExprOp::Ne));
  EXPECT_FALSE(expr_is_compare(ExprOp::Select));
  EXPECT_FALSE(expr_is_compare(ExprOp::Maximum));
  EXPECT_TRUE(expr_is_transcendental(ExprOp::Exp));
  EXPECT_TRUE(expr_is_transcendental(ExprOp::GeluTanh));
  EXPECT_FALSE(expr_is_transcendental(ExprOp::Sqrt));
  EXPECT_FALSE(expr_is_transcendental(ExprOp::Add));
}

TEST(JitLoopIr, VerifyRejectsOperandBeforeDefinition) {
  LoopKernel k;
  k.inputs.assign(1, DType::Float32);
  const int32_t x = k.load(0);
  const int32_t bad = k.binary(ExprOp::Add, x, 2);  // reads %2, defined after it
  k.stores = {bad};
  expect_verify_error(k, "reads %2, not defined before it");

  LoopKernel self;
  self.inputs.assign(1, DType::Float32);
  self.load(0);
  self.stores = {self.unary(ExprOp::Neg, 1)};  // reads itself
  expect_verify_error(self, "%1 (Neg) reads %1");

  LoopKernel negative;
  negative.inputs.assign(1, DType::Float32);
  negative.load(0);
  negative.stores = {negative.unary(ExprOp::Sqrt, -1)};
  expect_verify_error(negative, "reads %-1");
}

TEST(JitLoopIr, VerifyRejectsMasksWhereFloatsGoAndFloatsWhereMasksGo) {
  {  // a mask as an arithmetic operand
    LoopKernel k;
    k.inputs.assign(2, DType::Float32);
    const int32_t x = k.load(0), y = k.load(1);
    const int32_t m = k.binary(ExprOp::Lt, x, y);
    k.stores = {k.binary(ExprOp::Add, x, m)};
    expect_verify_error(k, "operand 1 is a mask %2, expected Float32");
  }
  {  // a float as Select's condition
    LoopKernel k;
    k.inputs.assign(2, DType::Float32);
    const int32_t x = k.load(0), y = k.load(1);
    k.stores = {k.select(x, x, y)};
    expect_verify_error(k, "operand 0 is Float32 %0, expected a mask");
  }
  {  // a mask as one of Select's values
    LoopKernel k;
    k.inputs.assign(2, DType::Float32);
    const int32_t x = k.load(0), y = k.load(1);
    const int32_t m = k.binary(ExprOp::Ge, x, y);
    k.stores = {k.select(m, m, y)};
    expect_verify_error(k, "(Select) of masks");
  }
  {  // a compare of masks
    LoopKernel k;
    k.inputs.assign(2, DType::Float32);
    const int32_t x = k.load(0), y = k.load(1);
    const int32_t m = k.binary(ExprOp::Eq, x, y);
    k.stores = {k.select(k.binary(ExprOp::Ne, m, m), x, y)};
    expect_verify_error(k, "is a mask");
  }
  {  // a Bool parameter
    LoopKernel k = LoopKernel::uniform(DType::Float32, 1, 0);
    k.params = {DType::Bool};
    k.stores = {k.load(0)};
    expect_verify_error(k, "param 0 is Bool");
  }
}

TEST(JitLoopIr, VerifyRejectsOutOfRangeLoadsParamsAndStores) {
  {
    LoopKernel k;
    k.inputs.assign(1, DType::Float32);
    k.load(0);
    k.stores = {k.load(1)};
    expect_verify_error(k, "%1 loads input 1 of 1");
  }
  {
    LoopKernel k;
    k.inputs.assign(1, DType::Float32);
    k.stores = {k.load(-1)};
    expect_verify_error(k, "loads input -1 of 1");
  }
  {
    LoopKernel k;
    k = LoopKernel::uniform(DType::Float32, 1, 1);
    k.stores = {k.binary(ExprOp::Mul, k.load(0), k.param(1))};
    expect_verify_error(k, "reads param 1 of 1");
  }
  {
    LoopKernel k;
    k.inputs.assign(1, DType::Float32);
    k.load(0);
    k.stores = {1};
    expect_verify_error(k, "store 0 of %1");
  }
  {
    LoopKernel k;
    k.inputs.assign(1, DType::Float32);
    k.load(0);
    expect_verify_error(k, "no stores");
  }
  {  // a load whose type is not its input's storage dtype
    LoopKernel k = small_kernel();
    k.inputs[1] = DType::Int32;
    expect_verify_error(k, "%1 (Load) has type Float32, expected Int32");
  }
  {  // an operand where the arity has none
    LoopKernel k;
    k.inputs.assign(1, DType::Float32);
    k.load(0);
    Expr e{ExprOp::Neg, 0, 0};
    k.exprs.push_back(e);
    k.stores = {1};
    expect_verify_error(k, "%1 (Neg) has an extra operand");
  }
}

TEST(JitLoopIr, GoldenText) {
  const std::string want =
      "kernel inputs=[Float32 Float32] params=[Float32]\n"
      "  %0 = Load in0 : Float32\n"
      "  %1 = Load in1 : Float32\n"
      "  %2 = Param p0 : Float32\n"
      "  %3 = Const 0.5 : Float32\n"
      "  %4 = Mul %0 %2 : Float32\n"
      "  %5 = Add %4 %3 : Float32\n"
      "  %6 = Lt %1 %0 : Bool\n"
      "  %7 = Select %6 %5 %1 : Float32\n"
      "  %8 = Relu %0 : Float32\n"
      "  out0 = %7\n"
      "  out1 = %8\n";
  EXPECT_EQ(to_text(small_kernel()), want);

  LoopKernel d = LoopKernel::uniform(DType::Float64, 1);
  const int32_t c =
      d.constant(-2.25, DType::Float64);  // (argument evaluation order is unspecified)
  const int32_t x = d.load(0);
  d.stores = {d.binary(ExprOp::Sub, c, x)};
  EXPECT_EQ(to_text(d),
            "kernel inputs=[Float64] params=[]\n"
            "  %0 = Const -2.25 : Float64\n"
            "  %1 = Load in0 : Float64\n"
            "  %2 = Sub %0 %1 : Float64\n"
            "  out0 = %2\n");
}

// Every dtype: a Bool and an Int64 input, casts both ways, an integer constant, a Bool store.
TEST(JitLoopIr, GoldenTextMixedTypes) {
  LoopKernel k;
  k.inputs = {DType::Bool, DType::Int64, DType::Float32};
  k.params = {DType::Int32};
  const int32_t m = k.load(0), i = k.load(1), f = k.load(2), p = k.param(0);
  const int32_t p64 = k.cast(p, DType::Int64);  // (argument evaluation order is unspecified)
  const int32_t s = k.binary(ExprOp::Add, p64, k.constant_int(-3, DType::Int64));
  const int32_t sel = k.select(m, s, i);
  const int32_t g = k.binary(ExprOp::Gt, k.cast(sel, DType::Float32), f);
  k.stores = {k.binary(ExprOp::And, g, m), k.cast(k.unary(ExprOp::Round, f), DType::Int32)};
  EXPECT_NO_THROW(k.verify());
  EXPECT_EQ(to_text(k),
            "kernel inputs=[Bool Int64 Float32] params=[Int32]\n"
            "  %0 = Load in0 : Bool\n"
            "  %1 = Load in1 : Int64\n"
            "  %2 = Load in2 : Float32\n"
            "  %3 = Param p0 : Int32\n"
            "  %4 = Cast %3 : Int64\n"
            "  %5 = Const -3 : Int64\n"
            "  %6 = Add %4 %5 : Int64\n"
            "  %7 = Select %0 %6 %1 : Int64\n"
            "  %8 = Cast %7 : Float32\n"
            "  %9 = Gt %8 %2 : Bool\n"
            "  %10 = And %9 %0 : Bool\n"
            "  %11 = Round %2 : Float32\n"
            "  %12 = Cast %11 : Int32\n"
            "  out0 = %10\n"
            "  out1 = %12\n");
}

TEST(JitLoopIr, VerifyChecksTypes) {
  auto two = [](DType a, DType b) {  // with both loaded, as %0 and %1
    LoopKernel k;
    k.inputs = {a, b};
    k.load(0);
    k.load(1);
    return k;
  };
  {  // operands of different types need a Cast
    LoopKernel k = two(DType::Float32, DType::Int32);
    k.stores = {k.binary(ExprOp::Add, 0, 1)};
    expect_verify_error(k, "%2 (Add) operand 1 is Int32 %1, expected Float32 (insert a Cast)");
  }
  {  // a compare of different types
    LoopKernel k = two(DType::Float64, DType::Float32);
    k.stores = {k.binary(ExprOp::Lt, 0, 1)};
    expect_verify_error(k, "%2 (Lt) operand 1 is Float32 %1, expected Float64");
  }
  {  // float-only ops on integers
    LoopKernel k = two(DType::Int64, DType::Int64);
    k.stores = {k.unary(ExprOp::Sqrt, 0)};
    expect_verify_error(k, "%2 (Sqrt) does not compute in Int64");
    LoopKernel d = two(DType::Int32, DType::Int32);
    d.stores = {d.binary(ExprOp::Div, 0, 1)};
    expect_verify_error(d, "%2 (Div) does not compute in Int32");
    LoopKernel r = two(DType::Int32, DType::Int32);
    r.stores = {r.unary(ExprOp::Floor, 0)};
    expect_verify_error(r, "(Floor) does not compute in Int32");
  }
  {  // arithmetic on masks
    LoopKernel k = two(DType::Bool, DType::Bool);
    k.stores = {k.binary(ExprOp::Add, 0, 1)};
    expect_verify_error(k, "%2 (Add) does not compute in masks");
  }
  {  // logical ops on numbers
    LoopKernel k = two(DType::Float32, DType::Float32);
    Expr e{ExprOp::And, 0, 1};
    e.type = DType::Bool;
    k.exprs.push_back(e);
    k.stores = {2};
    expect_verify_error(k, "%2 (And) operand 0 is Float32 %0, expected a mask");
  }
  {  // a compare whose result is not a mask
    LoopKernel k = two(DType::Float32, DType::Float32);
    k.stores = {k.binary(ExprOp::Eq, 0, 1)};
    k.exprs[2].type = DType::Float32;
    expect_verify_error(k, "%2 (Eq) has type Float32, expected Bool");
  }
  {  // a Cast to its own type
    LoopKernel k = two(DType::Int32, DType::Int32);
    k.stores = {k.cast(0, DType::Int32)};
    expect_verify_error(k, "%2 (Cast) from Int32 to itself");
  }
  {  // constants out of their type
    LoopKernel k = two(DType::Int32, DType::Int32);
    k.stores = {k.constant_int(0, DType::Int32)};
    k.exprs[2].ivalue = int64_t{1} << 40;
    expect_verify_error(k, "%2 (Const) 1099511627776 is not a Int32 value");
    LoopKernel b = two(DType::Bool, DType::Bool);
    b.stores = {b.constant_int(1, DType::Bool)};
    b.exprs[2].ivalue = 2;
    expect_verify_error(b, "is not a Bool value");
    LoopKernel f = two(DType::Float32, DType::Float32);
    f.stores = {f.constant(0.5, DType::Float32)};
    f.exprs[2].value = 0.1;  // not a float
    expect_verify_error(f, "%2 (Const) 0.1 is not a Float32 value");
    LoopKernel mixed = two(DType::Float32, DType::Float32);
    mixed.stores = {mixed.constant(0.5, DType::Float32)};
    mixed.exprs[2].ivalue = 1;  // both fields set: not canonical
    expect_verify_error(mixed, "is not a Float32 value");
  }
  {  // the builders' wrapping and rounding
    LoopKernel k;
    EXPECT_EQ(k.exprs[k.constant_int(int64_t{1} << 32 | 5, DType::Int32)].ivalue, 5);
    EXPECT_EQ(k.exprs[k.constant_int(7, DType::Bool)].ivalue, 1);
    EXPECT_EQ(k.exprs[k.constant(0.1, DType::Float32)].value, static_cast<double>(0.1f));
  }
}

TEST(JitLoopIr, EncodeEqualForEqualKernels) {
  const LoopKernel a = small_kernel(), b = small_kernel();
  EXPECT_EQ(a, b);
  EXPECT_EQ(encode(a), encode(b));
  EXPECT_EQ(hash_words(encode(a)), hash_words(encode(b)));
}

TEST(JitLoopIr, EncodeDiffersWhenAnyFieldDiffers) {
  const LoopKernel base = small_kernel();
  const std::vector<uint64_t> w = encode(base);
  std::vector<std::pair<std::string, LoopKernel>> variants;
  auto add = [&](const std::string& what, auto&& change) {
    LoopKernel k = base;
    change(k);
    variants.emplace_back(what, k);
  };
  add("an input's dtype", [](LoopKernel& k) { k.inputs[1] = DType::Float64; });
  add("num_inputs", [](LoopKernel& k) { k.inputs.assign(3, DType::Float32); });
  add("num_params", [](LoopKernel& k) { k.params.assign(2, DType::Float32); });
  add("a param's type", [](LoopKernel& k) { k.params[0] = DType::Int32; });
  add("an expression's type", [](LoopKernel& k) { k.exprs[8].type = DType::Float64; });
  add("an integer constant", [](LoopKernel& k) { k.exprs[3].ivalue = 1; });
  add("an op", [](LoopKernel& k) { k.exprs[5].op = ExprOp::Sub; });
  add("a compare", [](LoopKernel& k) { k.exprs[6].op = ExprOp::Le; });
  add("a unary op", [](LoopKernel& k) { k.exprs[8].op = ExprOp::Abs; });
  add("an operand", [](LoopKernel& k) { k.exprs[4].b = 1; });
  add("operand order", [](LoopKernel& k) { std::swap(k.exprs[4].a, k.exprs[4].b); });
  add("select operand c", [](LoopKernel& k) { k.exprs[7].c = 0; });
  add("a load's input", [](LoopKernel& k) { k.exprs[1].index = 0; });
  add("a param's index", [](LoopKernel& k) { k.exprs[2].index = 1; });
  add("a constant", [](LoopKernel& k) { k.exprs[3].value = 0.25; });
  add("a constant's sign (-0)", [](LoopKernel& k) { k.exprs[3].value = -0.0; });
  add("a constant's last bit", [](LoopKernel& k) { k.exprs[3].value = std::nextafter(0.5, 1.0); });
  add("a store", [](LoopKernel& k) { k.stores[1] = 5; });
  add("store order", [](LoopKernel& k) { std::swap(k.stores[0], k.stores[1]); });
  add("one store fewer", [](LoopKernel& k) { k.stores.pop_back(); });
  add("one store more", [](LoopKernel& k) { k.stores.push_back(8); });
  add("an expression more", [](LoopKernel& k) { k.unary(ExprOp::Neg, 0); });
  for (const auto& [what, k] : variants) {
    EXPECT_NE(k, base) << what;
    EXPECT_NE(encode(k), w) << what;
    EXPECT_NE(hash_words(encode(k)), hash_words(w)) << what;
  }
  // +0 and -0 compare equal as doubles but are different constants.
  LoopKernel z0 = base, z1 = base;
  z0.exprs[3].value = 0.0;
  z1.exprs[3].value = -0.0;
  EXPECT_NE(encode(z0), encode(z1));
  // Two NaN constants with different payloads are different kernels too.
  LoopKernel n0 = base, n1 = base;
  n0.exprs[3].value = std::numeric_limits<double>::quiet_NaN();
  n1.exprs[3].value = std::bit_cast<double>(std::bit_cast<uint64_t>(n0.exprs[3].value) | 1);
  EXPECT_NE(encode(n0), encode(n1));
  EXPECT_EQ(encode(n0), encode(n0));
}

// ---- the kernel cache ----

TEST(JitKernelCache, HitsAndMisses) {
  KernelCache<int> cache;
  int made = 0;
  auto make = [&] { return ++made; };
  const std::vector<uint64_t> a = encode(small_kernel());
  std::vector<uint64_t> b = a;
  b.back() ^= 1;
  EXPECT_EQ(cache.get_or_make(a, make), 1);
  EXPECT_EQ(cache.get_or_make(a, make), 1);
  EXPECT_EQ(cache.get_or_make(b, make), 2);
  EXPECT_EQ(cache.get_or_make(b, make), 2);
  EXPECT_EQ(cache.get_or_make(a, make), 1);
  EXPECT_EQ(made, 2);
  EXPECT_EQ(cache.counters().hits, 3);
  EXPECT_EQ(cache.counters().misses, 2);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(JitKernelCache, AFailedMakeStoresNothing) {
  KernelCache<int> cache;
  const std::vector<uint64_t> key = {1, 2, 3};
  EXPECT_THROW(cache.get_or_make(key, []() -> int { fail("no code"); }), Error);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.get_or_make(key, [] { return 7; }), 7);
  EXPECT_EQ(cache.get_or_make(key, [] { return 8; }), 7);
  EXPECT_EQ(cache.size(), 1u);
}

// hash_words is fixed (the cache takes no hash function), so build a real collision: for keys of
// two words {x, y} the hash is a bijection of y once x is fixed (xor, add and multiply by an odd
// constant, each invertible), so for any x' there is a y' with hash({x', y'}) == hash({x, y}).
std::vector<uint64_t> colliding_key(const std::vector<uint64_t>& key, uint64_t x2) {
  const uint64_t target = hash_words(key);
  // Replay the hash up to the last word for the new prefix.
  uint64_t h = 0xcbf29ce484222325ull ^ 2u;
  h ^= x2 + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0x100000001b3ull;
  // Solve (h ^ (y + C + (h << 6) + (h >> 2))) * P == target for y: invert the multiplication.
  uint64_t inv = 1;  // P^-1 mod 2^64 by Newton's iteration
  const uint64_t p = 0x100000001b3ull;
  for (int i = 0; i < 6; ++i) inv *= 2 - p * inv;
  const uint64_t before_mul = target * inv;
  const uint64_t y = (before_mul ^ h) - 0x9e3779b97f4a7c15ull - (h << 6) - (h >> 2);
  return {x2, y};
}

TEST(JitKernelCache, HashCollisionsNeverHit) {
  const std::vector<uint64_t> a = {0x1234, 0x5678};
  const std::vector<uint64_t> b = colliding_key(a, 0x9999);
  const std::vector<uint64_t> c = colliding_key(a, 0xabcdef);
  ASSERT_NE(a, b);
  ASSERT_NE(b, c);
  ASSERT_EQ(hash_words(a), hash_words(b)) << "the constructed collision is wrong";
  ASSERT_EQ(hash_words(a), hash_words(c));

  KernelCache<std::string> cache;
  EXPECT_EQ(cache.get_or_make(a, [] { return std::string("a"); }), "a");
  EXPECT_EQ(cache.get_or_make(b, [] { return std::string("b"); }), "b");
  EXPECT_EQ(cache.get_or_make(c, [] { return std::string("c"); }), "c");
  EXPECT_EQ(cache.counters().misses, 3);
  EXPECT_EQ(cache.counters().hits, 0);
  for (int rep = 0; rep < 2; ++rep) {
    EXPECT_EQ(cache.get_or_make(b, [] { return std::string("wrong"); }), "b");
    EXPECT_EQ(cache.get_or_make(a, [] { return std::string("wrong"); }), "a");
    EXPECT_EQ(cache.get_or_make(c, [] { return std::string("wrong"); }), "c");
  }
  EXPECT_EQ(cache.counters().hits, 6);
  EXPECT_EQ(cache.size(), 3u);
  // A prefix of a key, or the key with a word more, is another key.
  std::vector<uint64_t> longer = a;
  longer.push_back(0);
  EXPECT_EQ(cache.get_or_make(longer, [] { return std::string("longer"); }), "longer");
  EXPECT_EQ(cache.get_or_make({0x1234}, [] { return std::string("prefix"); }), "prefix");
  EXPECT_EQ(cache.size(), 5u);
}

TEST(JitKernelCache, ManyKernelsStayDistinct) {
  KernelCache<int> cache;
  std::vector<LoopKernel> kernels;
  for (int i = 0; i < 600; ++i) {
    const DType t = i % 2 ? DType::Float64 : DType::Float32;
    LoopKernel k = LoopKernel::uniform(t, 1);
    k.stores = {k.binary(ExprOp::Mul, k.load(0), k.constant(i / 2 * 0.125, t))};
    kernels.push_back(k);
  }
  for (int i = 0; i < 600; ++i)
    EXPECT_EQ(cache.get_or_make(encode(kernels[i]), [&] { return i; }), i);
  for (int i = 599; i >= 0; --i)
    EXPECT_EQ(cache.get_or_make(encode(kernels[i]), [] { return -1; }), i);
  EXPECT_EQ(cache.size(), 600u);
  EXPECT_EQ(cache.counters().misses, 600);
  EXPECT_EQ(cache.counters().hits, 600);
}

}  // namespace
}  // namespace kiln::jit

// CPU kernels of every dtype driven directly (jit::cpu_target()), on every ISA path the host
// runs, against the eager ops on the same data, byte for byte (NaN canonicalized): casts between
// all five dtypes over special values (NaN, infinities, -0, values out of the integer ranges,
// integer extremes, int64 values that round when converted to floats), integer arithmetic that
// overflows, stored comparisons (Bool bytes 0 / 1), Bool inputs as masks (contiguous, broadcast,
// strided), rounding, and kernels mixing 4- and 8-byte types, at lengths around every vector
// width (tails) and above it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/target.h"
#include "jit_kernel_util.h"
#include "record_util.h"

namespace kiln::jit {
namespace {

using kiln::testing::bytes_of;
using kiln::testing::ConfigOverride;
using kiln::testing::supported_jit_isas;

const DType kAll[] = {kBool, kInt32, kInt64, kFloat32, kFloat64};

// n values (eagerly made) of dtype t: special values first, then a ramp of mixed magnitudes.
Tensor cast_values(DType t, int64_t n, int salt) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> sp = {0.0,     -0.0, 1.0,          -1.0,          0.5,          -0.5,
                                  1.5,     2.5,  -2.5,         inf,           -inf,         NAN,
                                  3e9,     -3e9, 2147483647.0, -2147483648.0, 2147483648.0, 9.3e18,
                                  -9.3e18, 1e30, 16777217.0,   0.49999997,    1e-40};
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i + salt);
    v[static_cast<size_t>(i)] = k % 3 == 0
                                    ? sp[k / 3 % sp.size()]
                                    : std::ldexp(static_cast<double>(k * 2654435761u % 2001) - 1000,
                                                 static_cast<int>(k % 40) - 8);
  }
  if (is_integral(t)) {  // integer extremes and values that round as floats, exactly
    std::vector<int64_t> iv(static_cast<size_t>(n));
    const std::vector<int64_t> isp = {INT64_MIN,
                                      INT64_MAX,
                                      INT32_MIN,
                                      INT32_MAX,
                                      -1,
                                      0,
                                      1,
                                      (int64_t{1} << 53) + 1,
                                      (int64_t{1} << 24) + 1,
                                      -(int64_t{1} << 62) - 3};
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i + salt);
      iv[static_cast<size_t>(i)] = k % 4 == 0 ? isp[k / 4 % isp.size()]
                                              : static_cast<int64_t>(k * 2654435761u) - (1ll << 31);
    }
    return from_vector<int64_t>(iv, {n}).to(t);
  }
  return from_vector<double>(v, {n}).to(t);
}

// Launches `k` over sizes {n} with contiguous operands (strides in bytes: their itemsize, or
// `in_strides[j]` elements where given, 0 for broadcast), outputs allocated here.
std::vector<Tensor> launch(CompiledKernel& ck, const std::vector<Tensor>& ins, int64_t n,
                           std::vector<Scalar> params = {}) {
  const LoopKernel& k = ck.source();
  LaunchArgs la;
  la.sizes = {n};
  std::vector<Tensor> outs;
  for (int32_t o = 0; o < k.num_outputs(); ++o) {
    outs.push_back(empty({n}, TensorOptions().dtype(k.output_dtype(o))));
    la.ptrs.push_back(static_cast<char*>(const_cast<void*>(outs.back().raw_data())));
    la.strides.push_back({static_cast<int64_t>(itemsize(k.output_dtype(o)))});
  }
  for (const Tensor& t : ins) {
    la.ptrs.push_back(static_cast<char*>(const_cast<void*>(t.raw_data())));
    const int64_t s = t.numel() == 1 ? 0 : t.strides()[0];
    la.strides.push_back({s * static_cast<int64_t>(itemsize(t.dtype()))});
  }
  la.params = std::span<const Scalar>(params.data(), params.size());
  ck.launch(la);
  return outs;
}

std::shared_ptr<CompiledKernel> compile_on(const std::string& isa, const LoopKernel& k) {
  ConfigOverride<std::string> o(config().jit_isa, isa);
  return cpu_target().compile(k);
}

const std::vector<int64_t> kLengths = {1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 100};

TEST(JitDtypes, EveryCastEveryIsaMatchesEagerTo) {
  for (const std::string& isa : supported_jit_isas()) {
    for (DType from : kAll)
      for (DType to : kAll) {
        if (from == to) continue;
        LoopKernel k;
        k.inputs = {from};
        k.stores = {k.cast(k.load(0), to)};
        auto ck = compile_on(isa, k);
        for (int64_t n : kLengths) {
          const Tensor x = cast_values(from, n, static_cast<int>(n));
          const Tensor got = launch(*ck, {x}, n)[0];
          EXPECT_EQ(bytes_of(got), bytes_of(x.to(to)))
              << isa << " " << dtype_name(from) << " -> " << dtype_name(to) << " n=" << n << "\n x "
              << x << "\n got " << got << "\n want " << x.to(to);
        }
      }
  }
}

// Every integer op with both operands loaded, one broadcast, and a constant: wrapping as eager.
TEST(JitDtypes, IntegerArithmeticAndComparesMatchEager) {
  struct Case {
    ExprOp op;
    Tensor (*eager)(const Tensor&, const Tensor&);
  };
  const std::vector<Case> binary = {
      {ExprOp::Add, [](const Tensor& a, const Tensor& b) { return a + b; }},
      {ExprOp::Sub, [](const Tensor& a, const Tensor& b) { return a - b; }},
      {ExprOp::Mul, [](const Tensor& a, const Tensor& b) { return a * b; }},
      {ExprOp::Maximum, [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {ExprOp::Minimum, [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
      {ExprOp::Lt, [](const Tensor& a, const Tensor& b) { return a < b; }},
      {ExprOp::Le, [](const Tensor& a, const Tensor& b) { return a <= b; }},
      {ExprOp::Gt, [](const Tensor& a, const Tensor& b) { return a > b; }},
      {ExprOp::Ge, [](const Tensor& a, const Tensor& b) { return a >= b; }},
      {ExprOp::Eq, [](const Tensor& a, const Tensor& b) { return a == b; }},
      {ExprOp::Ne, [](const Tensor& a, const Tensor& b) { return a != b; }}};
  const std::vector<std::pair<ExprOp, Tensor (*)(const Tensor&)>> unary = {
      {ExprOp::Neg, [](const Tensor& a) { return -a; }},
      {ExprOp::Abs, [](const Tensor& a) { return a.abs(); }},
      {ExprOp::Square, [](const Tensor& a) { return a.square(); }},
      {ExprOp::Relu, [](const Tensor& a) { return a.relu(); }},
      {ExprOp::Sign, [](const Tensor& a) { return a.sign(); }}};
  for (const std::string& isa : supported_jit_isas())
    for (DType t : {kInt32, kInt64}) {
      for (const Case& c : binary) {
        LoopKernel k = LoopKernel::uniform(t, 2);
        const int32_t a = k.load(0), b = k.load(1);
        k.stores = {k.binary(c.op, a, b)};
        auto ck = compile_on(isa, k);
        for (int64_t n : kLengths) {
          const Tensor x = cast_values(t, n, 1), y = cast_values(t, n, 7);
          const Tensor y_eq = n > 2 ? y.clone() : y;  // some equal lanes for Eq / Le / Ge
          if (n > 2) y_eq.slice(0, 0, 2).copy_(x.slice(0, 0, 2));
          EXPECT_EQ(bytes_of(launch(*ck, {x, y_eq}, n)[0]), bytes_of(c.eager(x, y_eq)))
              << isa << " " << dtype_name(t) << " " << expr_op_name(c.op) << " n=" << n;
          const Tensor y0 = y.slice(0, 0, 1);  // broadcast
          EXPECT_EQ(bytes_of(launch(*ck, {x, y0}, n)[0]), bytes_of(c.eager(x, y0.expand({n}))))
              << isa << " " << dtype_name(t) << " " << expr_op_name(c.op) << " broadcast n=" << n;
        }
      }
      for (const auto& [op, eager] : unary) {
        LoopKernel k = LoopKernel::uniform(t, 1);
        k.stores = {k.unary(op, k.load(0))};
        auto ck = compile_on(isa, k);
        for (int64_t n : kLengths) {
          const Tensor x = cast_values(t, n, 3);
          EXPECT_EQ(bytes_of(launch(*ck, {x}, n)[0]), bytes_of(eager(x)))
              << isa << " " << dtype_name(t) << " " << expr_op_name(op) << " n=" << n;
        }
      }
    }
}

// A Bool input selecting between Int64 and Float32 values converted to Float64, a Bool stored
// from a Float32 compare, and an Int32 param: 1-, 4- and 8-byte types in one kernel.
TEST(JitDtypes, MixedWidthKernelWithBoolInAndOut) {
  LoopKernel k;
  k.inputs = {kBool, kInt64, kFloat32};
  k.params = {kInt32};
  const int32_t m = k.load(0), i = k.load(1), f = k.load(2), p = k.param(0);
  const int32_t i_plus = k.binary(ExprOp::Add, i, k.cast(p, kInt64));
  const int32_t sel = k.select(m, k.cast(i_plus, kFloat64), k.cast(f, kFloat64));
  const int32_t gt = k.binary(ExprOp::Gt, f, k.constant(0.25, kFloat32));
  k.stores = {sel, k.binary(ExprOp::Or, gt, k.unary(ExprOp::Not, m)), k.cast(i, kInt32)};
  for (const std::string& isa : supported_jit_isas()) {
    auto ck = compile_on(isa, k);
    for (int64_t n : kLengths) {
      const Tensor mask = cast_values(kFloat32, n, 5) > 0.0;
      const Tensor ii = cast_values(kInt64, n, 2), ff = cast_values(kFloat32, n, 4);
      for (int form = 0; form < 3; ++form) {
        // The mask contiguous, broadcast (one element) or strided (every other of 2n).
        Tensor mk = mask;
        if (form == 1) mk = mask.slice(0, 0, 1);
        if (form == 2) mk = (cast_values(kFloat32, 2 * n, 5) > 0.0).slice(0, 0, 2 * n, 2);
        const Tensor me = form == 1 ? mk.expand({n}) : mk;
        const std::vector<Tensor> got = launch(*ck, {mk, ii, ff}, n, {Scalar(int64_t{-7})});
        const Tensor want0 = where(me, (ii + (-7)).to(kFloat64), ff.to(kFloat64));
        const Tensor want1 = logical_or(ff > 0.25, logical_not(me));
        const Tensor want2 = ii.to(kInt32);
        EXPECT_EQ(bytes_of(got[0]), bytes_of(want0)) << isa << " form " << form << " n=" << n;
        EXPECT_EQ(bytes_of(got[1]), bytes_of(want1)) << isa << " form " << form << " n=" << n;
        EXPECT_EQ(bytes_of(got[2]), bytes_of(want2)) << isa << " form " << form << " n=" << n;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::jit

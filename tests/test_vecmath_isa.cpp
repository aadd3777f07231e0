// kiln's vector math gives the same bits at every vector width and on every ISA path:
//   - the vecmath templates instantiated with GnuVecOps at W = 16, 32 and 64 in this (baseline)
//     TU, where GCC lowers the wide vectors to SSE2;
//   - the eager pointwise kernels of the baseline, AVX2 and AVX-512 objects, on contiguous,
//     strided, broadcast and 0-dim inputs, against one another and against one lane of the vector
//     code (the functor's scalar path).

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core_test_util.h"
#include "isa_util.h"
#include "ops/cpu/elementwise_loop.h"
#include "ops/cpu/pointwise_functors.h"
#include "ops/cpu/pointwise_table.h"
#include "ops/cpu/vecmath/gnu_vec_ops.h"
#include "ops/cpu/vecmath/vecmath.h"
#include "runtime/dispatcher.h"

using namespace kiln;
using namespace kiln::testutil;
namespace vm = kiln::vecmath;

namespace {

// Inputs over the whole range: random bit patterns, a dense band around 0, and specials.
template <class T>
std::vector<T> inputs(size_t n) {
  std::mt19937_64 g(7);
  std::vector<T> v;
  for (size_t i = 0; i < n; ++i) {
    uint64_t b = g();
    T x;
    if (i % 3 == 0) {
      if constexpr (sizeof(T) == 4) {
        uint32_t u = uint32_t(b);
        std::memcpy(&x, &u, 4);
      } else {
        std::memcpy(&x, &b, 8);
      }
    } else {
      x = T(std::ldexp(double(b >> 11) * 0x1p-53 - 0.5, int(b % 16) - 4));
    }
    v.push_back(x);
  }
  using L = std::numeric_limits<T>;
  for (T s : {T(0), -T(0), L::infinity(), -L::infinity(), L::quiet_NaN(), L::denorm_min(),
              -L::denorm_min(), L::max(), -L::max(), L::min(), T(88.7), T(-103.5), T(709.7),
              T(-745.0), T(-1), T(1e30), T(-1e30)})
    v.push_back(s);
  return v;
}

template <class T, int W, class Fn>
std::vector<T> run_width(const std::vector<T>& xs, Fn fn) {
  std::vector<T> out(xs.size());
  vm::map_contiguous<T, W>(xs.data(), out.data(), int64_t(xs.size()), fn);
  return out;
}

template <class T, class Fn>
void check_widths(const char* name, Fn fn) {
  const std::vector<T> xs = inputs<T>(20011);
  const std::vector<T> a = run_width<T, 16>(xs, fn), b = run_width<T, 32>(xs, fn),
                       c = run_width<T, 64>(xs, fn);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(T))) << name << " W=32";
  EXPECT_EQ(0, std::memcmp(a.data(), c.data(), a.size() * sizeof(T))) << name << " W=64";
  for (size_t i = 0; i < xs.size(); i += 101) {
    const T s = vm::apply_scalar(xs[i], fn);
    EXPECT_EQ(0, std::memcmp(&s, &a[i], sizeof(T))) << name << " one lane at " << xs[i];
  }
}

#define KILN_VM_WIDTHS(fn)                                                      \
  check_widths<float>(#fn, [](const auto& o, auto x) { return vm::fn(o, x); }); \
  check_widths<double>(#fn, [](const auto& o, auto x) { return vm::fn(o, x); });

// clang-format off (the macro holds its own semicolons)
TEST(VecmathIsa, EveryWidthGivesTheSameBits) {
  KILN_VM_WIDTHS(exp)
  KILN_VM_WIDTHS(expm1)
  KILN_VM_WIDTHS(log)
  KILN_VM_WIDTHS(log1p)
  KILN_VM_WIDTHS(tanh)
  KILN_VM_WIDTHS(sigmoid)
  KILN_VM_WIDTHS(silu)
  KILN_VM_WIDTHS(erf)
  KILN_VM_WIDTHS(gelu)
  KILN_VM_WIDTHS(gelu_tanh)
  KILN_VM_WIDTHS(sin)
  KILN_VM_WIDTHS(cos)
}
// clang-format on

// The fma primitive rounds once at every width (a mul and an add would round twice): (1 + d)^2
// - (1 + 2d) is d^2 exactly, and 0 after a rounded product (d = 2^-20 / 2^-30).
template <class T, int W>
void check_fma_rounds_once() {
  using O = vm::GnuVecOps<T, W>;
  const O o;
  const T d = sizeof(T) == 4 ? T(0x1p-20) : T(0x1p-30);
  const typename O::F r = o.fma(o.splat(1 + d), o.splat(1 + d), o.splat(-(1 + 2 * d)));
  for (int i = 0; i < O::kLanes; ++i) EXPECT_EQ(r[i], d * d) << "W=" << W << " lane " << i;
  if constexpr (sizeof(T) == 4) {
    // Float lanes without FMA hardware go through double (GnuVecOps::fma_via_double): (1 +
    // 2^-12)^2 + 2^-80 lies just above the midpoint 1 + 2^-11 + 2^-24 of two floats. Rounded
    // to nearest in double it is the midpoint, which then rounds to even (down); rounded to
    // odd, up, as the exact value does. Both signs.
    for (const T s : {T(1), T(-1)}) {
      const typename O::F q =
          o.fma(o.splat(s * (1 + 0x1p-12f)), o.splat(1 + 0x1p-12f), o.splat(s * 0x1p-80f));
      for (int i = 0; i < O::kLanes; ++i)
        EXPECT_EQ(q[i], s * (1 + 0x1p-11f + 0x1p-23f)) << "W=" << W << " lane " << i;
    }
  }
}

TEST(VecmathIsa, FmaRoundsOnceAtEveryWidth) {
  check_fma_rounds_once<float, 16>();
  check_fma_rounds_once<float, 32>();
  check_fma_rounds_once<float, 64>();
  check_fma_rounds_once<double, 16>();
  check_fma_rounds_once<double, 32>();
  check_fma_rounds_once<double, 64>();
}

// pow at every width and through one lane: x from inputs(), y from a shifted copy of them plus
// small integers and halves (negative bases, odd exponents).
template <class T, int W>
std::vector<T> pow_width(const std::vector<T>& xs, const std::vector<T>& ys) {
  std::vector<T> out(xs.size());
  vm::map_contiguous2<T, W>(xs.data(), 1, ys.data(), 1, out.data(), int64_t(xs.size()),
                            [](const auto& o, auto x, auto y) { return vm::pow(o, x, y); });
  return out;
}

template <class T>
void check_pow_widths() {
  const std::vector<T> base = inputs<T>(20011);
  std::vector<T> xs, ys;
  for (size_t i = 0; i < base.size(); ++i) {
    xs.push_back(base[i]);
    ys.push_back(i % 2 ? base[(i * 7 + 3) % base.size()] : T(int(i % 13) - 6) * T(0.5));
  }
  const std::vector<T> a = pow_width<T, 16>(xs, ys), b = pow_width<T, 32>(xs, ys),
                       c = pow_width<T, 64>(xs, ys);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(T))) << "pow W=32";
  EXPECT_EQ(0, std::memcmp(a.data(), c.data(), a.size() * sizeof(T))) << "pow W=64";
  for (size_t i = 0; i < xs.size(); i += 37) {
    const T s = vm::apply_scalar2(xs[i], ys[i],
                                  [](const auto& o, auto x, auto y) { return vm::pow(o, x, y); });
    EXPECT_EQ(0, std::memcmp(&s, &a[i], sizeof(T))) << "pow one lane at " << xs[i] << ", " << ys[i];
  }
}

TEST(VecmathIsa, PowEveryWidthGivesTheSameBits) {
  check_pow_widths<float>();
  check_pow_widths<double>();
}

// pow's eager kernels (tensor ^ tensor, tensor ^ scalar) of every ISA on contiguous, strided and
// broadcast operands, against one another, the dispatched op and the one-lane functor.
TEST(VecmathIsa, EagerPowIdenticalOnEveryIsaAndLayout) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx2"))
    GTEST_SKIP() << "needs a CPU with AVX-512";
  static PointwiseTable tables[3];
  isa_baseline::fill_pointwise_table(tables[0]);
  isa_avx2::fill_pointwise_table(tables[1]);
  isa_avx512::fill_pointwise_table(tables[2]);
  int checked = 0;
  for (DType d : {kFloat32, kFloat64}) {
    std::vector<double> xv, yv;
    visit_dtype(d, [&]<class T>(TypeTag<T>) {
      if constexpr (std::is_floating_point_v<T>) {
        const std::vector<T> in = inputs<T>(3001);
        for (size_t i = 0; i < in.size(); ++i) {
          xv.push_back(double(in[i]));
          yv.push_back(i % 2 ? double(in[(i * 5 + 1) % in.size()]) : double(int(i % 9) - 4));
        }
      }
    });
    const int64_t n = int64_t(xv.size());
    const Tensor x = make(xv, {n}, d), y = make(yv, {n}, d);
    // (x, y): contiguous; every other element; y broadcast; x broadcast.
    const std::pair<Tensor, Tensor> layouts[] = {{x, y},
                                                 {x.slice(0, 0, n, 2), y.slice(0, 1, n, 2)},
                                                 {x, y.select(0, 4).expand({n})},
                                                 {x.select(0, 5).expand({n}), y}};
    for (int l = 0; l < 4; ++l) {
      std::vector<Tensor> outs;
      for (auto& t : tables) {
        Tensor out = zeros(layouts[l].first.sizes(), TensorOptions().dtype(d));
        std::vector<Tensor> in = {layouts[l].first, layouts[l].second};
        ElementwiseLoop(out, in).run(t.op[int(OpId::Pow)][int(d)], nullptr);
        outs.push_back(out);
      }
      const size_t bytes = outs[0].numel() * itemsize(d);
      for (int k = 1; k < 3; ++k)
        EXPECT_EQ(0, std::memcmp(outs[0].raw_data(), outs[k].raw_data(), bytes))
            << "pow " << dname(d) << " layout " << l << " isa " << k;
      const Tensor want = pow(layouts[l].first, layouts[l].second).contiguous();
      EXPECT_EQ(0, std::memcmp(outs[0].raw_data(), want.raw_data(), bytes))
          << "pow " << dname(d) << " dispatched, layout " << l;
      visit_dtype(d, [&]<class T>(TypeTag<T>) {
        if constexpr (std::is_floating_point_v<T>) {
          const Tensor a = layouts[l].first.contiguous(), b = layouts[l].second.contiguous();
          const T* o = static_cast<const T*>(outs[0].raw_data());
          for (int64_t i = 0; i < a.numel(); i += 7) {
            const T s = pointwise::PowF(nullptr)(static_cast<const T*>(a.raw_data())[i],
                                                 static_cast<const T*>(b.raw_data())[i]);
            EXPECT_EQ(0, std::memcmp(&s, &o[i], sizeof(T))) << "pow one lane, layout " << l;
          }
        }
      });
      ++checked;
    }
    // tensor ^ scalar: exponents the functor special-cases (2, 0.5, 1) and general ones.
    for (double e : {2.0, 0.5, 1.0, 3.0, -1.5, 0.3, 1e10}) {
      const Scalar ps[1] = {Scalar(e)};
      for (const Tensor& a : {x, x.slice(0, 0, n, 3)}) {
        std::vector<Tensor> outs;
        for (auto& t : tables) {
          Tensor out = zeros(a.sizes(), TensorOptions().dtype(d));
          std::vector<Tensor> in = {a};
          ElementwiseLoop(out, in).run(t.op[int(OpId::PowScalar)][int(d)], ps);
          outs.push_back(out);
        }
        const size_t bytes = outs[0].numel() * itemsize(d);
        for (int k = 1; k < 3; ++k)
          EXPECT_EQ(0, std::memcmp(outs[0].raw_data(), outs[k].raw_data(), bytes))
              << "pow_scalar " << e << " " << dname(d) << " isa " << k;
        const Tensor want = a.pow(e).contiguous();
        EXPECT_EQ(0, std::memcmp(outs[0].raw_data(), want.raw_data(), bytes))
            << "pow_scalar " << e << " " << dname(d) << " dispatched";
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 2 * (4 + 14));
}

// The eager kernels of every ISA, on every layout, against one lane of the vector code.
TEST(VecmathIsa, EagerOpsIdenticalOnEveryIsaAndLayout) {
  // Baseline against every ISA up to the active one (AVX2 without AVX-512; tests/isa_util.h).
  // With baseline only, the layouts and the dispatched op are still checked against each other.
  const int isas =
      kiln::testing::isas_to_compare("VecmathIsa.EagerOpsIdenticalOnEveryIsaAndLayout");
  static PointwiseTable tables[3];
  isa_baseline::fill_pointwise_table(tables[0]);
  if (isas >= 2) isa_avx2::fill_pointwise_table(tables[1]);
  if (isas >= 3) isa_avx512::fill_pointwise_table(tables[2]);
  const OpId ops[] = {OpId::Exp,  OpId::Log, OpId::Log1p, OpId::Expm1, OpId::Tanh, OpId::Sigmoid,
                      OpId::Silu, OpId::Erf, OpId::Sin,   OpId::Cos,   OpId::Gelu, OpId::GeluTanh};
  int checked = 0;
  for (DType d : {kFloat32, kFloat64}) {
    std::vector<double> v;
    visit_dtype(d, [&]<class T>(TypeTag<T>) {
      if constexpr (std::is_floating_point_v<T>)
        for (T x : inputs<T>(3001)) v.push_back(double(x));
    });
    const int64_t n = int64_t(v.size());
    for (OpId id : ops) {
      const Tensor base = make(v, {n}, d);
      // contiguous, every other element, a broadcast 0-dim value
      const Tensor layouts[] = {base, base.slice(0, 0, n, 2), base.select(0, 3).expand({37})};
      for (int l = 0; l < 3; ++l) {
        const Tensor& a = layouts[l];
        std::vector<Tensor> outs;
        for (int k = 0; k < isas; ++k) {
          const PointwiseTable& t = tables[k];
          Tensor out = zeros(a.sizes(), TensorOptions().dtype(d));
          std::vector<Tensor> in = {a};
          ElementwiseLoop(out, in).run(t.op[int(id)][int(d)], nullptr);
          outs.push_back(out);
        }
        const size_t bytes = outs[0].numel() * itemsize(d);
        for (int k = 1; k < isas; ++k)
          EXPECT_EQ(0, std::memcmp(outs[0].raw_data(), outs[k].raw_data(), bytes))
              << op_name(id) << " " << dname(d) << " layout " << l << " isa " << k;
        // The dispatched op (active ISA) and the layouts agree element by element.
        Tensor y = dispatch(id, {&a, 1}, Attrs{});
        EXPECT_EQ(0, std::memcmp(outs[0].raw_data(), y.contiguous().raw_data(), bytes))
            << op_name(id) << " " << dname(d) << " dispatched, layout " << l;
        if (l == 1) {
          Tensor yc = dispatch(id, {&base, 1}, Attrs{});
          Tensor every2 = yc.slice(0, 0, n, 2).contiguous();
          EXPECT_EQ(0, std::memcmp(outs[0].raw_data(), every2.raw_data(), bytes))
              << op_name(id) << " strided vs contiguous";
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 72);
}

}  // namespace

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

TEST(VecmathIsa, EveryWidthGivesTheSameBits){
    KILN_VM_WIDTHS(exp) KILN_VM_WIDTHS(expm1) KILN_VM_WIDTHS(log) KILN_VM_WIDTHS(log1p)
        KILN_VM_WIDTHS(tanh) KILN_VM_WIDTHS(sigmoid) KILN_VM_WIDTHS(silu) KILN_VM_WIDTHS(erf)
            KILN_VM_WIDTHS(gelu) KILN_VM_WIDTHS(gelu_tanh) KILN_VM_WIDTHS(sin) KILN_VM_WIDTHS(cos)}

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

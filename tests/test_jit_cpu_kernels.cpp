// The CPU kernel target (jit/cpu/) driven directly: hand-built loop kernels compiled with
// jit::cpu_target().compile() and launched with LaunchArgs, on every ISA path the host runs
// (KILN_JIT_ISA is read at compile time), in both dtypes, for every expression op the target
// supports, against a scalar reference computed as the eager functors compute (bitwise, NaN
// canonicalized). Sizes around the vector width (tails), rank 1 to 4, broadcast, transposed and
// gapped operands, offsets, non-contiguous outputs, special values, runtime parameters, launches
// above the parallel grain on 1 and 2 threads (row and inner-range splits), and the injected
// codegen fault.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/cpu/cpu_target.h"
#include "jit/target.h"
#include "jit_kernel_util.h"
#include "runtime/parallel.h"
#include "suite_passes.h"
#include "tracer/region_runner.h"

namespace kiln::jit {
namespace {

using kiln::testing::canonical_bits;
using kiln::testing::ConfigOverride;
using kiln::testing::jit_lanes;
using kiln::testing::reference_eval;
using kiln::testing::supported_jit_isas;

// Where an operand lives: strides in elements per dim of the index space, an offset, and the
// buffer's length (with guard elements after the last one addressed).
struct Layout {
  std::vector<int64_t> strides;
  int64_t offset = 0;
  int64_t length = 0;
};

enum class Kind { Contiguous, Transposed, Gapped, Broadcast };

// A layout of kind `kind` over `sizes`. Outputs never broadcast.
Layout make_layout(const std::vector<int64_t>& sizes, Kind kind, std::mt19937& rng) {
  const size_t r = sizes.size();
  std::vector<size_t> order(r);  // storage order, innermost last
  std::iota(order.begin(), order.end(), 0);
  if (kind == Kind::Transposed && r >= 2) {
    std::shuffle(order.begin(), order.end(), rng);
    if (std::is_sorted(order.begin(), order.end())) std::swap(order[r - 1], order[r - 2]);
  }
  Layout l;
  l.strides.assign(r, 0);
  int64_t stride = kind == Kind::Gapped ? 2 : 1;
  for (size_t i = r; i-- > 0;) {
    const size_t d = order[i];
    l.strides[d] = stride;
    stride *= sizes[d];
    if (kind == Kind::Gapped) stride += 3;
  }
  if (kind == Kind::Broadcast) {
    bool any = false;
    for (size_t d = 0; d < r; ++d)
      if (sizes[d] > 1 && rng() % 2) l.strides[d] = 0, any = true;
    if (!any) l.strides[r - 1] = 0;
  }
  for (size_t d = 0; d < r; ++d)  // a size-1 dim's stride is never used: make it odd
    if (sizes[d] == 1) l.strides[d] = static_cast<int64_t>(rng() % 5) + 7;
  l.offset = kind == Kind::Contiguous ? 0 : static_cast<int64_t>(rng() % 5);
  int64_t last = l.offset;
  for (size_t d = 0; d < r; ++d)
    if (sizes[d] > 0) last += (sizes[d] - 1) * l.strides[d];
  l.length = last + 1 + 17;
  return l;
}

// Special values first, then ordinary ones over many magnitudes.
template <class T>
std::vector<T> special_values() {
  using L = std::numeric_limits<T>;
  return {T(0),
          -T(0),
          L::infinity(),
          -L::infinity(),
          L::quiet_NaN(),
          -L::quiet_NaN(),
          L::denorm_min(),
          -L::denorm_min(),
          L::min(),
          -L::min(),
          L::min() / 3,
          L::max(),
          L::lowest(),
          T(1),
          T(-1),
          T(0.5),
          T(2),
          T(-3),
          L::epsilon(),
          T(1e-30),
          T(4.5e7),  // past the sin/cos vector reduction of both dtypes: libm lanes
          T(-1.25e12)};
}

template <class T>
T draw_value(std::mt19937& rng) {
  static const std::vector<T> specials = special_values<T>();
  if (rng() % 4 == 0) return specials[rng() % specials.size()];
  std::normal_distribution<double> nd;
  std::uniform_real_distribution<double> ex(-3, 3);
  return static_cast<T>(nd(rng) * std::pow(10.0, ex(rng)));
}

template <class T>
T sentinel() {
  return static_cast<T>(-12345.75);
}

// One launch of `kernel` over `sizes` with these operand layouts, checked against the scalar
// reference of its source: every output element, and every element around them untouched.
// `threads`: num_threads() during the launch. `alias_out0_in0`: output 0 is input 0's buffer
// (the layouts must then match). Returns the output buffers for cross-checks.
template <class T>
std::vector<std::vector<T>> check_launch(CompiledKernel& kernel, const std::vector<int64_t>& sizes,
                                         const std::vector<Layout>& layouts,
                                         const std::vector<double>& params, std::mt19937& rng,
                                         const std::string& what, int threads = 1,
                                         bool alias_out0_in0 = false) {
  const LoopKernel& k = kernel.source();
  const int nout = k.num_outputs(), nin = k.num_inputs(), nops = k.num_operands();
  EXPECT_EQ(static_cast<int>(layouts.size()), nops) << what;
  std::vector<std::vector<T>> bufs(static_cast<size_t>(nops));
  for (int j = 0; j < nops; ++j) {
    bufs[j].resize(static_cast<size_t>(layouts[j].length));
    for (T& x : bufs[j]) x = j < nout ? sentinel<T>() : draw_value<T>(rng);
  }
  if (alias_out0_in0) bufs[0] = bufs[nout];
  std::vector<std::vector<T>> want(bufs.begin(), bufs.begin() + nout);

  // The reference, element by element.
  int64_t total = 1;
  for (int64_t s : sizes) total *= s;
  std::vector<int64_t> idx(sizes.size(), 0);
  std::vector<T> in(static_cast<size_t>(std::max(nin, 1))), out(static_cast<size_t>(nout));
  for (int64_t e = 0; e < total; ++e) {
    for (int j = 0; j < nin; ++j) {
      const Layout& l = layouts[nout + j];
      int64_t off = l.offset;
      for (size_t d = 0; d < sizes.size(); ++d) off += idx[d] * l.strides[d];
      in[j] = bufs[nout + j][off];
    }
    reference_eval<T>(k, in.data(), params.data(), out.data());
    for (int j = 0; j < nout; ++j) {
      const Layout& l = layouts[j];
      int64_t off = l.offset;
      for (size_t d = 0; d < sizes.size(); ++d) off += idx[d] * l.strides[d];
      want[j][off] = out[j];
    }
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }

  LaunchArgs la;
  la.sizes = DimVector(sizes.begin(), sizes.end());
  for (int j = 0; j < nops; ++j) {
    T* base = (alias_out0_in0 && j == nout) ? bufs[0].data() : bufs[j].data();
    la.ptrs.push_back(reinterpret_cast<char*>(base + layouts[j].offset));
    DimVector st;
    for (int64_t s : layouts[j].strides) st.push_back(s * static_cast<int64_t>(sizeof(T)));
    la.strides.push_back(st);
  }
  const std::vector<Scalar> scalars(params.begin(), params.end());
  la.params = std::span<const Scalar>(scalars.data(), scalars.size());
  {
    const int saved = config().num_threads;
    set_num_threads(threads);
    kernel.launch(la);
    set_num_threads(saved);
  }
  for (int j = 0; j < nout; ++j) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < want[j].size(); ++i)
      if (canonical_bits(want[j][i]) != canonical_bits(bufs[j][i]) && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0u) << what << ": output " << j << ": " << bad << " element(s) differ, first at "
                       << first << ": got " << bufs[j][first] << ", want " << want[j][first] << "\n"
                       << to_text(k);
  }
  bufs.resize(static_cast<size_t>(nout));
  return bufs;
}

// Contiguous layouts for every operand.
std::vector<Layout> contiguous(const LoopKernel& k, const std::vector<int64_t>& sizes,
                               std::mt19937& rng) {
  std::vector<Layout> ls;
  for (int j = 0; j < k.num_operands(); ++j)
    ls.push_back(make_layout(sizes, Kind::Contiguous, rng));
  return ls;
}

// The kernels that exercise one expression op: on loads, on a param, on a constant.
std::vector<LoopKernel> kernels_for(ExprOp op, DType dtype) {
  std::vector<LoopKernel> out;
  auto base = [&](int inputs, int params) { return LoopKernel::uniform(dtype, inputs, params); };
  if (expr_is_compare(op)) {
    LoopKernel k = base(2, 1);
    const int32_t x = k.load(0), y = k.load(1), p = k.param(0);
    const int32_t one = k.constant(1.0, k.inputs[0]), mz = k.constant(-0.0, k.inputs[0]);
    k.stores = {k.select(k.binary(op, x, y), x, y), k.select(k.binary(op, y, p), one, mz),
                k.select(k.binary(op, k.constant(0.5, k.inputs[0]), x), y, one)};
    out.push_back(k);
  } else if (expr_arity(op) == 2) {
    LoopKernel k = base(2, 0);
    k.stores = {k.binary(op, k.load(0), k.load(1))};
    out.push_back(k);
    LoopKernel kp = base(1, 1);
    const int32_t x = kp.load(0);
    kp.stores = {kp.binary(op, x, kp.param(0)), kp.binary(op, kp.param(0), x)};
    out.push_back(kp);
    LoopKernel kc = base(1, 0);
    const int32_t xc = kc.load(0);
    kc.stores = {kc.binary(op, kc.constant(-1.5, kc.inputs[0]), xc),
                 kc.binary(op, xc, kc.constant(0.0, kc.inputs[0])), kc.binary(op, xc, xc)};
    out.push_back(kc);
  } else {
    LoopKernel k = base(1, 1);
    const int32_t x = k.load(0);
    k.stores = {k.unary(op, x), k.unary(op, k.param(0)), k.unary(op, k.unary(op, x))};
    out.push_back(k);
  }
  return out;
}

std::vector<ExprOp> computed_ops() {
  std::vector<ExprOp> ops;
  for (int i = 0; i < static_cast<int>(ExprOp::kCount); ++i) {
    const auto op = static_cast<ExprOp>(i);
    if (op == ExprOp::Load || op == ExprOp::Const || op == ExprOp::Param || op == ExprOp::Select ||
        op == ExprOp::Cast || op == ExprOp::And || op == ExprOp::Or || op == ExprOp::Not ||
        op == ExprOp::RandUniform)
      continue;  // (the other types: test_jit_dtypes.cpp; random draws: test_jit_random.cpp)
    ops.push_back(op);
  }
  return ops;
}

template <class T>
std::vector<double> some_params(std::mt19937& rng, int n) {
  std::vector<double> p;
  for (int i = 0; i < n; ++i) p.push_back(static_cast<double>(draw_value<T>(rng)));
  return p;
}

template <class T>
void every_op_on(const std::string& isa, std::mt19937& rng) {
  constexpr DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  const int L = jit_lanes(isa, sizeof(T));
  // 2L - 1 .. 4L: the paired loop (two vectors per iteration, transcendental kernels on AVX-512)
  // with no, one full and one partial masked iteration after it.
  const std::vector<int64_t> lengths = {0,         1,     L - 1,     L,     L + 1, 2 * L - 1, 2 * L,
                                        2 * L + 3, 3 * L, 3 * L + 1, 4 * L, 1000,  1031};
  int tested = 0;
  for (ExprOp op : computed_ops()) {
    if (!cpu_target().supports(op, dtype)) continue;
    ++tested;
    for (const LoopKernel& k : kernels_for(op, dtype)) {
      std::shared_ptr<CompiledKernel> ck;
      {
        ConfigOverride<std::string> isa_override(config().jit_isa, isa);
        ck = cpu_target().compile(k);
      }
      const std::string what = fmt::format("{} {} {}", isa, dtype_name(dtype), expr_op_name(op));
      for (int64_t n : lengths) {
        const std::vector<int64_t> sizes = {n};
        check_launch<T>(*ck, sizes, contiguous(k, sizes, rng), some_params<T>(rng, k.num_params()),
                        rng, what + fmt::format(" n={}", n));
      }
      // Every special value against every other, at every lane position.
      const std::vector<T> sp = special_values<T>();
      const auto ns = static_cast<int64_t>(sp.size());
      for (double p : {0.0, -0.0, std::numeric_limits<double>::quiet_NaN(), 1.0, -1e300}) {
        // The specials as inputs (check_launch draws its own values): input 0 varies along dim
        // 0, input 1 along dim 1.
        std::vector<std::vector<T>> out(static_cast<size_t>(k.num_outputs()),
                                        std::vector<T>(static_cast<size_t>(ns * ns)));
        std::vector<T> in = sp;
        LaunchArgs la;
        la.sizes = {ns, ns};
        for (auto& o : out) {
          la.ptrs.push_back(reinterpret_cast<char*>(o.data()));
          la.strides.push_back(
              {ns * static_cast<int64_t>(sizeof(T)), static_cast<int64_t>(sizeof(T))});
        }
        for (int j = 0; j < k.num_inputs(); ++j) {
          la.ptrs.push_back(reinterpret_cast<char*>(in.data()));
          la.strides.push_back(j == 0 ? DimVector{static_cast<int64_t>(sizeof(T)), 0}
                                      : DimVector{0, static_cast<int64_t>(sizeof(T))});
        }
        const std::vector<double> params(static_cast<size_t>(k.num_params()), p);
        const std::vector<Scalar> scalars(params.begin(), params.end());
        la.params = std::span<const Scalar>(scalars.data(), scalars.size());
        ck->launch(la);
        std::vector<T> want(static_cast<size_t>(k.num_outputs()));
        for (int64_t a = 0; a < ns; ++a)
          for (int64_t b = 0; b < ns; ++b) {
            const T vals[2] = {sp[a], sp[b]};
            reference_eval<T>(k, vals, params.data(), want.data());
            for (int j = 0; j < k.num_outputs(); ++j)
              EXPECT_EQ(canonical_bits(out[j][a * ns + b]), canonical_bits(want[j]))
                  << what << " specials " << sp[a] << ", " << sp[b] << " param " << p << " output "
                  << j << ": got " << out[j][a * ns + b] << " want " << want[j];
          }
      }
      // Broadcast rows and columns, a transposed and a gapped operand, a non-contiguous output.
      for (Kind kind : {Kind::Broadcast, Kind::Transposed, Kind::Gapped}) {
        const std::vector<int64_t> sizes = {5, 2 * L + 1};
        std::vector<Layout> ls;
        for (int j = 0; j < k.num_operands(); ++j) {
          const bool output = j < k.num_outputs();
          ls.push_back(
              make_layout(sizes, output && kind == Kind::Broadcast ? Kind::Gapped : kind, rng));
        }
        check_launch<T>(*ck, sizes, ls, some_params<T>(rng, k.num_params()), rng,
                        what + " 2-D layouts");
      }
    }
  }
  EXPECT_GE(tested, 20) << isa << ": the target supports fewer ops than expected";
}

TEST(JitCpuKernels, EveryOpEveryIsaBothDtypes) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  std::mt19937 rng(1);
  for (const std::string& isa : supported_jit_isas()) {
    SCOPED_TRACE(isa);
    every_op_on<float>(isa, rng);
    every_op_on<double>(isa, rng);
  }
}

// A fused kernel with three inputs, a parameter and two outputs.
LoopKernel fused_kernel(DType dtype) {
  LoopKernel k = LoopKernel::uniform(dtype, 3, 1);
  const int32_t a = k.load(0), b = k.load(1), c = k.load(2), p = k.param(0);
  const int32_t ab = k.binary(ExprOp::Mul, a, b);
  const int32_t mx = k.binary(ExprOp::Maximum, ab, c);
  const int32_t q = k.binary(ExprOp::Div, k.binary(ExprOp::Sub, a, p), c);
  const int32_t s = k.select(k.binary(ExprOp::Lt, a, b), mx, q);
  const int32_t t = k.unary(
      ExprOp::Abs, k.binary(ExprOp::Add, k.unary(ExprOp::Sqrt, a), k.unary(ExprOp::Neg, b)));
  k.stores = {s, k.binary(ExprOp::Minimum, t, k.unary(ExprOp::Relu, s))};
  return k;
}

template <class T>
void layouts_on(const std::string& isa, std::mt19937& rng) {
  constexpr DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  const int L = jit_lanes(isa, sizeof(T));
  const LoopKernel k = fused_kernel(dtype);
  std::shared_ptr<CompiledKernel> ck;
  {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    ck = cpu_target().compile(k);
  }
  const std::vector<int64_t> dims = {1, 2, 3, L - 1, L, L + 1, 2 * L + 3, 37};
  for (int c = 0; c < 80; ++c) {
    const int rank = 1 + c % 4;
    std::vector<int64_t> sizes;
    int64_t total = 1;
    for (int d = 0; d < rank; ++d) {
      int64_t s = dims[rng() % dims.size()];
      if (total * s > 6000) s = 1;
      sizes.push_back(s);
      total *= s;
    }
    std::vector<Layout> ls;
    for (int j = 0; j < k.num_operands(); ++j) {
      const bool output = j < k.num_outputs();
      Kind kind = static_cast<Kind>(rng() % (output ? 3 : 4));
      ls.push_back(make_layout(sizes, kind, rng));
    }
    std::string what = fmt::format("{} {} case {} sizes [", isa, dtype_name(dtype), c);
    for (int64_t s : sizes) what += fmt::format("{} ", s);
    what += "] strides";
    for (const Layout& l : ls) {
      what += " (";
      for (int64_t s : l.strides) what += fmt::format("{} ", s);
      what += fmt::format("+{})", l.offset);
    }
    check_launch<T>(*ck, sizes, ls, some_params<T>(rng, 1), rng, what);
    if (c % 8 == 0) {  // output 0 written over input 0 (an in-place update): same layout
      std::vector<Layout> al = ls;
      al[2] = make_layout(sizes, static_cast<Kind>(rng() % 3), rng);  // input 0
      al[0] = al[2];
      check_launch<T>(*ck, sizes, al, some_params<T>(rng, 1), rng, what + " aliased", 1, true);
    }
  }
}

TEST(JitCpuKernels, RanksBroadcastStridesOffsetsEveryIsa) {
  std::mt19937 rng(2);
  for (const std::string& isa : supported_jit_isas()) {
    SCOPED_TRACE(isa);
    layouts_on<float>(isa, rng);
    layouts_on<double>(isa, rng);
  }
}

template <class T>
void parallel_on(const std::string& isa, std::mt19937& rng) {
  constexpr DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  const LoopKernel k = fused_kernel(dtype);
  std::shared_ptr<CompiledKernel> ck;
  {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    ck = cpu_target().compile(k);
  }
  // Many rows (a row split), few long rows (an inner-range split), one row, odd lengths.
  const std::vector<std::vector<int64_t>> shapes = {
      {97, 1031}, {3, 40007}, {kParallelGrain + 13}, {2, 3, 9001}, {1, 2 * kParallelGrain + 65}};
  for (const auto& sizes : shapes) {
    for (Kind out_kind : {Kind::Contiguous, Kind::Transposed}) {
      std::vector<Layout> ls;
      for (int j = 0; j < k.num_operands(); ++j) {
        Kind kind = j < k.num_outputs() ? out_kind : static_cast<Kind>(rng() % 4);
        if (j == k.num_outputs()) kind = Kind::Contiguous;
        ls.push_back(make_layout(sizes, kind, rng));
      }
      const std::vector<double> params = some_params<T>(rng, 1);
      std::string what = fmt::format("{} {} [{}] numel", isa, dtype_name(dtype), sizes.size());
      const uint32_t seed = rng();
      std::mt19937 r1(seed), r2(seed);
      const auto one = check_launch<T>(*ck, sizes, ls, params, r1, what + " 1 thread", 1);
      const auto two = check_launch<T>(*ck, sizes, ls, params, r2, what + " 2 threads", 2);
      for (size_t j = 0; j < one.size(); ++j)
        EXPECT_TRUE(one[j] == two[j] ||
                    std::memcmp(one[j].data(), two[j].data(), one[j].size() * sizeof(T)) == 0)
            << what << ": 1 and 2 threads differ";
    }
  }
}

TEST(JitCpuKernels, AboveTheParallelGrainOneAndTwoThreads) {
  KILN_SWEEPS_EVERY_ISA_ITSELF();
  std::mt19937 rng(3);
  for (const std::string& isa : supported_jit_isas()) {
    SCOPED_TRACE(isa);
    parallel_on<float>(isa, rng);
    parallel_on<double>(isa, rng);
  }
}

TEST(JitCpuKernels, EmptyIndexSpacesWriteNothing) {
  std::mt19937 rng(4);
  for (const std::string& isa : supported_jit_isas()) {
    const LoopKernel k = fused_kernel(DType::Float32);
    std::shared_ptr<CompiledKernel> ck;
    {
      ConfigOverride<std::string> isa_override(config().jit_isa, isa);
      ck = cpu_target().compile(k);
    }
    for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{
             {0}, {3, 0}, {0, 5}, {2, 0, 4}, {1, 1, 0}, {0, 1, 1, 7}}) {
      std::vector<Layout> ls;
      for (int j = 0; j < k.num_operands(); ++j) {
        Layout l = make_layout(sizes, Kind::Contiguous, rng);
        l.length = 64;  // something to be left alone
        ls.push_back(l);
      }
      check_launch<float>(*ck, sizes, ls, {1.0}, rng, isa + " empty");
    }
    // Rank 0: one element.
    check_launch<float>(*ck, {}, contiguous(k, {}, rng), {2.0}, rng, isa + " rank 0");
  }
}

TEST(JitCpuKernels, RuntimeParamsChangeBetweenLaunches) {
  std::mt19937 rng(5);
  for (const std::string& isa : supported_jit_isas()) {
    for (DType dtype : {DType::Float32, DType::Float64}) {
      LoopKernel k = LoopKernel::uniform(dtype, 1, 3);
      const int32_t x = k.load(0);
      k.stores = {k.binary(ExprOp::Add, k.binary(ExprOp::Mul, x, k.param(0)), k.param(2)),
                  k.binary(ExprOp::Div, k.param(1), x)};
      std::shared_ptr<CompiledKernel> ck;
      {
        ConfigOverride<std::string> isa_override(config().jit_isa, isa);
        ck = cpu_target().compile(k);
      }
      const std::vector<int64_t> sizes = {37};
      const double nan = std::numeric_limits<double>::quiet_NaN();
      for (const std::vector<double>& p : std::vector<std::vector<double>>{
               {0.1, 1e-320, -0.0},
               {1e300, -1e300, 3.0},  // not representable in Float32: inf
               {nan, 0.0, 1e-45},
               {1.0 / 3.0, 7.0, 16777217.0},  // 2^24 + 1 rounds in Float32
               {-2.5, std::numeric_limits<double>::infinity(), 0.0}}) {
        if (dtype == DType::Float32)
          check_launch<float>(*ck, sizes, contiguous(k, sizes, rng), p, rng, isa + " f32 params");
        else
          check_launch<double>(*ck, sizes, contiguous(k, sizes, rng), p, rng, isa + " f64 params");
      }
    }
  }
}

// Kernels with many runtime parameters: one per promoted scalar of a fused chain.
template <class T>
void many_params(int n) {
  constexpr DType dtype = std::is_same_v<T, float> ? DType::Float32 : DType::Float64;
  std::mt19937 rng(6);
  LoopKernel k = LoopKernel::uniform(dtype, 1, n);
  int32_t v = k.load(0);
  for (int p = 0; p < n; ++p) v = k.binary(p % 2 ? ExprOp::Mul : ExprOp::Add, v, k.param(p));
  k.stores = {v};
  for (const std::string& isa : supported_jit_isas()) {
    std::shared_ptr<CompiledKernel> ck;
    {
      ConfigOverride<std::string> isa_override(config().jit_isa, isa);
      ck = cpu_target().compile(k);
    }
    std::vector<double> params;
    for (int p = 0; p < n; ++p) params.push_back(1.0 + p * 0.125);
    const std::vector<int64_t> sizes = {41};
    check_launch<T>(*ck, sizes, contiguous(k, sizes, rng), params, rng,
                    fmt::format("{} {} params", isa, n));
  }
}

TEST(JitCpuKernels, SixteenParams) {
  many_params<float>(16);
  many_params<double>(16);
}

// Regression (fixed in jit/cpu/cpu_kernel.cpp, CpuKernel::launch): the launch copied the
// parameters into a fixed 16-entry stack buffer and dropped every one past the 16th, while the
// kernel still read param k at params + k * sizeof(T) (uninitialized bytes, or past the buffer).
// Nothing caps a kernel's parameters: the planner makes one per promoted scalar of a group.
TEST(JitCpuKernels, MoreThanSixteenParams) {
  many_params<float>(17);
  many_params<float>(40);
  many_params<double>(17);
  many_params<double>(24);
}

TEST(JitCpuKernels, IsaIsCapturedAtCompileTimeAndKeysTheCache) {
  const std::vector<std::string> isas = supported_jit_isas();
  LoopKernel k;
  k.inputs.assign(1, DType::Float32);
  k.stores = {
      k.binary(ExprOp::Mul, k.load(0), k.constant(0.8125, k.inputs[0]))};  // unique to this test
  CpuJitCounters& c = cpu_jit_counters();
  std::vector<std::shared_ptr<CompiledKernel>> compiled;
  for (const std::string& isa : isas) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    EXPECT_EQ(std::string(cpu_target().name()), "cpu-" + isa);
    const int64_t before = c.kernels.load();
    compiled.push_back(cpu_target().compile(k));
    EXPECT_EQ(c.kernels.load(), before + 1) << isa << ": a new ISA renders a new function";
    const int64_t again = c.kernels.load();
    cpu_target().compile(k);  // the same kernel and ISA: the kernel cache's code
    EXPECT_EQ(c.kernels.load(), again) << isa;
  }
  // Launched under another setting, each runs the ISA it was compiled for (all right).
  std::mt19937 rng(7);
  ConfigOverride<std::string> other(config().jit_isa, "sse2");
  for (size_t i = 0; i < compiled.size(); ++i) {
    const std::vector<int64_t> sizes = {1000};
    check_launch<float>(*compiled[i], sizes, contiguous(k, sizes, rng), {}, rng, isas[i]);
  }
}

// A kernel compiled for a large index space renders the variants its launches take while
// planning, and none at the launches: with non-temporal stores (every output of kStreamingBytes
// or more) under KILN_JIT_STREAMING=on, and with both kinds of stores under auto, which times
// them (store_choice.h): one rendering, the streaming one, and its ordinary-stores twin
// (render.h); one compiled without the size renders the plain variant and then the streaming
// one at its first launch (no twin: the plain variant is there).
TEST(JitCpuKernels, CompileForALargeIndexSpaceRendersTheVariantsItsLaunchesTake) {
  constexpr int64_t kN = (int64_t{8} << 20) / 4 + 48;  // 8 MiB of Float32 and a tail
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> in(static_cast<float*>(std::aligned_alloc(64, kN * 4))),
      out(static_cast<float*>(std::aligned_alloc(64, kN * 4)));
  for (int64_t i = 0; i < kN; ++i) in[i] = static_cast<float>(i % 1000) - 500.5f;
  CpuJitCounters& c = cpu_jit_counters();
  for (const std::string& isa : supported_jit_isas()) {
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    for (const char* mode : {"on", "auto"})
      for (bool sized : {true, false}) {
        ConfigOverride<std::string> stores(config().jit_streaming, mode);
        const bool on = std::string(mode) == "on";
        LoopKernel k;
        k.inputs.assign(1, DType::Float32);
        // Constants unique to this test and case: rendered, not found in the kernel cache.
        const double c0 = (sized ? 1.0 : 2.0) + (on ? 0.0 : 4.0) +
                          (isa == "sse2"   ? 0.25
                           : isa == "avx2" ? 0.5
                                           : 0.75);
        k.stores = {k.binary(ExprOp::Mul, k.load(0), k.constant(c0, DType::Float32))};
        const int64_t before = c.kernels.load(), twins = c.twins.load();
        std::shared_ptr<CompiledKernel> kernel =
            cpu_target().compile(k, CpuLaunchHint{sized ? kN : 0, false});
        // Both kinds of stores: one rendering and its twin on the fast path, two renderings by
        // the Compiler (KILN_JIT_ASSEMBLER=0: ctest's jit_compiler pass), which makes no twin.
        const bool both = sized && !on, twin = both && config().jit_assembler;
        const int64_t compiled = both && !twin ? 2 : 1;
        EXPECT_EQ(c.kernels.load(), before + compiled) << isa << " " << mode << " sized " << sized;
        EXPECT_EQ(c.twins.load(), twins + (twin ? 1 : 0))
            << isa << " " << mode << " sized " << sized;
        LaunchArgs la;
        la.sizes = {kN};
        la.ptrs = {reinterpret_cast<char*>(out.get()), reinterpret_cast<char*>(in.get())};
        la.strides = {DimVector{4}, DimVector{4}};
        for (int l = 0; l < (on ? 1 : 6); ++l) {  // auto: the cold launch, trials, the choice
          kernel->launch(la);
          EXPECT_EQ(c.kernels.load(), before + (sized ? compiled : 2))
              << isa << " " << mode << " sized " << sized << " launch " << l
              << ": the launches took variants rendered "
              << (sized ? "while compiling" : "at the first launch");
          for (int64_t i = 0; i < kN; ++i)
            ASSERT_EQ(out[i], in[i] * static_cast<float>(c0)) << isa << " element " << i;
        }
      }
  }
}

// Machine code is chosen per launch by every operand's inner layout: a kernel with more operands
// than fit in a 64-bit signature (here 40) must not run the code of another layout (a bug found by
// the JIT fuzzer: the signature overflowed and a broadcast input was read as contiguous).
TEST(JitCpuKernels, ManyOperandsKeepTheirLayoutVariantsApart) {
  constexpr int kInputs = 39, kN = 37;
  LoopKernel k = LoopKernel::uniform(DType::Float32, kInputs);
  int32_t acc = k.load(0);
  for (int32_t i = 1; i < kInputs; ++i) acc = k.binary(ExprOp::Add, acc, k.load(i));
  k.stores.push_back(acc);
  auto kernel = cpu_target().compile(k);
  std::vector<std::vector<float>> in(kInputs, std::vector<float>(kN));
  for (int i = 0; i < kInputs; ++i)
    for (int e = 0; e < kN; ++e) in[i][e] = static_cast<float>(i + 1) * (e + 1);
  for (bool broadcast_last : {false, true, false}) {
    std::vector<float> out(kN, -1.0f);
    LaunchArgs la;
    la.sizes = {kN};
    la.ptrs.push_back(reinterpret_cast<char*>(out.data()));
    la.strides.push_back(DimVector{4});
    for (int i = 0; i < kInputs; ++i) {
      la.ptrs.push_back(reinterpret_cast<char*>(in[i].data()));
      la.strides.push_back(DimVector{broadcast_last && i == kInputs - 1 ? 0 : 4});
    }
    kernel->launch(la);
    for (int e = 0; e < kN; ++e) {
      float want = in[0][e];
      for (int i = 1; i < kInputs; ++i)
        want += broadcast_last && i == kInputs - 1 ? in[i][0] : in[i][e];
      ASSERT_EQ(out[e], want) << "element " << e << ", broadcast last input: " << broadcast_last;
    }
  }
}

TEST(JitCpuKernels, InjectedCodegenFaultThrows) {
  for (const std::string& isa : supported_jit_isas()) {
    // A background render of an earlier test's plan would take the injected fault (one shard of
    // a KILN_JIT=1 run on the 16-core GPU host: the sse2 render threw nothing).
    tracer::wait_for_compiles();
    ConfigOverride<std::string> isa_override(config().jit_isa, isa);
    LoopKernel k;
    k.inputs.assign(1, DType::Float32);
    // A kernel no other test compiles (the fault hits renders, not cache hits).
    k.stores = {k.binary(ExprOp::Sub, k.load(0),
                         k.constant(isa == "sse2"   ? 0.0078125
                                    : isa == "avx2" ? 0.015625
                                                    : 0.03125,
                                    k.inputs[0]))};
    inject_cpu_codegen_faults(1);
    EXPECT_THROW(cpu_target().compile(k), Error) << isa;
    std::shared_ptr<CompiledKernel> ck;
    EXPECT_NO_THROW(ck = cpu_target().compile(k)) << isa << ": one fault injected, one consumed";
    ASSERT_TRUE(ck);
    std::mt19937 rng(8);
    const std::vector<int64_t> sizes = {19};
    check_launch<float>(*ck, sizes, contiguous(k, sizes, rng), {}, rng, isa + " after a fault");
  }
  inject_cpu_codegen_faults(0);
}

TEST(JitCpuKernels, CompileVerifiesTheKernel) {
  LoopKernel k;
  k.inputs.assign(1, DType::Float32);
  k.stores = {k.load(3)};
  EXPECT_THROW(cpu_target().compile(k), Error);
}

TEST(JitCpuKernels, LaunchWithTheWrongOperandCountThrows) {
  LoopKernel k;
  k.inputs.assign(2, DType::Float32);
  k.stores = {k.binary(ExprOp::Add, k.load(0), k.load(1))};
  auto ck = cpu_target().compile(k);
  float a = 1, b = 2;
  LaunchArgs la;
  la.sizes = {1};
  la.ptrs.push_back(reinterpret_cast<char*>(&a));
  la.ptrs.push_back(reinterpret_cast<char*>(&b));
  la.strides = {{4}, {4}};
  EXPECT_THROW(ck->launch(la), Error);
}

}  // namespace
}  // namespace kiln::jit

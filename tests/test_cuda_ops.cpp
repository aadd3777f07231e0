// On a GPU: CUDA tensors against the CPU. Transfers both ways (views, every dtype, more than the
// staging buffer), factories, every pointwise op and dtype with broadcast and strided operands
// (exact ops bitwise, NaNs compared as NaN; transcendentals within the bound docs/cuda.md
// states), in-place ops, the caching allocator's reuse and its out-of-memory error, and the
// errors of ops without a CUDA form. Every test skips, saying why, without a usable GPU.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_device_util.h"
#include "expect_error.h"
#include "kiln/kiln.h"
#include "runtime/cuda/device_memory.h"

namespace kiln {
namespace {

using testing::kAll;
using testing::kGpu;

// Values that exercise the edges: specials for floats, extremes for integers.
Tensor edge_values(DType d, int64_t n, uint64_t seed) {
  manual_seed(seed);
  Tensor base = (randn({n}, TensorOptions().dtype(DType::Float64)) * 8.0);
  std::vector<double> v = base.to_vector<double>();
  const double specials[] = {0.0,       -0.0, 1.0,          -1.0,          0.5,   -0.5,
                             2.5,       -2.5, 1e-40,        3e38,          -3e38, INFINITY,
                             -INFINITY, NAN,  2147483648.0, -2147483649.0, 1e19};
  for (size_t i = 0; i < std::size(specials) && i < v.size(); ++i)
    v[i * 3 % v.size()] = specials[i];
  Tensor t = from_vector(v, {n});
  if (d == DType::Bool) return t > 0.0;
  if (d == DType::Int32 || d == DType::Int64) {
    std::vector<int64_t> iv;
    for (double x : v)
      iv.push_back(std::isfinite(x) ? static_cast<int64_t>(std::fmod(x, 1000.0)) : 7);
    iv[1] = d == DType::Int32 ? INT32_MIN : INT64_MIN;
    iv[2] = d == DType::Int32 ? INT32_MAX : INT64_MAX;
    return from_vector(iv, {n}).to(d);
  }
  return t.to(d);
}

// ulps between two finite floats of one type (0 when both NaN or equal).
double ulps(double a, double b, DType d) {
  if (std::isnan(a) && std::isnan(b)) return 0;
  if (a == b) return 0;
  if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) return 1e30;
  auto ord = [&](double x) -> int64_t {
    if (d == DType::Float32) {
      int32_t i = std::bit_cast<int32_t>(static_cast<float>(x));
      return i < 0 ? INT32_MIN - int64_t{i} : i;
    }
    int64_t i = std::bit_cast<int64_t>(x);
    return i < 0 ? INT64_MIN - i : i;
  };
  return std::fabs(static_cast<double>(ord(a) - ord(b)));
}

// Exact: the same values and signs of zero (NaN for NaN, any payload: x86 and CUDA make
// different default NaNs).
// Otherwise within `max_ulps`, or `atol` where the result is near zero (cancellation).
void expect_match(const Tensor& cpu, const Tensor& gpu, const std::string& label, bool exact,
                  double max_ulps = 0, double atol = 0, double* worst = nullptr) {
  ASSERT_TRUE(gpu.device().is_cuda()) << label;
  ASSERT_EQ(cpu.dtype(), gpu.dtype()) << label;
  ASSERT_EQ(cpu.sizes(), gpu.sizes()) << label;
  const Tensor g = gpu.to(Device::cpu());
  if (!is_floating(cpu.dtype())) {
    EXPECT_EQ(cpu.to(DType::Int64).to_vector<int64_t>(), g.to(DType::Int64).to_vector<int64_t>())
        << label;
    return;
  }
  const std::vector<double> c = cpu.to(DType::Float64).to_vector<double>();
  const std::vector<double> x = g.to(DType::Float64).to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const double u = ulps(c[i], x[i], cpu.dtype());
    if (worst != nullptr && std::fabs(c[i] - x[i]) > atol) *worst = std::max(*worst, u);
    const bool same_zero = !(c[i] == 0 && std::signbit(c[i]) != std::signbit(x[i]));
    const bool ok = exact ? u == 0 && same_zero : (u <= max_ulps || std::fabs(c[i] - x[i]) <= atol);
    if (!ok && ++bad <= 3)
      ADD_FAILURE() << label << ": element " << i << " cpu " << c[i] << " cuda " << x[i] << " ("
                    << u << " ulp)";
  }
}

TEST(CudaTensors, TransfersBothWaysWithViews) {
  KILN_SKIP_WITHOUT_GPU();
  for (DType d : kAll) {
    const Tensor x = edge_values(d, 60, 1).view({3, 4, 5});
    const Tensor g = x.to(kGpu);
    EXPECT_EQ(g.device(), kGpu);
    expect_match(x, g, fmt::format("round trip {}", d), true);
    // A transposed CPU view goes over as its values; a strided CUDA view comes back likewise.
    expect_match(x.transpose(0, 2), x.transpose(0, 2).to(kGpu), fmt::format("view {}", d), true);
    expect_match(x.slice(1, 1, 4, 2).select(2, 3), g.slice(1, 1, 4, 2).select(2, 3),
                 fmt::format("cuda view {}", d), true);
  }
  // More than the 8 MiB staging buffer, in both directions.
  const Tensor big = arange(3'000'001, TensorOptions().dtype(DType::Float32));
  expect_match(big, big.to(kGpu), "12 MB", true);
  // Empty and 0-dim tensors; item() and to_vector() are sync points.
  EXPECT_EQ(zeros({0, 3}).to(kGpu).to(Device::cpu()).sizes(), Shape({0, 3}));
  EXPECT_EQ(full({}, 4.5).to(kGpu).item<double>(), 4.5);
  EXPECT_EQ(from_vector<int32_t>({1, 2, 3}, {3}).to(kGpu).to_vector<int64_t>(),
            std::vector<int64_t>({1, 2, 3}));
  // copy_ from the host into a device tensor, and from_vector straight onto the device.
  Tensor dst = zeros({2, 3}, TensorOptions().device(kGpu));
  dst.copy_(from_vector<float>({1, 2, 3}, {3}));
  EXPECT_EQ(dst.to_vector<float>(), std::vector<float>({1, 2, 3, 1, 2, 3}));
  const Tensor fv = from_vector<double>({1.5, 2.5}, {2}, TensorOptions().device(kGpu));
  EXPECT_EQ(fv.device(), kGpu);
  EXPECT_EQ(fv.to_vector<double>(), std::vector<double>({1.5, 2.5}));
}

TEST(CudaTensors, FactoriesAndPrinting) {
  KILN_SKIP_WITHOUT_GPU();
  for (DType d : kAll) {
    const auto o = TensorOptions().dtype(d).device(kGpu);
    expect_match(zeros({3, 2}, TensorOptions().dtype(d)), zeros({3, 2}, o), "zeros", true);
    expect_match(ones({3, 2}, TensorOptions().dtype(d)), ones({3, 2}, o), "ones", true);
    expect_match(full({5}, 0.75, TensorOptions().dtype(d)), full({5}, 0.75, o), "full", true);
    EXPECT_EQ(empty({4}, o).device(), kGpu);
  }
  std::ostringstream s;
  s << full({2}, 1.5, TensorOptions().device(kGpu));
  EXPECT_NE(s.str().find("1.5"), std::string::npos) << s.str();
  EXPECT_NE(s.str().find("device='cuda:0'"), std::string::npos) << s.str();
}

// The transcendentals' bound against the CPU (docs/cuda.md): CUDA's math library (<= 2 ulp for
// the functions used) against kiln's vector math, composed in sigmoid/silu/gelu.
constexpr double kTranscendentalUlps = 16;

TEST(CudaOps, PointwiseMatchesTheCpu) {
  KILN_SKIP_WITHOUT_GPU();
  using U = Tensor (*)(const Tensor&);
  const std::pair<const char*, U> exact_unary[] = {
      {"neg", [](const Tensor& x) { return neg(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"sign", [](const Tensor& x) { return sign(x); }},
      {"floor", [](const Tensor& x) { return floor(x); }},
      {"ceil", [](const Tensor& x) { return ceil(x); }},
      {"round", [](const Tensor& x) { return round(x); }},
      {"isnan", [](const Tensor& x) { return isnan(x); }},
      {"logical_not", [](const Tensor& x) { return logical_not(x); }},
      {"square", [](const Tensor& x) { return pow(x, 2.0); }},
      {"pow 0.5", [](const Tensor& x) { return pow(x, 0.5); }},
      {"clamp", [](const Tensor& x) { return clamp(x, -2.0, 3.0); }},
  };
  const std::pair<const char*, U> transcendental[] = {
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"log", [](const Tensor& x) { return log(x); }},
      {"log1p", [](const Tensor& x) { return log1p(x); }},
      {"expm1", [](const Tensor& x) { return expm1(x); }},
      {"sin", [](const Tensor& x) { return sin(x); }},
      {"cos", [](const Tensor& x) { return cos(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"silu", [](const Tensor& x) { return silu(x); }},
      {"erf", [](const Tensor& x) { return erf(x); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }},
      // General pow: CUDA's pow against vecmath::pow (integers: int_pow's products, exact).
      {"pow 2.5", [](const Tensor& x) { return pow(x, 2.5); }},
      {"pow 3", [](const Tensor& x) { return pow(x, 3); }},
      {"pow x^(|x|/2)", [](const Tensor& x) { return pow(x, abs(x) * 0.5); }},
  };
  std::map<std::string, double> worst;
  for (DType d : kAll) {
    const Tensor x = edge_values(d, 4096, 2);
    const Tensor g = x.to(kGpu);
    auto both = [&](const std::string& name, auto fn, bool exact, double max_ulps, double atol) {
      Tensor c;
      try {
        c = fn(x);
      } catch (const Error& e) {  // the CPU refuses the dtype: so must CUDA, saying the same
        testing::expect_error([&] { fn(g); }, std::string(e.what()).substr(0, 20));
        return;
      }
      double w = 0;
      const double tol = c.dtype() == DType::Float32 ? atol : atol * 1e-9;
      expect_match(c, fn(g), fmt::format("{} {}", name, d), exact, max_ulps, tol, &w);
      if (!exact && is_floating(d)) {
        auto key = fmt::format("{} {}", name, d);
        worst[key] = std::max(worst[key], w);
      }
    };
    for (auto& [name, fn] : exact_unary) both(name, fn, true, 0, 0);
    for (auto& [name, fn] : transcendental) both(name, fn, false, kTranscendentalUlps, 1e-6);
  }
  for (auto& [k, w] : worst) std::printf("  %-20s max %.0f ulp\n", k.c_str(), w);
}

TEST(CudaOps, BinaryWithBroadcastingPromotionAndStrides) {
  KILN_SKIP_WITHOUT_GPU();
  using B = Tensor (*)(const Tensor&, const Tensor&);
  const std::pair<const char*, B> ops[] = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }},
      {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }},
      {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }},
      {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }},
      {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }},
      {"logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); }},
      {"logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); }},
      {"scalar right", [](const Tensor& a, const Tensor&) { return a * 2.5; }},
      {"scalar left", [](const Tensor& a, const Tensor&) { return 3.0 - a; }},
      {"where", [](const Tensor& a, const Tensor& b) { return where(a > b, a, b); }},
      {"masked_fill", [](const Tensor& a, const Tensor& b) { return masked_fill(a, b > 0, 7); }},
  };
  for (DType da : kAll) {
    for (DType db : kAll) {
      // [4, 1, 6] against a transposed [5, 6] view: broadcast, strided, promoted.
      const Tensor a = edge_values(da, 24, 3).view({4, 1, 6});
      const Tensor b = edge_values(db, 30, 4).view({6, 5}).t();
      const Tensor ga = a.to(kGpu), gb = b.to(kGpu).t().contiguous().t();
      for (auto& [name, fn] : ops) {
        Tensor c;
        try {
          c = fn(a, b);
        } catch (const Error& e) {
          testing::expect_error([&] { fn(ga, gb); }, std::string(e.what()).substr(0, 12));
          continue;
        }
        expect_match(c, fn(ga, gb), fmt::format("{} {} {}", name, da, db), true);
      }
    }
  }
}

TEST(CudaOps, CastsAndInPlaceOps) {
  KILN_SKIP_WITHOUT_GPU();
  for (DType from : kAll) {
    const Tensor x = edge_values(from, 512, 5);
    const Tensor g = x.to(kGpu);
    for (DType to : kAll) expect_match(x.to(to), g.to(to), fmt::format("{} to {}", from, to), true);
  }
  // In place through a strided view of a device tensor.
  Tensor c = arange(24, TensorOptions().dtype(DType::Float32)).view({4, 6});
  Tensor g = c.to(kGpu);
  Tensor cv = c.slice(1, 1, 5, 2), gv = g.slice(1, 1, 5, 2);
  cv.add_(ones({2}), 2.0);
  gv.add_(ones({2}, TensorOptions().device(kGpu)), 2.0);
  cv.clamp_(0, 10).relu_();
  gv.clamp_(0, 10).relu_();
  expect_match(c, g, "in place through a view", true);
  g.zero_();
  EXPECT_EQ(g.to_vector<float>(), std::vector<float>(24, 0.0f));
  // Host-side comparisons of device tensors read host copies.
  EXPECT_TRUE(allclose(c.to(kGpu), c.to(kGpu) + 1e-9));
  EXPECT_FALSE(equal(c.to(kGpu), g));
}

// The dense loop's forms (jit/cuda/render.h): the vector form (contiguous, aligned operands,
// four elements per thread), its tail (n % 4), a broadcast input inside it, and the scalar form
// for a misaligned operand (a view starting 1..3 elements in); each dtype's pack size; and copy_
// as the driver's memcpy (dense, one dtype) or as a kernel, in place.
TEST(CudaOps, DenseLoopFormsMatchTheCpu) {
  KILN_SKIP_WITHOUT_GPU();
  for (DType d : kAll) {
    for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{4}, int64_t{5}, int64_t{1023}, int64_t{1029},
                      int64_t{70001}}) {
      const Tensor base_a = edge_values(d, n + 3, 11), base_b = edge_values(d, n + 3, 12);
      const Tensor ga_base = base_a.to(kGpu), gb_base = base_b.to(kGpu);
      const Tensor scalar = edge_values(d, 1, 13);
      const Tensor gscalar = scalar.to(kGpu);
      for (int64_t off : {0, 1, 3}) {
        const Tensor a = base_a.slice(0, off, off + n), b = base_b.slice(0, 3 - off, 3 - off + n);
        const Tensor ga = ga_base.slice(0, off, off + n),
                     gb = gb_base.slice(0, 3 - off, 3 - off + n);
        const std::string at = fmt::format("{} n={} offset={}", d, n, off);
        if (d != DType::Bool) {
          expect_match(a + b, ga + gb, "add " + at, true);
          expect_match(a * scalar, ga * gscalar, "mul by a broadcast scalar " + at, true);
        }
        expect_match(where(a == b, a, b), where(ga == gb, ga, gb), "where " + at, true);
        expect_match(a.to(DType::Float64), ga.to(DType::Float64), "cast " + at, true);
        // In place: the output is the input.
        Tensor c = a.clone(), gc = ga.clone();
        c.copy_(b);
        gc.copy_(gb);
        expect_match(c, gc, "copy_ " + at, true);
      }
    }
  }
  // Between the halves of one tensor (the memcpy path with offsets).
  const Tensor x = arange(64, TensorOptions().dtype(DType::Float32));
  Tensor c = x.clone(), g = x.to(kGpu);
  c.slice(0, 0, 32).copy_(c.slice(0, 32, 64));
  g.slice(0, 0, 32).copy_(g.slice(0, 32, 64));
  expect_match(c, g, "copy_ between halves of one tensor", true);
}

TEST(CudaAllocator, DeviceBlocksAreReusedAndOutOfMemoryIsAnError) {
  KILN_SKIP_WITHOUT_GPU();
  const auto before = cuda::device_allocator_stats();
  const void* first = nullptr;
  {
    Tensor t = empty({1000, 1000}, TensorOptions().device(kGpu));
    first = t.raw_data();
  }
  Tensor again = empty({1000, 1000}, TensorOptions().device(kGpu));
  EXPECT_EQ(again.raw_data(), first);  // the freed block, from the cache
  const auto after = cuda::device_allocator_stats();
  EXPECT_GE(after.hits, before.hits + 1);
  EXPECT_GE(after.peak_allocated, size_t{4'000'000});
  // 4 TiB: more than any GPU; the error says what was asked, held and free.
  try {
    Tensor huge = empty({int64_t{1} << 40}, TensorOptions().device(kGpu));
    ADD_FAILURE() << "a 4 TiB allocation succeeded";
  } catch (const Error& e) {
    const std::string m = e.what();
    std::printf("  %s\n", m.c_str());
    EXPECT_NE(m.find("cuda:0: out of memory: tried to allocate 4194304.0 MiB"), std::string::npos)
        << m;
    EXPECT_NE(m.find("kiln holds"), std::string::npos) << m;
    EXPECT_NE(m.find("the device has"), std::string::npos) << m;
  }
  // The device stays usable.
  EXPECT_EQ((ones({3}, TensorOptions().device(kGpu)) * 2.0).to_vector<float>(),
            std::vector<float>({2, 2, 2}));
}

TEST(CudaOps, OpsWithoutACudaFormAndMixedDevicesRaise) {
  KILN_SKIP_WITHOUT_GPU();
  const Tensor g = ones({2, 3}, TensorOptions().device(kGpu));
  // Every primitive op has a CUDA form now (reductions and row ops: test_cuda_reduce.cpp).
  testing::expect_error([&] { g + ones({2, 3}); }, "add", "cuda:0");
  Tensor w = ones({2}).requires_grad_();
  EXPECT_EQ(w.to(kGpu).grad_fn_name(), "ToDeviceBackward");  // recorded (test_cuda_autograd.cpp)
  {
    NoGradGuard no_grad;
    EXPECT_EQ(w.to(kGpu).device(), kGpu);
  }
  testing::expect_error([&] { zeros({1}, TensorOptions().device(Device::cuda(99))); },
                        "zeros: device cuda:99 is not available", "CUDA device(s)");
}

}  // namespace
}  // namespace kiln

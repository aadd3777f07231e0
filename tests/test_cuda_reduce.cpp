// On a GPU: the reductions and nn row ops on CUDA against the CPU, within the bounds of
// docs/cuda.md "The numerical contract on CUDA" (integer sums and products, amax, amin, all and
// any exactly; float sums within 2 (log2 n + 16) u sum|x|; the rest as stated per op). Every op x
// dtype x dims/keepdim x shape: rows of 1, 7, 1000 (a warp per row) and 70000 (a block per row),
// several dims at once (a row over non-adjacent dims), empty dims, zero rows, a transposed input,
// 0-dim tensors, NaN and infinities. Also: two runs give the same bits, a row's result does not
// depend on how many rows share the launch, and CUDA rejects what the CPU rejects, with the same
// error. Every test skips, saying why, without a usable GPU.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cuda_device_util.h"
#include "cuda_reduce_bounds.h"
#include "expect_error.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using testing::kAll;
using testing::kGpu;

using testing::values;

// CUDA's result against the CPU's: integers and Bools exactly; floats NaN for NaN, infinities
// equal, else within tol[i] (exact when tol is empty; +0 and -0 count as equal).
void expect_near(const Tensor& cpu, const Tensor& gpu, const std::vector<double>& tol,
                 const std::string& label, double* worst = nullptr) {
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
    const double t = tol.empty() ? 0.0 : tol[i];
    bool ok;
    if (std::isnan(c[i]) || std::isinf(c[i]))
      ok = std::isnan(c[i]) ? std::isnan(x[i]) : c[i] == x[i];
    else
      ok = std::fabs(c[i] - x[i]) <= t;
    if (ok && worst != nullptr && std::isfinite(c[i]) && t > 0)
      *worst = std::max(*worst, std::fabs(c[i] - x[i]) / t);
    if (!ok && ++bad <= 3)
      ADD_FAILURE() << label << ": element " << i << " cpu " << c[i] << " cuda " << x[i]
                    << " (bound " << t << ")";
  }
}

std::vector<double> as_doubles(const Tensor& t) { return t.to(DType::Float64).to_vector<double>(); }

struct ReduceCase {
  DimVector sizes;
  std::vector<int64_t> dims;  // empty: every dim
  bool transpose = false;     // reduce a transposed view of a [sizes reversed] tensor
};

const std::vector<ReduceCase>& reduce_cases() {
  static const std::vector<ReduceCase> cases = {
      {{5, 7}, {1}},        {{5, 7}, {0}},     {{5, 7}, {0, 1}}, {{5, 7}, {}},
      {{3, 1000}, {1}},     {{2, 70000}, {1}}, {{70000}, {}},    {{4, 5, 6}, {0, 2}},
      {{4, 5, 6}, {-1, 1}}, {{6, 1}, {1}},     {{0, 4}, {1}},    {{3, 0}, {1}},
      {{7, 5}, {1}, true},  {{}, {}},          {{}, {0}},
  };
  return cases;
}

std::string case_label(const char* op, DType d, const ReduceCase& c, bool keepdim) {
  return fmt::format("{} {} {}{} dims {} keepdim {}", op, d, c.transpose ? "transposed " : "",
                     shape_str(c.sizes), shape_str(IntList(c.dims)), keepdim);
}

// Runs `f` on the CPU and on CUDA: both reject alike, or the results match within `bound`
// (per element of the CPU's result, from the row length n and the CPU's sum of |x| per output).
void check_reduction(const char* op, const std::function<Tensor(const Tensor&)>& f, DType d,
                     const ReduceCase& c, bool keepdim, double scale, double shift, bool specials,
                     const std::function<double(double n, double sum_abs, double cpu)>& bound) {
  DimVector sizes = c.sizes;
  if (c.transpose) std::swap(sizes[0], sizes[1]);
  Tensor x = values(d, sizes, 7, scale, shift, specials);
  if (c.transpose) x = x.t();
  const std::string label = case_label(op, d, c, keepdim);
  Tensor cpu;
  try {
    cpu = f(x);
  } catch (const Error& e) {
    const std::string want = e.what();
    testing::expect_error([&] { f(x.to(kGpu)); }, want.substr(0, want.find(' ')));
    return;
  }
  const Tensor gpu = f(x.to(kGpu));
  if (bound == nullptr || !is_floating(cpu.dtype())) return expect_near(cpu, gpu, {}, label);
  const int64_t n = cpu.numel() == 0 ? 0 : x.numel() / cpu.numel();
  std::vector<double> sum_abs(static_cast<size_t>(cpu.numel()), 0.0);
  if (x.numel() > 0 && is_floating(x.dtype()))
    sum_abs = as_doubles(sum(abs(x.to(DType::Float64)), IntList(c.dims), keepdim));
  const std::vector<double> ref = as_doubles(cpu);
  std::vector<double> tol;
  for (size_t i = 0; i < ref.size(); ++i)
    tol.push_back(bound(static_cast<double>(n), sum_abs.empty() ? 0 : sum_abs[i], ref[i]));
  expect_near(cpu, gpu, tol, label);
}

TEST(CudaReduce, ReductionsMatchTheCpuForEveryDtypeDimsAndShape) {
  KILN_SKIP_WITHOUT_GPU();
  for (DType d : kAll) {
    const DType f = is_floating(d) ? d : DType::Float32;  // logsumexp of integers: Float32
    auto sum_bound = [f](double n, double s, double) { return testing::sum_bound(f, n, s); };
    auto mean_bound = [f](double n, double s, double) { return testing::mean_bound(f, n, s); };
    auto prod_bound = [f](double n, double, double c) { return testing::prod_bound(f, n, c); };
    auto var_bound = [f](double n, double, double c) { return testing::var_bound(f, n, c); };
    auto lse_bound = [f](double n, double, double c) { return testing::logsumexp_bound(f, n, c); };
    for (const ReduceCase& c : reduce_cases()) {
      const IntList dims(c.dims);
      for (bool keepdim : {false, true}) {
        for (bool specials : {false, true}) {
          auto run = [&](const char* op, std::function<Tensor(const Tensor&)> f,
                         std::function<double(double, double, double)> bound, double scale = 4,
                         double shift = 0) {
            check_reduction(op, f, d, c, keepdim, scale, shift, specials, bound);
          };
          run(
              "sum", [&](const Tensor& x) { return sum(x, dims, keepdim); }, sum_bound);
          run(
              "mean", [&](const Tensor& x) { return mean(x, dims, keepdim); }, mean_bound);
          // Products of values near 1 (no overflow); integers exactly, wrapping.
          run(
              "prod", [&](const Tensor& x) { return prod(x, dims, keepdim); }, prod_bound, 0.01, 1);
          run(
              "amax", [&](const Tensor& x) { return amax(x, dims, keepdim); }, nullptr);
          run(
              "amin", [&](const Tensor& x) { return amin(x, dims, keepdim); }, nullptr);
          run(
              "var", [&](const Tensor& x) { return var(x, dims, true, keepdim); }, var_bound);
          run(
              "var biased", [&](const Tensor& x) { return var(x, dims, false, keepdim); },
              var_bound);
          run(
              "logsumexp", [&](const Tensor& x) { return logsumexp(x, dims, keepdim); }, lse_bound);
          if (c.dims.size() == 1) {  // the first index of the extreme (of the first NaN)
            run(
                "argmax", [&](const Tensor& x) { return argmax(x, c.dims[0], keepdim); }, nullptr);
            run(
                "argmin", [&](const Tensor& x) { return argmin(x, c.dims[0], keepdim); }, nullptr);
          }
          if (!keepdim && c.dims.empty()) {  // all/any reduce every dim
            run(
                "all", [](const Tensor& x) { return all(x); }, nullptr);
            run(
                "any", [](const Tensor& x) { return any(x); }, nullptr);
          }
        }
      }
    }
  }
  // all/any where the answer turns on one element (and NaN counts as nonzero).
  const Tensor z = zeros({3000});
  EXPECT_FALSE(any(z.to(kGpu)).item<bool>());
  Tensor one = z.clone();
  one.slice(0, 2999, 3000).fill_(NAN);
  EXPECT_TRUE(any(one.to(kGpu)).item<bool>());
  EXPECT_TRUE(all((z + 1).to(kGpu)).item<bool>());
  Tensor hole = z + 1;
  hole.slice(0, 1500, 1501).fill_(0.0);
  EXPECT_FALSE(all(hole.to(kGpu)).item<bool>());
  EXPECT_TRUE(all(zeros({0}).to(kGpu)).item<bool>());
  EXPECT_FALSE(any(zeros({0}).to(kGpu)).item<bool>());
}

// std is sqrt(var): a composite, so it works on CUDA through var and sqrt.
TEST(CudaReduce, StdIsVarThenSqrt) {
  KILN_SKIP_WITHOUT_GPU();
  const Tensor x = values(DType::Float64, {4, 1000}, 3);
  const Tensor cpu = kiln::std(x, {1});
  std::vector<double> tol;
  for (double c : as_doubles(cpu))
    tol.push_back(testing::var_bound(DType::Float64, 1000, c) + 0x1p-50 * c);  // and sqrt
  expect_near(cpu, kiln::std(x.to(kGpu), {1}), tol, "std");
}

struct SoftmaxCase {
  DimVector sizes;
  int64_t dim;
  bool transpose = false;
};

TEST(CudaReduce, SoftmaxAndLogSoftmaxMatchTheCpu) {
  KILN_SKIP_WITHOUT_GPU();
  const std::vector<SoftmaxCase> cases = {
      {{4, 7}, -1}, {{4, 7}, 0},    {{3, 1000}, 1},    {{2, 70000}, 1}, {{5, 1}, 1},
      {{0, 5}, 1},  {{6, 4, 5}, 1}, {{7, 5}, 1, true}, {{}, 0},         {{1, 2049}, 1}};
  for (DType d : kAll) {
    for (const SoftmaxCase& c : cases) {
      for (bool specials : {false, true}) {
        DimVector sizes = c.sizes;
        if (c.transpose) std::swap(sizes[0], sizes[1]);
        Tensor x = values(d, sizes, 11, 4, 0, specials);
        if (c.transpose) x = x.t();
        const int64_t n = x.dim() == 0 ? 1 : x.sizes()[(c.dim + x.dim()) % x.dim()];
        const Tensor sm = softmax(x, c.dim), lsm = log_softmax(x, c.dim);
        const DType t = sm.dtype();
        std::vector<double> tol_sm, tol_lsm;
        const std::vector<double> xs = as_doubles(x.contiguous());
        const std::vector<double> s = as_doubles(sm), l = as_doubles(lsm);
        for (size_t i = 0; i < s.size(); ++i) {
          tol_sm.push_back(testing::softmax_bound(t, n, s[i]));
          tol_lsm.push_back(testing::log_softmax_bound(t, n, xs[i], l[i]));
        }
        const std::string label =
            fmt::format("{} {}{} dim {}{}", d, c.transpose ? "transposed " : "", shape_str(c.sizes),
                        c.dim, specials ? " specials" : "");
        const Tensor g = x.to(kGpu);
        expect_near(sm, softmax(g, c.dim), tol_sm, "softmax " + label);
        expect_near(lsm, log_softmax(g, c.dim), tol_lsm, "log_softmax " + label);
      }
    }
  }
}

TEST(CudaReduce, LayerNormMatchesTheCpu) {
  KILN_SKIP_WITHOUT_GPU();
  struct Case {
    DimVector sizes, normalized;
    bool transpose;
  };
  const std::vector<Case> cases = {{{4, 7}, {7}, false},         {{3, 1000}, {1000}, false},
                                   {{2, 70000}, {70000}, false}, {{2, 3, 5}, {3, 5}, false},
                                   {{5, 6}, {6}, true},          {{0, 8}, {8}, false},
                                   {{6, 1}, {1}, false}};
  for (DType d : {DType::Float32, DType::Float64}) {
    for (const Case& c : cases) {
      DimVector sizes = c.sizes;
      if (c.transpose) std::swap(sizes[0], sizes[1]);
      Tensor x = values(d, sizes, 5, 2, 1);
      if (c.transpose) x = x.t();
      const Tensor w = values(d, c.normalized, 6, 0.1, 1), b = values(d, c.normalized, 8, 0.1);
      double n = 1;
      for (int64_t s : c.normalized) n *= static_cast<double>(s);
      for (int flags = 0; flags < 4; ++flags) {
        const Tensor wc = flags & 1 ? w : Tensor(), bc = flags & 2 ? b : Tensor();
        const Tensor cpu = layer_norm(x, IntList(c.normalized), wc, bc, 1e-5);
        const Tensor gpu =
            layer_norm(x.to(kGpu), IntList(c.normalized), wc.defined() ? wc.to(kGpu) : Tensor(),
                       bc.defined() ? bc.to(kGpu) : Tensor(), 1e-5);
        std::vector<double> tol;
        for (double v : as_doubles(cpu)) tol.push_back(testing::layer_norm_bound(d, n, v));
        expect_near(
            cpu, gpu, tol,
            fmt::format("layer_norm {} {}{} weight {} bias {}", d, c.transpose ? "transposed " : "",
                        shape_str(c.sizes), flags & 1, flags >> 1));
      }
    }
  }
  testing::expect_error(
      [] {
        layer_norm(ones({2, 3}, TensorOptions().device(kGpu)), {4});
      },
      "layer_norm: normalized_shape", "does not match the trailing dims");
}

TEST(CudaReduce, CrossEntropyMatchesTheCpu) {
  KILN_SKIP_WITHOUT_GPU();
  struct Case {
    int64_t n, c;
    std::vector<int64_t> ignored;  // rows whose target is -100
  };
  const std::vector<Case> cases = {{8, 10, {}},     {8, 10, {0, 5}},      {3, 1000, {}},
                                   {2, 70000, {1}}, {4, 3, {0, 1, 2, 3}}, {0, 5, {}},
                                   {1, 1, {}},      {-1, 10, {}}};  // -1: unbatched [C]
  for (DType d : {DType::Float32, DType::Float64}) {
    for (const Case& k : cases) {
      const bool unbatched = k.n < 0;
      const int64_t rows = unbatched ? 1 : k.n;
      const Tensor x = unbatched ? values(d, {k.c}, 9) : values(d, {rows, k.c}, 9);
      std::vector<int64_t> t;
      for (int64_t i = 0; i < rows; ++i) t.push_back((i * 7 + 3) % k.c);
      for (int64_t i : k.ignored) t[i] = -100;
      const Tensor target = unbatched ? from_vector(t, {1}).reshape({}) : from_vector(t, {rows});
      const Tensor cpu = cross_entropy(x, target);
      const Tensor gpu = cross_entropy(x.to(kGpu), target.to(kGpu));
      const double v = cpu.to(DType::Float64).item<double>();
      const double xmax = x.numel() ? amax(abs(x.to(DType::Float64))).item<double>() : 0;
      const double tol = testing::cross_entropy_bound(d, static_cast<double>(k.c),
                                                      static_cast<double>(rows), xmax, v);
      expect_near(
          cpu, gpu, {tol},
          fmt::format("cross_entropy {} [{}, {}] ignoring {}", d, k.n, k.c, k.ignored.size()));
    }
  }
  // A target out of range: the CPU's error, before anything runs.
  const Tensor x = ones({3, 4}, TensorOptions().device(kGpu));
  testing::expect_error(
      [&] {
        cross_entropy(x, from_vector<int64_t>({0, 4, 1}, {3}).to(kGpu));
      },
      "cross_entropy: target 4 at position 1 is out of range for 4 classes");
  // A strided target: every other element of a [6] tensor.
  const Tensor logits = values(DType::Float32, {3, 5}, 2);
  const Tensor wide = from_vector<int64_t>({1, 9, 4, 9, 0, 9}, {6});
  const Tensor strided = wide.slice(0, 0, 6, 2);
  expect_near(cross_entropy(logits, strided),
              cross_entropy(logits.to(kGpu), wide.to(kGpu).slice(0, 0, 6, 2)),
              {1e-6 * (1 + std::fabs(cross_entropy(logits, strided).item<float>()))},
              "cross_entropy with a strided target");
}

// Backward through the reductions and row ops on CUDA: their rules are composed of primitives
// (ops/nn_backward.cpp, ops/reduce_backward.cpp), all of which have CUDA forms. A loose bound:
// each gradient composes a dozen ops of the bounds above (1e-4 of the largest gradient for
// Float32, 1e-10 for Float64).
TEST(CudaReduce, GradientsThroughRowOpsMatchTheCpu) {
  KILN_SKIP_WITHOUT_GPU();
  for (DType d : {DType::Float32, DType::Float64}) {
    const Tensor x0 = values(d, {6, 50}, 31), w0 = values(d, {50}, 32, 0.1, 1);
    const Tensor b0 = values(d, {50}, 33, 0.1);
    const Tensor target = from_vector<int64_t>({1, 0, 49, -100, 7, 3}, {6});
    auto grads = [&](Device dev) {
      Tensor x = x0.detach().to(dev).requires_grad_(), w = w0.detach().to(dev).requires_grad_();
      Tensor b = b0.detach().to(dev).requires_grad_();
      const Tensor h = layer_norm(x, {50}, w, b, 1e-5);
      const Tensor loss = cross_entropy(h, target.to(dev)) + sum(softmax(h, 1) * h) +
                          mean(logsumexp(h, {1})) + sum(var(h, {1})) + sum(amax(h, {1})) +
                          sum(log_softmax(h, 0) * 0.5) + mean(h * h);
      loss.backward();
      return std::vector<Tensor>{x.grad().to(Device::cpu()), w.grad().to(Device::cpu()),
                                 b.grad().to(Device::cpu())};
    };
    const std::vector<Tensor> cpu = grads(Device::cpu()), gpu = grads(kGpu);
    const char* names[] = {"x", "weight", "bias"};
    for (size_t i = 0; i < cpu.size(); ++i) {
      const double scale = 1 + amax(abs(cpu[i].to(DType::Float64))).item<double>();
      const double tol = (d == DType::Float32 ? 1e-4 : 1e-10) * scale;
      const std::vector<double> tols(static_cast<size_t>(cpu[i].numel()), tol);
      expect_near(cpu[i], gpu[i].to(kGpu), tols, fmt::format("grad of {} {}", names[i], d));
    }
  }
}

// Bits of a CPU copy.
std::vector<unsigned char> bits(const Tensor& t) {
  const Tensor c = t.to(Device::cpu()).contiguous();
  std::vector<unsigned char> b(static_cast<size_t>(c.numel()) * itemsize(c.dtype()));
  if (!b.empty()) std::memcpy(b.data(), c.impl()->data(), b.size());
  return b;
}

// Two runs give the same bits, and a row's result does not depend on how many rows the launch
// has (the grid) or where the row sits in its block: the tree is a function of the row length.
TEST(CudaReduce, ResultsAreDeterministicAndIndependentOfTheGrid) {
  KILN_SKIP_WITHOUT_GPU();
  for (int64_t n : {1, 7, 1000, 2048, 2049, 70000}) {
    for (DType d : {DType::Float32, DType::Float64}) {
      const Tensor row = values(d, {1, n}, 21).to(kGpu);
      const std::string label = fmt::format("{} n = {}", d, n);
      EXPECT_EQ(bits(sum(row, {1})), bits(sum(row, {1}))) << label;
      EXPECT_EQ(bits(softmax(row, 1)), bits(softmax(row, 1))) << label;
      // The same row as row 37 of 300 (warp rows: another warp of another block), or repeated.
      const Tensor many = row.expand({300, n}).contiguous();
      EXPECT_EQ(bits(sum(row, {1})), bits(sum(many, {1}).slice(0, 37, 38))) << label;
      EXPECT_EQ(bits(var(row, {1})), bits(var(many, {1}).slice(0, 37, 38))) << label;
      EXPECT_EQ(bits(softmax(row, 1)), bits(softmax(many, 1).slice(0, 37, 38))) << label;
    }
  }
}

// CUDA rejects what the CPU rejects, with the CPU's message.
TEST(CudaReduce, ErrorsMatchTheCpu) {
  KILN_SKIP_WITHOUT_GPU();
  const Tensor e = zeros({3, 0}, TensorOptions().device(kGpu));
  testing::expect_error([&] { amax(e, {1}); }, "amax: reduced dim 1", "has size 0");
  const Tensor i = ones({2, 3}, TensorOptions().dtype(DType::Int32).device(kGpu));
  testing::expect_error([&] { mean(i, {1}); }, "mean: expected a floating point input");
  testing::expect_error([&] { var(i, {1}); }, "var: expected a floating point input");
  testing::expect_error([&] { sum(ones({2}, TensorOptions().device(kGpu)), {3}); }, "sum");
  testing::expect_error([&] { argmax(e, 1); }, "argmax: reduced dim 1", "has size 0");
  testing::expect_error([&] { argmin(ones({2}, TensorOptions().device(kGpu)), 2); }, "argmin");
}

}  // namespace
}  // namespace kiln

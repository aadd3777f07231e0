// A tour of kiln's eager API as it exists today. README.md's "API tour" block is the code between
// the tour-begin and tour-end markers (unindented); the test example.readme_tour checks that the
// two match. After the tour, every result is checked, so the program doubles as a test.
#include <kiln/kiln.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  std::printf("%s  %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

}  // namespace

int main() {
  // clang-format off
  // [tour-begin]
  using namespace kiln;

  // Factories give Float32 on the CPU unless told otherwise.
  Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = full({3}, 10.0);
  Tensor n = ones({2, 3}, kInt64);

  // Pointwise ops broadcast and promote types as PyTorch does.
  Tensor c = a * 2 + b;              // [2, 3] + [3] -> [2, 3]: 12 14 16 / 18 20 22
  Tensor m = where(a > 3.0, a, -a);  // comparisons give Bool tensors
  Tensor i = n + 1;                  // Int64 + 1 stays Int64
  Tensor f = n / 2;                  // true division: Float32
  Tensor g = gelu(c, "tanh");        // also exp, tanh, sigmoid, relu, pow, clamp, maximum, ...

  // Views share storage with their base.
  Tensor at = a.t();                 // [3, 2], strides {1, 3}: no copy
  Tensor row = a[1];                 // select(0, 1)
  row.mul_(10);                      // in place, through the view: a is now 1 2 3 / 40 50 60
  Tensor s = a.slice(1, 0, 3, 2).clone();  // columns 0 and 2, copied out

  // Conversions and data access.
  Tensor d = a.to(kFloat64);
  double x = d.select(0, 1).select(0, 2).item<double>();  // 60
  std::vector<float> v = a.to_vector<float>();            // row-major copy

  // Autograd, as in libtorch.
  Tensor w = full({3}, 2.0).requires_grad_();
  Tensor loss = (w * w + w).sum();
  loss.backward();
  Tensor dw = w.grad();              // d(loss)/dw = 2w + 1 = 5 5 5

  // Errors are kiln::Error; the message names the op, the shapes and the dtypes.
  std::string message;
  try {
    Tensor bad = a + ones({4});
  } catch (const kiln::Error& e) {
    message = e.what();  // "...: shapes [2, 3] and [4] cannot be broadcast together ..."
  }

  // Configuration: KILN_* variables, read once, overridable through kiln::config().
  bool jit = config().jit;           // KILN_JIT: record and interpret (docs/tracer.md)
  int threads = num_threads();       // KILN_NUM_THREADS, or all cores
  // [tour-end]
  // clang-format on

  expect(a.dtype() == kFloat32 && n.dtype() == kInt64, "factories: Float32 by default, kInt64");
  expect(c.to_vector<float>() == std::vector<float>{12, 14, 16, 18, 20, 22}, "a * 2 + b");
  expect(m.to_vector<float>() == std::vector<float>{-1, -2, -3, 4, 5, 6}, "where(a > 3, a, -a)");
  expect(i.dtype() == kInt64 && i.to_vector<int64_t>() == std::vector<int64_t>(6, 2), "n + 1");
  expect(f.dtype() == kFloat32 && f.to_vector<float>() == std::vector<float>(6, 0.5f), "n / 2");
  // gelu_tanh(12) is 12 to float32 precision; the tanh form stays within 1e-6 relative here.
  expect(g.sizes() == c.sizes() && std::abs(g.to_vector<float>()[0] - 12.0f) < 1e-5f,
         "gelu(c, \"tanh\")");
  expect(at.sizes() == Shape{3, 2} && at.strides() == Shape{1, 3} && !at.is_contiguous(),
         "a.t() is a strided view");
  expect(v == std::vector<float>{1, 2, 3, 40, 50, 60}, "row.mul_(10) wrote into a");
  expect(at.contiguous().to_vector<float>() == std::vector<float>{1, 40, 2, 50, 3, 60},
         "the transposed view sees the write");
  expect(s.to_vector<float>() == std::vector<float>{1, 3, 40, 60}, "a.slice(1, 0, 3, 2)");
  expect(d.dtype() == kFloat64 && x == 60.0, "to(kFloat64) and item<double>()");
  expect(dw.defined() && dw.to_vector<float>() == std::vector<float>(3, 5.0f),
         "w.grad() is 2w + 1");
  expect(message.find("[2, 3]") != std::string::npos && message.find("[4]") != std::string::npos,
         "a + ones({4}) raised kiln::Error naming both shapes");
  std::printf("      error message: %s\n", message.c_str());
  std::printf("      KILN_JIT=%d, threads=%d\n", int(jit), threads);

  std::printf("%s\n", failures ? "eager tour: FAILED" : "eager tour: all steps ok");
  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

// A tour of kiln's eager API as it exists today. README.md quotes this file; keep the two in step.
// Every step checks its result, so the program doubles as a test (ctest -L example).
#include <kiln/kiln.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  std::printf("%s  %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++failures;
}

}  // namespace

int main() {
  using namespace kiln;

  // --- tensors: factories give Float32 on the CPU unless told otherwise ---
  Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = full({3}, 10.0);
  Tensor n = ones({2, 3}, kInt64);
  expect(a.sizes() == Shape{2, 3} && a.dtype() == kFloat32, "from_vector gives a [2, 3] Float32");

  // --- pointwise ops broadcast and promote types as PyTorch does ---
  Tensor c = a * 2 + b;  // [2, 3] + [3] -> [2, 3]
  expect(c.to_vector<float>() == std::vector<float>{12, 14, 16, 18, 20, 22}, "a * 2 + b");
  Tensor m = where(a > 3.0, a, -a);  // comparisons give Bool tensors
  expect(m.to_vector<float>() == std::vector<float>{-1, -2, -3, 4, 5, 6}, "where(a > 3, a, -a)");
  expect((n + 1).dtype() == kInt64, "Int64 + 1 stays Int64");
  expect((n / 2).dtype() == kFloat32, "Int64 / 2 is true division: Float32");
  Tensor g = gelu(c, "tanh");  // also exp, tanh, sigmoid, relu, pow, clamp, maximum, ...
  expect(g.sizes() == c.sizes(), "gelu(c, \"tanh\") keeps the shape");

  // --- views share storage with their base ---
  Tensor at = a.t();  // [3, 2], strides {1, 3}: no copy
  expect(at.sizes() == Shape{3, 2} && !at.is_contiguous(), "a.t() is a strided view");
  Tensor row = a[1];  // select(0, 1)
  row.mul_(10);       // in place, through the view, into a
  expect(a.to_vector<float>() == std::vector<float>{1, 2, 3, 40, 50, 60}, "row.mul_(10) writes a");
  expect(at.contiguous().to_vector<float>() == std::vector<float>{1, 40, 2, 50, 3, 60},
         "the transposed view sees it too");
  Tensor s = a.slice(1, 0, 3, 2).clone();  // columns 0 and 2, copied out
  expect(s.to_vector<float>() == std::vector<float>{1, 3, 40, 60}, "a.slice(1, 0, 3, 2)");

  // --- dtype conversion and data access (sync points once the JIT records) ---
  Tensor d = a.to(kFloat64);
  expect(d.dtype() == kFloat64 && d.select(0, 1).select(0, 2).item<double>() == 60.0,
         "to(kFloat64) and item<double>()");

  // --- errors are kiln::Error and name the op, the shapes and the dtypes ---
  try {
    Tensor bad = a + ones({4});
    expect(false, "a [2, 3] + [4] should not broadcast");
  } catch (const Error& e) {
    std::printf("      caught: %s\n", e.what());
    expect(true, "a [2, 3] + [4] raises kiln::Error");
  }

  // --- configuration: KILN_* variables, read once, overridable in code ---
  std::printf("      KILN_JIT=%d, threads=%d\n", int(config().jit), num_threads());

  std::printf("%s\n", failures ? "eager tour: FAILED" : "eager tour: all steps ok");
  return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

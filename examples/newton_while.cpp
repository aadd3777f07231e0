// Element-wise Newton iteration for sqrt(a), x <- (x + a / x) / 2, run with kiln::while_loop until
// every element has converged (the step count depends on the data). Prints the iterations and
// the largest error against sqrt(). Runs the same with KILN_JIT=0 and KILN_JIT=1.
#include <cstdio>

#include "kiln/kiln.h"

using namespace kiln;

int main() {
  Tensor a = linspace(0.01, 1000.0, 1000, kFloat64);
  Tensor x0 = full_like(a, 1.0);
  // Carried: {x, the previous x, iteration count}.
  auto not_converged = [&](const TensorList& c) {
    return logical_and(any(abs(c[0] - c[1]) > 1e-12 * c[0]), c[2] < int64_t{100});
  };
  auto newton_step = [&](const TensorList& c) {
    Tensor x = (c[0] + a / c[0]) * 0.5;
    return TensorList{x, c[0], c[2] + 1};
  };
  TensorList out = while_loop(not_converged, newton_step,
                              {x0, zeros_like(a), scalar_tensor(int64_t{0}, kInt64)});
  int64_t iterations = out[2].item<int64_t>();
  double max_err = amax(abs(out[0] - sqrt(a)) / sqrt(a)).item<double>();
  std::printf("converged after %lld iterations\n", static_cast<long long>(iterations));
  std::printf("max relative error %.3e\n", max_err);
  return (iterations < 100 && max_err < 1e-14) ? 0 : 1;
}

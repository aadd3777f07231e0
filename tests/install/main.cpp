// The install test's consumer program: adds two tensors through the public header and checks the
// sum. Exit status 0 only if kiln was found, linked and computed the right values.
#include <kiln/kiln.h>

#include <cstdio>
#include <vector>

int main() {
  kiln::Tensor a = kiln::from_vector<float>({1, 2, 3, 4}, {2, 2});
  kiln::Tensor b = kiln::full({2}, 10.0);
  std::vector<float> sum = (a + b).to_vector<float>();
  if (sum != std::vector<float>{11, 12, 13, 14}) {
    std::printf("consumer: wrong sum %g %g %g %g\n", sum[0], sum[1], sum[2], sum[3]);
    return 1;
  }
  std::printf("consumer: kiln works (11 12 13 14)\n");
  return 0;
}

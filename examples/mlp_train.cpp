// Trains a small MLP to separate two interleaved spirals, printing the loss as it falls.
// Run it eagerly (KILN_JIT=0, the default) or recorded and interpreted (KILN_JIT=1):
// the program does not change.
#include <cstdio>

#include "spirals.h"

int main() {
  constexpr int kSteps = 300;
  float final_loss = spirals::train(200, 64, kSteps, [](int step, float loss) {
    if (step % 25 == 0 || step == kSteps - 1) std::printf("step %3d  loss %.4f\n", step, loss);
  });
  std::printf("final loss %.4f\n", final_loss);
  return final_loss < 0.1f ? 0 : 1;
}

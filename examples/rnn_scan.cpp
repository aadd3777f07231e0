// A tanh RNN unrolled over time with kiln::scan, trained with SGD to predict the next sample of
// noisy sine waves; prints the loss as it falls. The time loop is one scan: fn(carry, x_t) takes
// the hidden state and one time step and returns the new state and that step's prediction.
// Runs the same with KILN_JIT=0 and KILN_JIT=1.
#include <cmath>
#include <cstdio>

#include "kiln/kiln.h"

using namespace kiln;

int main() {
  constexpr int64_t kSteps = 24, kBatch = 16, kHidden = 16;
  constexpr int kIters = 40;
  manual_seed(0);
  // Sine waves of random phase and frequency: xs[t] = sin(f * t + phase), shape [T, B, 1].
  Tensor t = arange(kSteps + 1, kFloat32).reshape({kSteps + 1, 1});
  Tensor phase = rand({1, kBatch}) * (2 * M_PI), freq = rand({1, kBatch}) * 0.3 + 0.2;
  Tensor wave = sin(t * freq + phase).unsqueeze(2);  // [T + 1, B, 1]
  Tensor inputs = wave.slice(0, 0, kSteps), targets = wave.slice(0, 1, kSteps + 1);

  Tensor w_in = (randn({1, kHidden}) * 0.5).requires_grad_();
  Tensor w_h = (randn({kHidden, kHidden}) * (1.0 / std::sqrt(double(kHidden)))).requires_grad_();
  Tensor b_h = zeros({kHidden}).requires_grad_();
  Tensor w_out = (randn({kHidden, 1}) * 0.3).requires_grad_();
  Tensor b_out = zeros({1}).requires_grad_();
  optim::SGD opt({w_in, w_h, b_h, w_out, b_out}, optim::SGDOptions(0.05));

  // One time step: the weights are captured by the lambda (scan lifts them when tracing).
  auto cell = [&](const TensorList& carry, const TensorList& x) {
    Tensor h = tanh(matmul(x[0], w_in) + matmul(carry[0], w_h) + b_h);
    return std::pair<TensorList, TensorList>{{h}, {matmul(h, w_out) + b_out}};
  };

  float first = 0, last = 0;
  for (int it = 0; it < kIters; ++it) {
    opt.zero_grad();
    auto [final_h, ys] = scan(cell, {zeros({kBatch, kHidden})}, {inputs});
    Tensor loss = mse_loss(ys[0], targets);
    loss.backward();
    opt.step();
    last = loss.item<float>();
    if (it == 0) first = last;
    if (it % 5 == 0 || it == kIters - 1) std::printf("step %2d  loss %.5f\n", it, last);
  }
  std::printf("loss %.5f -> %.5f\n", first, last);
  return last < 0.5f * first ? 0 : 1;
}

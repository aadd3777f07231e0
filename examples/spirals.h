// Two interleaved spirals and a small ReLU MLP that learns to tell them apart: the workload of
// examples/mlp_train.cpp, shared with the training test (tests/test_training.cpp).
#pragma once
#include <cmath>
#include <functional>
#include <vector>

#include "kiln/kiln.h"

namespace spirals {

struct Data {
  kiln::Tensor x;       // [2n, 2] Float32 points
  kiln::Tensor labels;  // [2n] Int64 class of each point
};

// n points per class on arms that wind 1.5 turns, with Gaussian noise (seeded through kiln).
inline Data make(int64_t n, double noise = 0.05) {
  using namespace kiln;
  Tensor t = linspace(0.05, 1.0, n, kFloat32);
  std::vector<Tensor> xs, ys;
  for (int cls = 0; cls < 2; ++cls) {
    Tensor angle = t * (3.0 * M_PI) + cls * M_PI;
    Tensor px = t * cos(angle) + randn({n}) * noise;
    Tensor py = t * sin(angle) + randn({n}) * noise;
    xs.push_back(stack({px, py}, 1));
    ys.push_back(full({n}, cls, kInt64));
  }
  return {cat(xs, 0), cat(ys, 0)};
}

struct Mlp {
  std::vector<kiln::Tensor> params;  // w1, b1, w2, b2, w3, b3

  explicit Mlp(int64_t hidden) {
    using namespace kiln;
    auto layer = [&](int64_t in, int64_t out) {
      params.push_back((randn({out, in}) * std::sqrt(2.0 / in)).requires_grad_());
      params.push_back(zeros({out}).requires_grad_());
    };
    layer(2, hidden);
    layer(hidden, hidden);
    layer(hidden, 2);
  }
  kiln::Tensor operator()(const kiln::Tensor& x) const {
    using namespace kiln;
    Tensor h = relu(linear(x, params[0], params[1]));
    h = relu(linear(h, params[2], params[3]));
    return linear(h, params[4], params[5]);
  }
};

// Trains with Adam on the whole set; calls on_step(step, loss) after each step; returns the
// final loss.
inline float train(int64_t points_per_class, int64_t hidden, int steps,
                   const std::function<void(int, float)>& on_step = {}) {
  using namespace kiln;
  manual_seed(0);
  Data data = make(points_per_class);
  Mlp model(hidden);
  optim::Adam opt(model.params, optim::AdamOptions(0.01));
  float loss_value = 0;
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    Tensor loss = cross_entropy(model(data.x), data.labels);
    loss.backward();
    opt.step();
    loss_value = loss.item<float>();
    if (on_step) on_step(step, loss_value);
  }
  return loss_value;
}

}  // namespace spirals

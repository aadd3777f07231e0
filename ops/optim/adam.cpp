#include "ops/optim/adam.h"

#include <cmath>

#include "ops/functions.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/error.h"

namespace kiln::optim {

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Optimizer(std::move(params)), options_(options), state_(params_.size()) {
  auto [b1, b2] = options.betas();
  KILN_CHECK(options.lr() >= 0, "Adam: invalid learning rate {}", options.lr());
  KILN_CHECK(options.eps() >= 0, "Adam: invalid epsilon {}", options.eps());
  KILN_CHECK(b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1,
             "Adam: invalid betas ({}, {}); expected each in [0, 1)", b1, b2);
  KILN_CHECK(options.weight_decay() >= 0, "Adam: invalid weight_decay {}", options.weight_decay());
}

// The same sequence of operations as torch.optim.Adam (single-tensor, non-amsgrad path).
void Adam::step() {
  NoGradGuard no_grad;
  const AdamOptions& o = options_;
  auto [b1, b2] = o.betas();
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = checked_grad("Adam", i);
    if (!g.defined()) continue;
    State& s = state_[i];
    if (!s.exp_avg.defined()) {
      s.exp_avg = zeros_like(p);
      s.exp_avg_sq = zeros_like(p);
    }
    ++s.step;
    if (o.weight_decay() != 0) g = g + p * o.weight_decay();
    s.exp_avg.mul_(b1).add_(g, 1 - b1);
    s.exp_avg_sq.mul_(b2).add_(g * g, 1 - b2);
    double bias1 = 1 - std::pow(b1, static_cast<double>(s.step));
    double bias2 = 1 - std::pow(b2, static_cast<double>(s.step));
    Tensor denom = (sqrt(s.exp_avg_sq) / std::sqrt(bias2)) + o.eps();
    p.sub_(s.exp_avg / denom, o.lr() / bias1);
  }
}

}  // namespace kiln::optim

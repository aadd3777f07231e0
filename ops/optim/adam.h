// Adam (with L2 weight decay folded into the gradient): torch.optim.Adam's update rule.
#pragma once
#include <utility>

#include "ops/optim/optimizer.h"

namespace kiln::optim {

struct AdamOptions {
  explicit AdamOptions(double lr = 1e-3) : lr_(lr) {}
  AdamOptions& lr(double v) { return lr_ = v, *this; }
  AdamOptions& betas(std::pair<double, double> v) { return betas_ = v, *this; }
  AdamOptions& eps(double v) { return eps_ = v, *this; }
  AdamOptions& weight_decay(double v) { return weight_decay_ = v, *this; }
  double lr() const { return lr_; }
  std::pair<double, double> betas() const { return betas_; }
  double eps() const { return eps_; }
  double weight_decay() const { return weight_decay_; }

 private:
  double lr_;
  std::pair<double, double> betas_{0.9, 0.999};
  double eps_ = 1e-8, weight_decay_ = 0;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options);
  void step() override;
  AdamOptions& options() { return options_; }

 private:
  struct State {
    int64_t step = 0;
    Tensor exp_avg, exp_avg_sq;
  };
  AdamOptions options_;
  std::vector<State> state_;
};

}  // namespace kiln::optim

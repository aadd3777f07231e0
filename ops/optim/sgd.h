// SGD with momentum, dampening, Nesterov and weight decay: torch.optim.SGD's update rule.
#pragma once
#include "ops/optim/optimizer.h"

namespace kiln::optim {

struct SGDOptions {
  explicit SGDOptions(double lr) : lr_(lr) {}
  SGDOptions& lr(double v) { return lr_ = v, *this; }
  SGDOptions& momentum(double v) { return momentum_ = v, *this; }
  SGDOptions& dampening(double v) { return dampening_ = v, *this; }
  SGDOptions& weight_decay(double v) { return weight_decay_ = v, *this; }
  SGDOptions& nesterov(bool v) { return nesterov_ = v, *this; }
  double lr() const { return lr_; }
  double momentum() const { return momentum_; }
  double dampening() const { return dampening_; }
  double weight_decay() const { return weight_decay_; }
  bool nesterov() const { return nesterov_; }

 private:
  double lr_, momentum_ = 0, dampening_ = 0, weight_decay_ = 0;
  bool nesterov_ = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step() override;
  SGDOptions& options() { return options_; }  // e.g. options().lr(0.01) for a schedule

 private:
  SGDOptions options_;
  std::vector<Tensor> momentum_buffers_;
};

}  // namespace kiln::optim

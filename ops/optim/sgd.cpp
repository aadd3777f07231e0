#include "ops/optim/sgd.h"

#include "ops/functions.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/error.h"

namespace kiln::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer(std::move(params)), options_(options), momentum_buffers_(params_.size()) {
  KILN_CHECK(options.lr() >= 0, "SGD: invalid learning rate {}", options.lr());
  KILN_CHECK(options.momentum() >= 0, "SGD: invalid momentum {}", options.momentum());
  KILN_CHECK(options.weight_decay() >= 0, "SGD: invalid weight_decay {}", options.weight_decay());
  KILN_CHECK(!options.nesterov() || (options.momentum() > 0 && options.dampening() == 0),
             "SGD: Nesterov momentum requires a momentum and zero dampening");
}

void SGD::step() {
  NoGradGuard no_grad;
  const SGDOptions& o = options_;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor g = checked_grad("SGD", i);
    if (!g.defined()) continue;
    if (o.weight_decay() != 0) g = g + p * o.weight_decay();
    if (o.momentum() != 0) {
      Tensor& buf = momentum_buffers_[i];
      if (!buf.defined()) {
        buf = g.clone();
      } else {
        buf.mul_(o.momentum()).add_(g, 1 - o.dampening());
      }
      g = o.nesterov() ? g + buf * o.momentum() : buf;
    }
    p.sub_(g, o.lr());
  }
}

}  // namespace kiln::optim

// mlp_train: one training step of a 784-1024-1024-10 ReLU MLP on a batch of 256 (64 small):
// forward, cross-entropy, backward, SGD update. Reported in ms per step.
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

class MlpTrainCase : public Case {
 public:
  explicit MlpTrainCase(int64_t batch) {
    manual_seed(0);
    const int64_t widths[] = {784, 1024, 1024, 10};
    for (int l = 0; l < 3; ++l) {
      int64_t in = widths[l], out = widths[l + 1];
      params_.push_back((randn({out, in}) * std::sqrt(2.0 / in)).requires_grad_());
      params_.push_back(zeros({out}).requires_grad_());
    }
    x_ = randn({batch, 784});
    target_ = randint(0, 10, {batch});
    opt_ = std::make_unique<optim::SGD>(params_, optim::SGDOptions(0.01));
  }
  void run() override {
    opt_->zero_grad();
    Tensor h = relu(linear(x_, params_[0], params_[1]));
    h = relu(linear(h, params_[2], params_[3]));
    Tensor loss = cross_entropy(linear(h, params_[4], params_[5]), target_);
    loss.backward();
    opt_->step();
    loss_ = loss.item<float>();
  }
  void check() const override {
    // He-initialised weights on unit-normal inputs start near ln(10) = 2.3; a broken forward or
    // backward shows up as a non-finite or far-off loss, or as a missing gradient.
    KILN_CHECK(std::isfinite(loss_) && loss_ > 0.5f && loss_ < 20.0f,
               "mlp_train: implausible first loss {}", loss_);
    for (const Tensor& p : params_)
      KILN_CHECK(p.grad().defined(), "mlp_train: a parameter got no gradient");
  }

 private:
  std::vector<Tensor> params_;
  Tensor x_, target_;
  std::unique_ptr<optim::SGD> opt_;
  float loss_ = 0;
};

}  // namespace

Workload mlp_train_workload() {
  return {"mlp_train", "784-1024-1024-10 ReLU MLP training step, batch 256 (ms per step)", "",
          [](Size size, Device) {
            int64_t batch = size == Size::Small ? 64 : 256;
            Prepared p;
            p.c = std::make_unique<MlpTrainCase>(batch);
            p.shape = fmt::format("batch {}", batch);
            return p;
          }};
}

}  // namespace kiln::perf

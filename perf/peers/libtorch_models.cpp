// libtorch versions of kiln-perf's model workloads: mlp_train (the same MLP, cross-entropy loss and
// SGD step, through torch::autograd and torch::optim::SGD) and block (the same pre-norm transformer
// block forward; libtorch 1.13 has no scaled_dot_product_attention, so attention is written out
// exactly as kiln's composite in ops/nn.cpp: matmul, scale, causal masked_fill, softmax, matmul).
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <cmath>
#include <limits>
#include <vector>

#include "perf/peers/libtorch_cases.h"

namespace kiln::perf::peer {

namespace {

class MlpTrainCase : public PeerCase {
 public:
  explicit MlpTrainCase(int64_t batch) {
    torch::manual_seed(0);
    const int64_t widths[] = {784, 1024, 1024, 10};
    for (int l = 0; l < 3; ++l) {
      int64_t in = widths[l], out = widths[l + 1];
      params_.push_back((torch::randn({out, in}) * std::sqrt(2.0 / in)).requires_grad_());
      params_.push_back(torch::zeros({out}).requires_grad_());
    }
    x_ = torch::randn({batch, 784});
    target_ = torch::randint(0, 10, {batch});
    opt_ = std::make_unique<torch::optim::SGD>(params_, torch::optim::SGDOptions(0.01));
  }
  void run() override {
    opt_->zero_grad();
    at::Tensor h = at::relu(at::linear(x_, params_[0], params_[1]));
    h = at::relu(at::linear(h, params_[2], params_[3]));
    at::Tensor loss =
        torch::nn::functional::cross_entropy(at::linear(h, params_[4], params_[5]), target_);
    loss.backward();
    opt_->step();
    loss_ = loss.item<float>();
  }
  void check() const override {
    // The same plausibility check as kiln's: a first loss near ln(10) and every gradient present.
    if (!(std::isfinite(loss_) && loss_ > 0.5f && loss_ < 20.0f))
      check_failed("libtorch mlp_train: implausible first loss " + std::to_string(loss_));
    for (const at::Tensor& p : params_)
      if (!p.grad().defined()) check_failed("libtorch mlp_train: a parameter got no gradient");
  }

 private:
  std::vector<at::Tensor> params_;
  at::Tensor x_, target_;
  std::unique_ptr<torch::optim::SGD> opt_;
  float loss_ = 0;
};

constexpr int64_t kD = 512, kHeads = 8;

at::Tensor weight(int64_t out, int64_t in) {
  return torch::randn({out, in}) * (1.0 / std::sqrt(in));
}

class BlockCase : public PeerCase {
 public:
  BlockCase(int64_t batch, int64_t seq) : batch_(batch), seq_(seq) {
    torch::manual_seed(0);
    x_ = torch::randn({batch, seq, kD});
    ln1_w_ = torch::ones({kD}), ln1_b_ = torch::zeros({kD});
    ln2_w_ = torch::ones({kD}), ln2_b_ = torch::zeros({kD});
    qkv_w_ = weight(3 * kD, kD), qkv_b_ = torch::zeros({3 * kD});
    proj_w_ = weight(kD, kD), proj_b_ = torch::zeros({kD});
    fc1_w_ = weight(4 * kD, kD), fc1_b_ = torch::zeros({4 * kD});
    fc2_w_ = weight(kD, 4 * kD), fc2_b_ = torch::zeros({kD});
  }
  void run() override {
    torch::NoGradGuard no_grad;
    const int64_t hd = kD / kHeads;
    at::Tensor h = at::layer_norm(x_, {kD}, ln1_w_, ln1_b_);
    std::vector<at::Tensor> qkv = at::linear(h, qkv_w_, qkv_b_).chunk(3, -1);
    auto heads = [&](const at::Tensor& t) {
      return t.reshape({batch_, seq_, kHeads, hd}).transpose(1, 2);
    };
    at::Tensor a = attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]));
    a = a.transpose(1, 2).reshape({batch_, seq_, kD});
    at::Tensor x = x_ + at::linear(a, proj_w_, proj_b_);
    at::Tensor m =
        at::gelu(at::linear(at::layer_norm(x, {kD}, ln2_w_, ln2_b_), fc1_w_, fc1_b_), "tanh");
    y_ = x + at::linear(m, fc2_w_, fc2_b_);
  }
  void check() const override {
    if (y_.sizes() != x_.sizes()) check_failed("libtorch block: output shape differs from input's");
    if (!at::isfinite(y_).all().item<bool>())
      check_failed("libtorch block: the output has non-finite values");
  }

 private:
  // Causal attention as kiln's scaled_dot_product_attention composite (a fresh mask per call).
  static at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
    const int64_t L = q.size(-2), S = k.size(-2);
    at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(q.size(-1))));
    at::Tensor above = at::ones({L, S}, at::kBool).triu(1);
    scores = scores.masked_fill(above, -std::numeric_limits<double>::infinity());
    return at::matmul(at::softmax(scores, -1), v);
  }

  int64_t batch_, seq_;
  at::Tensor x_, y_, ln1_w_, ln1_b_, ln2_w_, ln2_b_, qkv_w_, qkv_b_, proj_w_, proj_b_, fc1_w_,
      fc1_b_, fc2_w_, fc2_b_;
};

}  // namespace

PeerPrepared torch_mlp_train(bool small) {
  int64_t batch = small ? 64 : 256;
  return {std::make_unique<MlpTrainCase>(batch), "batch " + std::to_string(batch), 0, 0};
}

PeerPrepared torch_block(bool small) {
  int64_t batch = small ? 2 : 8, seq = small ? 128 : 512;
  return {std::make_unique<BlockCase>(batch, seq),
          "batch " + std::to_string(batch) + ", seq " + std::to_string(seq) + ", d 512", 0, 0};
}

}  // namespace kiln::perf::peer

// block: forward pass of a pre-norm transformer block, batch 8, seq 512, d 512, 8 heads (batch 2,
// seq 128 small), without autograd:
//   x = x + proj(attention(split_heads(qkv(layer_norm(x)))))    (causal attention)
//   x = x + fc2(gelu_tanh(fc1(layer_norm(x))))                  (MLP 4x wide)
#include <cmath>

#include "perf/workload.h"

namespace kiln::perf {

namespace {

constexpr int64_t kD = 512, kHeads = 8;

Tensor weight(int64_t out, int64_t in) { return randn({out, in}) * (1.0 / std::sqrt(in)); }

class BlockCase : public Case {
 public:
  BlockCase(int64_t batch, int64_t seq) : batch_(batch), seq_(seq) {
    manual_seed(0);
    x_ = randn({batch, seq, kD});
    ln1_w_ = ones({kD}), ln1_b_ = zeros({kD}), ln2_w_ = ones({kD}), ln2_b_ = zeros({kD});
    qkv_w_ = weight(3 * kD, kD), qkv_b_ = zeros({3 * kD});
    proj_w_ = weight(kD, kD), proj_b_ = zeros({kD});
    fc1_w_ = weight(4 * kD, kD), fc1_b_ = zeros({4 * kD});
    fc2_w_ = weight(kD, 4 * kD), fc2_b_ = zeros({kD});
  }
  void run() override {
    NoGradGuard no_grad;
    const int64_t hd = kD / kHeads;
    Tensor h = layer_norm(x_, {kD}, ln1_w_, ln1_b_);
    std::vector<Tensor> qkv = chunk(linear(h, qkv_w_, qkv_b_), 3, -1);
    auto heads = [&](const Tensor& t) {
      return t.reshape({batch_, seq_, kHeads, hd}).transpose(1, 2);
    };
    Tensor a = scaled_dot_product_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]), true);
    a = a.transpose(1, 2).reshape({batch_, seq_, kD});
    Tensor x = x_ + linear(a, proj_w_, proj_b_);
    Tensor m = gelu(linear(layer_norm(x, {kD}, ln2_w_, ln2_b_), fc1_w_, fc1_b_), "tanh");
    y_ = x + linear(m, fc2_w_, fc2_b_);
  }
  void check() const override {
    // No scalar reference for a whole block: check the shape and that every value is finite.
    KILN_CHECK(y_.sizes() == x_.sizes(), "block: output shape {} differs from the input's",
               shape_str(y_.sizes()));
    const float* y = y_.contiguous().data_ptr<float>();
    for (int64_t i = 0; i < y_.numel(); ++i)
      KILN_CHECK(std::isfinite(y[i]), "block: output element {} is {}", i, y[i]);
  }

 private:
  int64_t batch_, seq_;
  Tensor x_, y_, ln1_w_, ln1_b_, ln2_w_, ln2_b_, qkv_w_, qkv_b_, proj_w_, proj_b_, fc1_w_, fc1_b_,
      fc2_w_, fc2_b_;
};

}  // namespace

Workload block_workload() {
  return {"block", "transformer block forward, batch 8, seq 512, d 512, 8 heads (ms)", "",
          [](Size size, Device) {
            bool small = size == Size::Small;
            int64_t batch = small ? 2 : 8, seq = small ? 128 : 512;
            Prepared p;
            p.c = std::make_unique<BlockCase>(batch, seq);
            p.shape = fmt::format("batch {}, seq {}, d 512", batch, seq);
            return p;
          }};
}

}  // namespace kiln::perf

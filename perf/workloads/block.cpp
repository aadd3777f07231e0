// block: forward pass of a pre-norm transformer block (perf/workloads/transformer_block.h), batch
// 8, seq 512, d 512, 8 heads (batch 2, seq 128 small), without autograd.
#include "perf/workload.h"
#include "perf/workloads/transformer_block.h"

namespace kiln::perf {

namespace {

constexpr int64_t kD = 512, kHeads = 8;

class BlockCase : public Case {
 public:
  BlockCase(int64_t batch, int64_t seq) {
    manual_seed(0);
    x_ = randn({batch, seq, kD});
    w_ = make_block_weights(kD);
  }
  void run() override {
    NoGradGuard no_grad;
    y_ = transformer_block(x_, w_, kHeads);
  }
  void check() const override { check_block_output("block", x_, y_); }

 private:
  Tensor x_, y_;
  TensorList w_;
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

#include "runtime/autograd/device_move.h"

#include "runtime/autograd/autograd_meta.h"
#include "runtime/autograd/record.h"

namespace kiln {

namespace {

class DeviceMoveNode final : public GradNode {
 public:
  explicit DeviceMoveNode(Device from) : from_(from) {}
  std::vector<Tensor> apply(const Tensor& grad_output) override {
    // The engine runs nodes under NoGradGuard: this move is not recorded itself.
    return {grad_output.to(from_)};
  }
  std::string name() const override { return "ToDeviceBackward"; }

 private:
  Device from_;  // where the input lives
};

}  // namespace

void record_device_move(const Tensor& input, const Tensor& out) {
  Ref<GradNode> node(new DeviceMoveNode(input.device()));
  node->next_edges().push_back(gradient_edge(input));
  AutogradMeta& m = out.impl()->ensure_autograd();
  m.grad_fn = std::move(node);
  m.output_nr = 0;
}

}  // namespace kiln

// The engine's multi-root backward and nodes with several outputs (runtime/autograd/engine.cpp):
// what checkpoint relies on.
#include "gradcheck.h"
#include "record_util.h"
#include "runtime/autograd/autograd_meta.h"
#include "runtime/autograd/engine.h"
#include "runtime/autograd/record.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

TEST(AutogradMultiRoot, SumsGradientsFromEveryRoot) {
  Tensor x = from_vector<double>({1, 2}, {2}).requires_grad_();
  Tensor a = x * x;    // 2x
  Tensor b = a * 3.0;  // 6x, and b depends on root a
  Tensor c = x.exp();  // e^x
  const Tensor roots[] = {a, b, c};
  const Tensor grads[] = {ones({2}, kFloat64), ones({2}, kFloat64) * 2.0, ones({2}, kFloat64)};
  run_backward(roots, grads, false);
  // 2x + 2 * 6x + e^x
  std::vector<double> g = x.grad().to_vector<double>();
  EXPECT_DOUBLE_EQ(g[0], 2 + 12 + std::exp(1.0));
  EXPECT_DOUBLE_EQ(g[1], 4 + 24 + std::exp(2.0));
}

TEST(AutogradMultiRoot, LeafRootsAndImplicitScalarSeeds) {
  Tensor x = from_vector<double>({3}, {1}).requires_grad_();
  Tensor y = (x * x).sum();
  const Tensor roots[] = {x, y};
  const Tensor grads[] = {Tensor(), Tensor()};
  run_backward(roots, grads, false);
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), 1 + 6);
}

// A node with two outputs: out0 = 2 * in, out1 = 3 * in.
class TwoOutputs : public GradNode {
 public:
  int calls = 0;
  std::vector<Tensor> apply(const Tensor& g) override { return {g * 2.0}; }
  std::vector<Tensor> apply_outputs(std::span<const Tensor> g) override {
    ++calls;
    Tensor sum;
    if (g[0].defined()) sum = g[0] * 2.0;
    if (g.size() > 1 && g[1].defined()) sum = sum.defined() ? sum + g[1] * 3.0 : g[1] * 3.0;
    return {sum};
  }
  std::string name() const override { return "TwoOutputs"; }
};

// A tensor that is output `nr` of `node`.
Tensor output_of(const Ref<GradNode>& node, uint32_t nr, const Tensor& value) {
  Tensor t = value.detach();
  AutogradMeta& m = t.impl()->ensure_autograd();
  m.grad_fn = node;
  m.output_nr = nr;
  return t;
}

TEST(AutogradMultiRoot, MultiOutputNodeGetsPerOutputSumsAndRunsOnce) {
  Tensor x = from_vector<double>({1, 10}, {2}).requires_grad_();
  Ref<GradNode> node(new TwoOutputs());
  node->next_edges().push_back(gradient_edge(x));
  Tensor o0 = output_of(node, 0, x * 2.0), o1 = output_of(node, 1, x * 3.0);
  EXPECT_EQ(o1.grad_fn_name(), "TwoOutputs");
  Tensor loss = (o0 + o0).sum() + (o1 * 5.0).sum();  // d/do0 = 2, d/do1 = 5
  loss.backward();
  EXPECT_EQ(static_cast<TwoOutputs*>(node.get())->calls, 1);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2 * 2 + 5 * 3, 2 * 2 + 5 * 3}));

  // Only output 1 reached: output 0's slot stays undefined.
  Tensor y = from_vector<double>({1}, {1}).requires_grad_();
  Ref<GradNode> node2(new TwoOutputs());
  node2->next_edges().push_back(gradient_edge(y));
  Tensor p1 = output_of(node2, 1, y * 3.0);
  output_of(node2, 0, y * 2.0);  // never used
  p1.sum().backward();
  EXPECT_EQ(y.grad().item<double>(), 3.0);
}

}  // namespace

#include "runtime/autograd/record.h"

#include "runtime/autograd/autograd_meta.h"
#include "runtime/autograd/op_node.h"
#include "runtime/error.h"

namespace kiln {

Edge gradient_edge(const Tensor& t) {
  const TensorImpl* x = t.impl();
  if (!x->requires_grad()) return {};
  AutogradMeta* m = x->autograd();
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  return {Ref<GradNode>(new AccumulateGrad(t.impl_ref())), 0};
}

void record_autograd(const OpDef& def, const OpCall& call, const Tensor& out) {
  if (!is_floating(out.impl()->dtype())) return;  // integer and bool results carry no gradient
  uint32_t needs = 0;
  for (size_t i = 0; i < call.inputs.size(); ++i)
    if (call.inputs[i].impl()->requires_grad()) needs |= 1u << i;
  Ref<GradNode> node(new OpNode(def, call, out, needs));
  auto& edges = node->next_edges();
  edges.reserve(call.inputs.size());
  for (const Tensor& in : call.inputs) edges.push_back(gradient_edge(in));
  AutogradMeta& m = out.impl()->ensure_autograd();
  m.grad_fn = std::move(node);
  m.output_nr = 0;
  m.is_view = (def.flags & kIsView) != 0;
}

bool inplace_with_autograd(const OpDef& def, const OpCall& call, Tensor& out) {
  if (!GradMode::is_enabled()) return false;
  const char* name = op_name(call.op);
  if (AutogradMeta* m = out.impl()->autograd()) {
    KILN_CHECK(!(m->requires_grad && !m->grad_fn),
               "{} (in place): a leaf tensor that requires grad ({}) cannot be modified in place; "
               "wrap the update in kiln::NoGradGuard or use an out-of-place op",
               name, shape_str(out.impl()->sizes()));
    KILN_CHECK(!m->is_view,
               "{} (in place): writing in place into a view of a tensor that requires grad ({}) is "
               "not supported; clone() the view first",
               name, shape_str(out.impl()->sizes()));
  }
  // Inputs aliasing `out` are cloned first (recorded), so the node keeps their old values.
  std::vector<Tensor> inputs(call.inputs.begin(), call.inputs.end());
  for (Tensor& t : inputs)
    if (t.impl()->storage() == out.impl()->storage()) t = t.clone();
  Tensor result = dispatch(call.op, inputs, call.attrs);
  {
    NoGradGuard no_grad;
    const Tensor src[] = {result};
    dispatch_into(OpId::Copy, src, Attrs{}, out);
  }
  AutogradMeta& m = out.impl()->ensure_autograd();
  if (AutogradMeta* rm = result.impl()->autograd()) {
    m.grad_fn = rm->grad_fn;
    m.output_nr = rm->output_nr;
  }
  (void)def;
  return true;
}

}  // namespace kiln

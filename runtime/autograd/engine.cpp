#include "runtime/autograd/engine.h"

#include <unordered_map>
#include <vector>

#include "runtime/autograd/autograd_meta.h"
#include "runtime/autograd/grad_mode.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"

namespace kiln {

namespace {

// The engine sits in runtime/, below ops/, so it calls the few ops it needs by id.
Tensor add_tensors(const Tensor& a, const Tensor& b) {
  const Tensor in[] = {a, b};
  return dispatch(OpId::Add, in, Attrs{});
}

Tensor ones_like_tensor(const Tensor& t) {
  Attrs a;
  a.dims = t.impl()->sizes();
  a.scalars[0] = 1;
  a.dtype = t.impl()->dtype();
  a.device = t.impl()->device();
  return dispatch(OpId::Fill, {}, a);
}

Tensor copy_tensor(const Tensor& t) {
  const Tensor in[] = {t};
  return dispatch(OpId::Copy, in, Attrs{});
}

}  // namespace

std::vector<Tensor> AccumulateGrad::apply(const Tensor& grad_output) {
  AutogradMeta& m = leaf_->ensure_autograd();
  if (!m.grad.defined()) {
    // Keep a private, dense copy when the gradient could alias something else or is expanded:
    // another handle to the same tensor (AddBackward hands one gradient to both inputs; the seed
    // a caller passed to backward()) or a view of its storage. The engine's own handle is one.
    bool own = grad_output.impl()->is_contiguous() &&
               grad_output.impl()->storage()->use_count() == 1 &&
               grad_output.impl()->use_count() == 1;
    m.grad = own ? grad_output : copy_tensor(grad_output);
  } else {
    m.grad = add_tensors(m.grad, grad_output);
  }
  return {};
}

namespace {

// The gradient that starts backward at `root`: `grad` checked against it, or ones for a scalar.
Tensor seed_gradient(const Tensor& root, const Tensor& grad) {
  const TensorImpl* r = root.impl();
  KILN_CHECK(r->requires_grad(),
             "backward: the tensor ({}) does not require grad and has no grad_fn",
             shape_str(r->sizes()));
  if (!grad.defined()) {
    KILN_CHECK(r->numel() == 1,
               "backward: a gradient can be created implicitly only for a tensor with one "
               "element; this one has shape {}; pass the gradient explicitly",
               shape_str(r->sizes()));
    return ones_like_tensor(root);
  }
  KILN_CHECK(grad.impl()->sizes() == r->sizes(),
             "backward: the gradient has shape {} but the tensor has shape {}",
             shape_str(grad.impl()->sizes()), shape_str(r->sizes()));
  KILN_CHECK(grad.impl()->device() == r->device(),
             "backward: the gradient is on {} but the tensor is on {}; move it with .to()",
             grad.impl()->device(), r->device());
  return grad;
}

// Gradients waiting for one node, indexed by the output they belong to (Edge::input_nr).
using PendingGrads = std::vector<Tensor>;

void add_pending(PendingGrads& slots, uint32_t output_nr, const Tensor& g) {
  if (slots.size() <= output_nr) slots.resize(output_nr + 1);
  Tensor& slot = slots[output_nr];
  slot = slot.defined() ? add_tensors(slot, g) : g;
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  const Tensor roots[] = {root};
  const Tensor grads[] = {grad};
  run_backward(roots, grads, retain_graph);
}

void run_backward(std::span<const Tensor> roots, std::span<const Tensor> grads, bool retain_graph) {
  KILN_CHECK(roots.size() == grads.size(), "backward: {} roots but {} gradients", roots.size(),
             grads.size());
  std::vector<Tensor> seeds;
  seeds.reserve(roots.size());
  for (size_t i = 0; i < roots.size(); ++i) seeds.push_back(seed_gradient(roots[i], grads[i]));

  NoGradGuard no_grad;
  // Where each root's gradient enters the graph: its grad_fn (at its output_nr), or a fresh
  // accumulator for a leaf.
  std::vector<Edge> starts;
  starts.reserve(roots.size());
  for (const Tensor& root : roots) {
    AutogradMeta* rm = root.impl()->autograd();
    starts.push_back(rm->grad_fn ? Edge{rm->grad_fn, rm->output_nr}
                                 : Edge{Ref<GradNode>(new AccumulateGrad(root.impl_ref())), 0});
  }

  // Count, for every reachable node, how many edges lead into it.
  std::unordered_map<GradNode*, int> deps;
  std::vector<GradNode*> stack;
  for (const Edge& s : starts)
    if (deps.try_emplace(s.fn.get(), 0).second) stack.push_back(s.fn.get());
  while (!stack.empty()) {
    GradNode* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      auto [it, fresh] = deps.try_emplace(e.fn.get(), 0);
      ++it->second;
      if (fresh) stack.push_back(e.fn.get());
    }
  }

  // Run nodes whose every producer of gradient has run; sum what reaches each (node, output)
  // first. A node that no gradient reached still releases its successors (they may get
  // gradient elsewhere). A root reachable from another root waits for it like any node.
  std::unordered_map<GradNode*, PendingGrads> pending;
  std::vector<Ref<GradNode>> ready;
  for (size_t i = 0; i < starts.size(); ++i) {
    GradNode* n = starts[i].fn.get();
    bool first = pending.find(n) == pending.end();
    add_pending(pending[n], starts[i].input_nr, seeds[i]);
    if (first && deps[n] == 0) ready.push_back(starts[i].fn);
  }
  while (!ready.empty()) {
    Ref<GradNode> n = std::move(ready.back());
    ready.pop_back();
    PendingGrads g;
    if (auto it = pending.find(n.get()); it != pending.end()) {
      g = std::move(it->second);
      pending.erase(it);
    }
    bool reached = false;
    for (const Tensor& t : g) reached |= t.defined();
    std::vector<Tensor> grads_in;
    if (reached) grads_in = n->apply_outputs(g);
    const auto& edges = n->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      GradNode* next = e.fn.get();
      if (i < grads_in.size() && grads_in[i].defined())
        add_pending(pending[next], e.input_nr, grads_in[i]);
      if (--deps[next] == 0) ready.push_back(e.fn);
    }
    if (!retain_graph && reached) n->release_saved();
  }
}

}  // namespace kiln

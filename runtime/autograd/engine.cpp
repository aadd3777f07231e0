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
    // Keep a private, dense copy when the gradient could alias something else or is expanded.
    bool own =
        grad_output.impl()->is_contiguous() && grad_output.impl()->storage()->use_count() == 1;
    m.grad = own ? grad_output : copy_tensor(grad_output);
  } else {
    m.grad = add_tensors(m.grad, grad_output);
  }
  return {};
}

void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  const TensorImpl* r = root.impl();
  KILN_CHECK(r->requires_grad(),
             "backward: the tensor ({}) does not require grad and has no grad_fn",
             shape_str(r->sizes()));
  Tensor seed = grad;
  if (!seed.defined()) {
    KILN_CHECK(r->numel() == 1,
               "backward: a gradient can be created implicitly only for a tensor with one "
               "element; this one has shape {}; pass the gradient explicitly",
               shape_str(r->sizes()));
    seed = ones_like_tensor(root);
  } else {
    KILN_CHECK(seed.impl()->sizes() == r->sizes(),
               "backward: the gradient has shape {} but the tensor has shape {}",
               shape_str(seed.impl()->sizes()), shape_str(r->sizes()));
  }

  NoGradGuard no_grad;
  AutogradMeta* rm = r->autograd();
  Ref<Node> start = rm->grad_fn ? rm->grad_fn : Ref<Node>(new AccumulateGrad(root.impl_ref()));

  // Count, for every reachable node, how many edges lead into it.
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack{start.get()};
  deps[start.get()] = 0;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      auto [it, fresh] = deps.try_emplace(e.fn.get(), 0);
      ++it->second;
      if (fresh) stack.push_back(e.fn.get());
    }
  }

  // Run nodes whose every producer of gradient has run; sum what reaches each node first. A node
  // that no gradient reached still releases its successors (they may get gradient elsewhere).
  std::unordered_map<Node*, Tensor> pending;
  std::vector<Ref<Node>> ready{start};
  pending[start.get()] = seed;
  while (!ready.empty()) {
    Ref<Node> n = std::move(ready.back());
    ready.pop_back();
    auto it = pending.find(n.get());
    Tensor g;
    if (it != pending.end()) {
      g = std::move(it->second);
      pending.erase(it);
    }
    std::vector<Tensor> grads;
    if (g.defined()) grads = n->apply(g);
    const auto& edges = n->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      Node* next = e.fn.get();
      if (i < grads.size() && grads[i].defined()) {
        Tensor& slot = pending[next];
        slot = slot.defined() ? add_tensors(slot, grads[i]) : grads[i];
      }
      if (--deps[next] == 0) ready.push_back(e.fn);
    }
    if (!retain_graph && g.defined()) n->release_saved();
  }
}

}  // namespace kiln

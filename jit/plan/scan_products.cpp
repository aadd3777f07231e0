#include "jit/plan/scan_products.h"

#include <optional>
#include <utility>

#include "jit/plan/jit_plan.h"
#include "jit/plan/product_batch.h"
#include "runtime/config.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"
#include "tracer/hop/stacking.h"
#include "tracer/hop_interpreter.h"

namespace kiln::jit {

std::vector<InvariantProduct> find_invariant_products(const tracer::Graph& g,
                                                      const std::vector<Step>& steps) {
  std::vector<InvariantProduct> found;
  if (!config().jit_batch_products) return found;
  std::vector<int32_t> input_of(static_cast<size_t>(g.num_values()), -1);
  for (size_t i = 0; i < g.inputs.size(); ++i) input_of[g.inputs[i].id] = static_cast<int32_t>(i);
  std::vector<int32_t> producer(static_cast<size_t>(g.num_values()), -1);
  for (size_t j = 0; j < g.nodes.size(); ++j) producer[g.nodes[j].output] = static_cast<int32_t>(j);
  std::vector<uint8_t> is_output(static_cast<size_t>(g.num_values()), 0);
  for (tracer::ValueId v : g.outputs) is_output[v] = 1;
  for (size_t s = 0; s < steps.size(); ++s) {
    if (!steps[s].blas) continue;
    const tracer::Node& n = g.nodes[steps[s].node];
    // A product the body returns must stay a fresh tensor (a final carry reaches the user).
    if (n.inputs.size() != 2 || input_of[n.inputs[0]] < 0 || is_output[n.output]) continue;
    InvariantProduct c;
    tracer::ValueId b = n.inputs[1];
    while (input_of[b] < 0 && producer[b] >= 0) {
      const tracer::Node& v = g.nodes[producer[b]];
      if (!(op_def(v.op).flags & kIsView) || v.inputs.size() != 1) break;
      c.right_nodes.insert(c.right_nodes.begin(), producer[b]);
      b = v.inputs[0];
    }
    if (input_of[b] < 0) continue;
    c.step = static_cast<int32_t>(s);
    c.product = n.output;
    c.left_input = input_of[n.inputs[0]];
    c.right_input = input_of[b];
    found.push_back(std::move(c));
  }
  return found;
}

std::optional<std::vector<Tensor>> run_loop_with_products(const tracer::Node& n, JitPlan& body,
                                                          std::span<const Tensor> in) {
  // scan: [init..., xs..., captures...]; map: [xs..., captures...] (tracer/hop_nodes.h).
  const bool scan = n.op == OpId::Scan;
  const auto init = scan ? static_cast<size_t>(n.attrs.ints[0]) : size_t{0};
  const auto nxs = static_cast<size_t>(n.attrs.ints[scan ? 1 : 0]);
  const std::span<const Tensor> xs = in.subspan(init, nxs);
  const int64_t steps = xs.front().impl()->sizes()[0];
  // Each candidate with a scanned left operand and an invariant right one: its stacked product.
  struct Hoisted {
    tracer::ValueId product;
    int64_t rows;  // M: each step's rows
    Tensor all;
  };
  std::vector<Hoisted> hoisted;
  if (steps >= 2) {
    std::vector<Tensor> first(in.begin(), in.begin() + static_cast<ptrdiff_t>(init));
    for (const Tensor& x : xs) first.push_back(x.select(0, 0));
    first.insert(first.end(), in.begin() + static_cast<ptrdiff_t>(init + nxs), in.end());
    for (const InvariantProduct& c : body.invariant_products()) {
      const auto left = static_cast<size_t>(c.left_input),
                 right = static_cast<size_t>(c.right_input);
      if (left < init || left >= init + nxs || right < init + nxs) continue;
      // The scanned input's steps stacked as rows: [T, M, K], each step's rows one stride apart
      // and the steps M rows apart.
      const TensorImpl* x = xs[left - init].impl();
      if (x->dim() != 3) continue;
      const int64_t M = x->sizes()[1], K = x->sizes()[2];
      const int64_t row_stride = x->strides()[1];
      if (M < 2 || (K > 1 && x->strides()[2] != 1) || row_stride < K ||
          x->strides()[0] != M * row_stride)
        continue;
      try {
        tracer::RunArgs args;
        args.inputs = first;
        const Tensor b = body.invariant_operand(c, args);
        Tensor all = stacked_product(
            row_view(xs[left - init], steps * M, K, row_stride, x->offset()), steps, b);
        if (all.defined()) hoisted.push_back({c.product, M, std::move(all)});
      } catch (const Error&) {  // the operand's views failed: the steps compute it themselves
      }
    }
  }
  if (hoisted.empty()) return std::nullopt;
  // The interpreter runs the body once per step, in order: the t-th call is step t.
  int64_t t = 0;
  std::vector<std::pair<tracer::ValueId, Tensor>> given(hoisted.size());
  return tracer::run_hop_node(
      n,
      [&](size_t, std::vector<Tensor> a) {
        for (size_t h = 0; h < hoisted.size(); ++h)
          given[h] = {hoisted[h].product, rows_of(hoisted[h].all, t, hoisted[h].rows)};
        ++t;
        tracer::RunArgs ra;
        ra.inputs = a;
        tracer::InterpretResult r = body.run_with_products(ra, given);
        for (auto& g : given) g.second = Tensor();
        if (r.error) std::rethrow_exception(r.error);
        return std::move(r.outputs);
      },
      in);
}

}  // namespace kiln::jit

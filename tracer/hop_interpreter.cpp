#include "tracer/hop_interpreter.h"

#include "ops/functions.h"
#include "runtime/error.h"
#include "tracer/hop/stacking.h"
#include "tracer/interpreter.h"

namespace kiln::tracer {

namespace {

using Tensors = std::vector<Tensor>;

Tensors concat(std::span<const Tensor> a, std::span<const Tensor> b) {
  Tensors out(a.begin(), a.end());
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// A one-element tensor's truth (nonzero, NaN included, is true), as Tensor::item<bool> reads it
// in eager mode. Read from memory: the interpreter runs inside a flush, not at a sync point.
bool truth_of(const Tensor& pred, const char* what) {
  KILN_CHECK(pred.impl()->numel() == 1,
             "{} must have exactly one element, got a tensor of shape {} {}", what,
             shape_str(pred.impl()->sizes()), pred.impl()->dtype());
  const Tensor d = pred.to(DType::Float64).contiguous();
  const TensorImpl* di = d.impl();
  return static_cast<const double*>(di->storage()->data())[di->offset()] != 0.0;
}

}  // namespace

std::vector<Tensor> run_hop_node(const Node& n, std::span<const InterpreterPlan> bodies,
                                 std::span<const Tensor> inputs) {
  return run_hop_node(
      n,
      [&](size_t k, Tensors args) {
        InterpretResult r = interpret(n.subgraphs[k], bodies[k], args);
        if (r.error) std::rethrow_exception(r.error);
        return std::move(r.outputs);
      },
      inputs);
}

std::vector<Tensor> run_hop_node(const Node& n, const BodyRunner& run_body,
                                 std::span<const Tensor> inputs) {
  const auto count = [&](int i) { return static_cast<size_t>(n.attrs.ints[i]); };
  switch (n.op) {
    case OpId::Cond: {
      const size_t ops = count(0), c0 = count(1);
      auto operands = inputs.subspan(1, ops);
      if (truth_of(inputs[0], "cond: pred"))
        return run_body(0, concat(operands, inputs.subspan(1 + ops, c0)));
      return run_body(1, concat(operands, inputs.subspan(1 + ops + c0)));
    }
    case OpId::WhileLoop: {
      const size_t carried = count(0), cc = count(1);
      auto cond_caps = inputs.subspan(carried, cc);
      auto body_caps = inputs.subspan(carried + cc);
      Tensors state(inputs.begin(), inputs.begin() + static_cast<ptrdiff_t>(carried));
      while (truth_of(run_body(0, concat(state, cond_caps)).at(0),
                      "while_loop: the result of cond_fn"))
        state = run_body(1, concat(state, body_caps));
      return state;
    }
    case OpId::Scan: {
      const size_t init = count(0), nxs = count(1);
      const Tensors xs(inputs.begin() + static_cast<ptrdiff_t>(init),
                       inputs.begin() + static_cast<ptrdiff_t>(init + nxs));
      auto caps = inputs.subspan(init + nxs);
      Tensors carry(inputs.begin(), inputs.begin() + static_cast<ptrdiff_t>(init));
      std::vector<Tensors> ys;
      const int64_t steps = xs.front().impl()->sizes()[0];
      for (int64_t t = 0; t < steps; ++t) {
        Tensors out = run_body(0, concat(concat(carry, hop::slices_at(xs, t)), caps));
        carry.assign(out.begin(), out.begin() + static_cast<ptrdiff_t>(init));
        ys.emplace_back(out.begin() + static_cast<ptrdiff_t>(init), out.end());
      }
      Tensors result = std::move(carry);
      for (Tensor& y : hop::stack_steps(ys)) result.push_back(std::move(y));
      return result;
    }
    case OpId::Map: {
      const size_t nxs = count(0);
      const Tensors xs(inputs.begin(), inputs.begin() + static_cast<ptrdiff_t>(nxs));
      auto caps = inputs.subspan(nxs);
      std::vector<Tensors> ys;
      const int64_t steps = xs.front().impl()->sizes()[0];
      for (int64_t t = 0; t < steps; ++t)
        ys.push_back(run_body(0, concat(hop::slices_at(xs, t), caps)));
      return hop::stack_steps(ys);
    }
    case OpId::Call:
      return run_body(0, Tensors(inputs.begin(), inputs.end()));
    default:
      break;
  }
  throw Error(fmt::format("interpret: {} is not a higher-order node", op_name(n.op)));
}

}  // namespace kiln::tracer

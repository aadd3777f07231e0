// Higher-order nodes of a recorded graph (DESIGN.md, "Tracer"). A node of one of these ops owns
// bodies (Node::subgraphs, each a self-contained Graph) and produces a tuple: its own value is a
// placeholder that only tuple_get nodes read (tuple_get: one input, ints[0] = the index, meta =
// the element's). Inputs, attrs and bodies per op:
//
//   cond        inputs [pred, operands..., captures of body 0..., captures of body 1...]
//               ints {#operands, #captures 0, #captures 1}
//               bodies {true_fn, false_fn}: inputs [operands..., own captures...] -> results
//   while_loop  inputs [carried..., captures of cond..., captures of body...]
//               ints {#carried, #cond captures, #body captures}
//               bodies {cond_fn: [carried..., own captures...] -> one-element tensor,
//                       body_fn: [carried..., own captures...] -> carried'}
//               result: the final carried values
//   scan        inputs [init..., xs..., captures...]; ints {#init, #xs, #captures, #ys}
//               body: [carry..., x_t..., captures...] -> [carry'..., y_t...]
//               result: [final carry..., ys stacked along dim 0...]
//   map         inputs [xs..., captures...]; ints {#xs, #captures}
//               body: [x_t..., captures...] -> [y...]; result: ys stacked along dim 0
//   call        inputs [args..., captures...]; ints {#args}
//               body: [args..., captures...] -> results (region, checkpoint, compile)
//
// Captures are tensors a body used that were neither its arguments nor made inside it (a weight a
// lambda captured): the tracer lifts them to extra body inputs (tracer/body_tracer.h).
#pragma once
#include <span>
#include <vector>

#include "runtime/tensor.h"
#include "tracer/graph.h"

namespace kiln::tracer {

// Registers the op definitions of these nodes (flag kHigherOrder; they are never dispatched).
void register_hop_ops();

// The metadata of the tuple placeholder value a higher-order node defines.
ValueMeta tuple_meta();
// A tuple_get node's attrs and metadata for result `index` of metadata `result` (a fresh
// row-major tensor: strides and offset cleared).
Attrs tuple_get_attrs(size_t index);
ValueMeta tuple_element_meta(const ValueMeta& result);

}  // namespace kiln::tracer

#include "tracer/hop_nodes.h"

#include "runtime/dispatcher.h"
#include "runtime/error.h"

namespace kiln::tracer {

namespace {

[[noreturn]] void never_dispatched(const OpCall& call) {
  throw Error(fmt::format(
      "{}: a higher-order graph node is run by the tracer's interpreter and cannot be dispatched "
      "as an op",
      op_name(call.op)));
}
void hop_meta(const OpCall& call, OutputMeta&) { never_dispatched(call); }
void hop_eager(const OpCall& call, const Tensor&) { never_dispatched(call); }

}  // namespace

void register_hop_ops() {
  for (OpId id : {OpId::Cond, OpId::WhileLoop, OpId::Scan, OpId::Map, OpId::Call, OpId::TupleGet})
    register_op(id, {op_name(id), hop_meta, hop_eager, kHigherOrder});
}

ValueMeta tuple_meta() {
  ValueMeta m;  // a 0-d bool: never materialized, only read by tuple_get
  m.dtype = DType::Bool;
  return m;
}

Attrs tuple_get_attrs(size_t index) {
  Attrs a;
  a.ints[0] = static_cast<int64_t>(index);
  return a;
}

ValueMeta tuple_element_meta(const ValueMeta& result) {
  ValueMeta m = result;
  m.strides = {};
  m.offset = 0;
  return m;
}

}  // namespace kiln::tracer

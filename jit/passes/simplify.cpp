#include "jit/passes/simplify.h"

#include <cmath>

#include "ops/pointwise.h"
#include "runtime/dispatcher.h"

namespace kiln::jit::passes {

namespace {

using tracer::Node;
using tracer::ValueId;
using tracer::ValueMeta;

// A Scalar as the eager kernel of compute dtype `d` sees it (ops/pointwise.cpp ScalarBuffer).
struct Converted {
  double value;
  bool negative_zero;
};
Converted as_computed(const Scalar& s, DType d) {
  switch (d) {
    case DType::Float32: {
      const float f = s.to<float>();
      return {f, f == 0 && std::signbit(f)};
    }
    case DType::Float64: {
      const double f = s.to<double>();
      return {f, f == 0 && std::signbit(f)};
    }
    case DType::Int32:
      return {static_cast<double>(s.to<int32_t>()), false};
    case DType::Int64:
      return {static_cast<double>(s.to<int64_t>()), false};
    case DType::Bool:
      return {s.to<bool>() ? 1.0 : 0.0, false};
  }
  return {std::nan(""), false};
}

// x + s == x and s + x == x for every x: -0.0 for floats (x + -0 is x, -0 + -0 is -0), 0 for
// integers and Bool (false).
bool is_additive_identity(const Converted& c, DType d) {
  return c.value == 0 && (!is_floating(d) || c.negative_zero);
}
// x - s == x for every x: +0.0 for floats (x - +0 is x, -0 - +0 is -0), 0 for integers.
bool is_subtractive_identity(const Converted& c, DType d) {
  return c.value == 0 && (!is_floating(d) || !c.negative_zero);
}

}  // namespace

int simplify(PassGraph& pg) {
  tracer::Graph& g = pg.graph;
  const size_t nv = static_cast<size_t>(g.num_values());
  const std::vector<const ValueMeta*> meta = pg.metas();
  const std::vector<int32_t> producer = pg.producers();
  const std::vector<uint8_t> is_output = pg.output_flags();
  std::vector<std::vector<int32_t>> readers = pg.readers();
  std::vector<ValueId> repl(nv);
  for (size_t v = 0; v < nv; ++v) repl[v] = static_cast<ValueId>(v);

  // Whether every reader of `v` may read `x` instead (see simplify.h).
  auto may_bypass = [&](ValueId v, ValueId x) {
    if (is_output[v]) return false;
    const ValueMeta& xm = *meta[x];
    const ValueMeta& vm = *meta[v];
    if (xm.sizes != vm.sizes || xm.dtype != vm.dtype || xm.device != vm.device) return false;
    // Fresh, row-major from offset 0: any reader may take x instead. Not a graph output: the
    // plan may compute that into its destination (an in-place update written straight into the
    // user's strided memory), where a view's strides, taken from v's row-major buffer, would
    // read other elements (RecordFuzz.ScalarVariants, recorded-pass seed 12253212: a clone of
    // relu_'s result read by as_strided).
    if (producer[x] >= 0 && xm.strides.empty() && !is_output[x]) return true;
    for (int32_t r : readers[v]) {
      const uint32_t f = op_def(g.nodes[r].op).flags;
      if (!(f & kWritesAnyLayout) || (f & (kIsView | kHigherOrder))) return false;
    }
    return true;
  };

  int count = 0;
  for (size_t j = 0; j < g.nodes.size(); ++j) {
    Node& n = g.nodes[j];
    for (ValueId& v : n.inputs)
      while (repl[v] != v) v = repl[v];
    if (pg.has_runtime_scalar(j) || !n.subgraphs.empty()) continue;
    const DType d = n.meta.dtype;
    // cast(cast(y, m), d) = cast(y, d) where m holds every value of y's dtype exactly (Bool to
    // anything, Int32 to Int64 or Float64): the outer cast then rounds or converts y's own value,
    // as a direct cast does. (one_hot's compare reads Bool -> Int64 -> Float32: AVX2 has no
    // Int64 -> Float32 conversion.)
    if (n.op == OpId::Cast && n.inputs.size() == 1 && producer[n.inputs[0]] >= 0) {
      const Node& inner = g.nodes[static_cast<size_t>(producer[n.inputs[0]])];
      if (inner.op == OpId::Cast && inner.inputs.size() == 1 && inner.subgraphs.empty()) {
        const DType src = meta[inner.inputs[0]]->dtype, mid = meta[n.inputs[0]]->dtype;
        const bool exact = src == DType::Bool ||
                           (src == DType::Int32 && (mid == DType::Int64 || mid == DType::Float64));
        if (exact && meta[inner.inputs[0]]->sizes == n.meta.sizes) {
          n.inputs[0] = inner.inputs[0];
          readers[n.inputs[0]].push_back(static_cast<int32_t>(j));
          ++count;
          continue;
        }
      }
    }
    // The operand whose value n equals, if a rule applies.
    ValueId same = tracer::kNoValue;
    const bool unary_scalar =
        n.inputs.size() == 1 &&
        (n.op == OpId::Add || n.op == OpId::Sub || n.op == OpId::Mul || n.op == OpId::Div) &&
        scalar_side(n.attrs) != kNoScalar;
    if (unary_scalar && meta[n.inputs[0]]->dtype == d) {
      const ValueId x = n.inputs[0];
      const Converted c = as_computed(n.attrs.scalars[0], d);
      const bool right = scalar_side(n.attrs) == kScalarRight;
      switch (n.op) {
        case OpId::Mul:  // x * 1, 1 * x
          if (c.value == 1) same = x;
          break;
        case OpId::Div:  // x / 1
          if (right && c.value == 1) same = x;
          break;
        case OpId::Add:  // x + (-0), (-0) + x
          if (is_additive_identity(c, d)) same = x;
          break;
        case OpId::Sub:
          if (right && is_subtractive_identity(c, d)) {
            same = x;  // x - (+0)
          } else if (!right && is_additive_identity(c, d) && d != DType::Bool) {
            // (-0) - x is -x: -0 - +0 = -0, -0 - -0 = +0, and -0 - x = -x for x != 0.
            n.op = OpId::Neg;
            n.attrs = Attrs{};
            ++count;
          }
          break;
        default:
          break;
      }
    } else if (n.inputs.size() == 1 && meta[n.inputs[0]]->dtype == d) {
      const ValueId x = n.inputs[0];
      const int32_t p = producer[x];
      const Node* inner = p >= 0 ? &g.nodes[static_cast<size_t>(p)] : nullptr;
      switch (n.op) {
        case OpId::Neg:  // neg(neg(y)) = y: two sign flips
          if (inner != nullptr && inner->op == OpId::Neg) same = inner->inputs[0];
          break;
        case OpId::Abs:   // abs(abs(y)) = abs(y)
        case OpId::Relu:  // relu(relu(y)) = relu(y)
          if (inner != nullptr && inner->op == n.op) same = x;
          break;
        case OpId::PowScalar:  // pow(x, 1) = x (PowScalarF returns x; int_pow multiplies by 1)
          if (n.attrs.scalars[0].to_double() == 1.0) same = x;
          break;
        case OpId::Copy:  // the same bits (x's layout: may_bypass)
          same = x;
          break;
        default:
          break;
      }
    } else if (n.inputs.size() == 2 && n.inputs[0] == n.inputs[1] &&
               (n.op == OpId::Maximum || n.op == OpId::Minimum)) {
      same = n.inputs[0];  // max(x, x) = min(x, x) = x, NaN included
    } else if (n.inputs.size() == 3 && n.op == OpId::Where && n.inputs[1] == n.inputs[2]) {
      same = n.inputs[1];  // where(c, x, x) = x
    }
    if (same == tracer::kNoValue || !may_bypass(n.output, same)) continue;
    repl[n.output] = same;
    readers[same].insert(readers[same].end(), readers[n.output].begin(), readers[n.output].end());
    ++count;
  }
  return count;
}

}  // namespace kiln::jit::passes

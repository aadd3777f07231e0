#include "fuzz/hop_body.h"

#include <sstream>

#include "fuzz/pool.h"

namespace kiln::fuzz {

Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape out = a;
  if (b.size() > out.size()) out.insert(out.begin(), b.size() - out.size(), 1);
  for (size_t i = 1; i <= b.size(); ++i) {
    int64_t& o = out[out.size() - i];
    if (o == 1) o = b[b.size() - i];
  }
  return out;
}

Shape common_shape(const TensorList& args) {
  Shape out;
  for (const Tensor& t : args) out = broadcast_shape(out, t.sizes());
  return out;
}

Tensor eval_body(const Body& b, const TensorList& args, const Tensor& capture, int depth) {
  const Shape shape = common_shape(args);
  TensorList others = args;
  if (capture.defined() && broadcasts_to(capture.sizes(), shape)) others.push_back(capture);
  auto other = [&](uint32_t r) { return others[r % others.size()]; };
  Tensor v = args[b.start % args.size()].to(b.work);
  for (const BodyOp& o : b.ops) {
    switch (o.kind) {
      case BodyOp::Unary: {
        using F = Tensor (*)(const Tensor&);
        static const F fs[] = {neg, abs, tanh, sigmoid, sin, exp, square, relu, floor, sqrt};
        v = fs[o.op % 10](v);
        break;
      }
      case BodyOp::Binary: {
        using F = Tensor (*)(const Tensor&, const Tensor&);
        static const F fs[] = {[](const Tensor& a, const Tensor& c) { return add(a, c); },
                               [](const Tensor& a, const Tensor& c) { return sub(a, c); },
                               mul,
                               div,
                               maximum,
                               minimum};
        v = fs[o.op % 6](v, other(o.r));
        break;
      }
      case BodyOp::WithScalar:
        switch (o.op % 4) {
          case 0:
            v = add(v, o.x);
            break;
          case 1:
            v = mul(v, o.x);
            break;
          case 2:
            v = pow(v, 2.0);
            break;
          default:
            v = rsub(v, o.x);
            break;
        }
        break;
      case BodyOp::ReduceDim: {
        if (v.dim() == 0) {
          v = neg(v);
          break;
        }
        const std::vector<int64_t> dims{static_cast<int64_t>(o.r % v.dim())};
        Tensor red = o.op % 4 == 0   ? sum(v, dims, true)
                     : o.op % 4 == 1 ? mean(v, dims, true)
                     : o.op % 4 == 2 ? amax(v, dims, true)
                                     : amin(v, dims, true);
        v = (o.op >> 2) & 1 ? sub(v, red) : mul(v, red);
        break;
      }
      case BodyOp::ReduceAll:
        switch (o.op % 3) {
          case 0:
            v = sub(v, mean(v));
            break;
          case 1:
            v = div(v, add(amax(abs(v)), 1.0));
            break;
          default:
            v = add(v, sum(other(o.r)));
            break;
        }
        break;
      case BodyOp::Where:
        v = where(gt(v, o.x), v, other(o.r));
        break;
      case BodyOp::NestedCond: {
        const Body& yes = o.inner[0];
        const Body& no = o.inner[1];
        v = cond(
            gt(sum(v), o.x),
            [&](const TensorList& a) { return TensorList{eval_body(yes, a, capture, depth + 1)}; },
            [&](const TensorList& a) { return TensorList{eval_body(no, a, capture, depth + 1)}; },
            {v, other(o.r)})[0];
        break;
      }
      case BodyOp::NestedMap: {
        if (v.dim() == 0) {
          v = neg(v);
          break;
        }
        const Body& inner = o.inner[0];
        v = map(
            [&](const TensorList& x) {
              return TensorList{eval_body(inner, x, capture, depth + 1)};
            },
            {v})[0];
        break;
      }
      case BodyOp::Random:
        v = dropout(v, 0.5, /*train=*/true);
        break;
      case BodyOp::ReadsData:
        v = mul(v, Scalar(sum(v).to(kFloat64).item<double>()));
        break;
    }
  }
  v = v.to(b.dtype);
  if (b.reduce_out) return sum(v);
  // Broadcast by an op, not expand(): an expanded view that is "contiguous" by the size-1-dim
  // rule keeps stride 0 eagerly but is row-major traced (DISABLED_ repro in
  // tests/test_record_fuzz_hop.cpp).
  if (v.sizes() != shape) v = mul(v.expand(shape), 1.0);
  return v.contiguous();
}

std::string describe(const Body& b) {
  static const char* kinds[] = {"unary", "binary", "scalar", "reduce_dim", "reduce_all",
                                "where", "cond",   "map",    "RANDOM",     "READS"};
  std::ostringstream o;
  o << "{arg" << int(b.start) << " as " << dtype_name(b.work) << ":";
  for (const BodyOp& op : b.ops) {
    o << " " << kinds[op.kind] << "#" << int(op.op) << "/" << op.r << "/" << op.x;
    for (const Body& in : op.inner) o << describe(in);
  }
  o << " -> " << dtype_name(b.dtype) << (b.reduce_out ? " sum}" : "}");
  return o.str();
}

}  // namespace kiln::fuzz

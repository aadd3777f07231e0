#include "fuzz/hop_program.h"

#include <limits>
#include <random>

namespace kiln::fuzz {
namespace {

class HopGenerator {
 public:
  explicit HopGenerator(uint64_t seed) : seed_(seed), rng_(seed * 0x2545f4914f6cdd1dull + 7) {}

  HopProgram make() {
    HopProgram p;
    p.seed = seed_;
    const int rank = 1 + below(3);
    for (int d = 0; d < rank; ++d) p.canon.push_back(1 + below(4));
    if (below(5) == 0) p.canon[below(rank)] = 16 + below(9);  // vector loops, not only tails
    p.capture_shape = sub_shape(p.canon);
    p.capture_data = values(kFloat32, numel(p.capture_shape));
    const int regions = 1 + below(2);
    for (int k = 0; k < regions; ++k) p.regions.push_back(body(0, BodyOp::NestedMap));
    for (int i = 0; i < 3; ++i) p.steps.push_back(plain_leaf(p.canon, i));
    const int count = 8 + below(13);
    for (int i = 0; i < count; ++i) p.steps.push_back(step(p));
    return p;
  }

 private:
  int below(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  uint32_t raw() { return static_cast<uint32_t>(rng_()); }
  double threshold() { return (below(33) - 16) / 4.0; }
  DType float_dtype() { return below(3) == 0 ? kFloat64 : kFloat32; }

  static int64_t numel(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  }

  Shape sub_shape(const Shape& canon) {
    Shape s;
    const int drop = below(4) == 0 ? below(static_cast<int>(canon.size()) + 1) : 0;
    for (size_t d = drop; d < canon.size(); ++d) s.push_back(below(4) == 0 ? 1 : canon[d]);
    return s;
  }

  std::vector<double> values(DType d, int64_t n) {
    std::vector<double> v;
    for (int64_t i = 0; i < n; ++i) {
      if (d == kBool) {
        v.push_back(below(2));
      } else if (d == kInt64 || d == kInt32) {
        v.push_back(below(11) - 5);
      } else {
        const int x = below(60);
        if (x == 0)
          v.push_back(std::numeric_limits<double>::quiet_NaN());
        else if (x == 1)
          v.push_back(std::numeric_limits<double>::infinity());
        else if (x == 2)
          v.push_back(-0.0);
        else
          v.push_back((below(97) - 48) / 8.0);
      }
    }
    return v;
  }

  HopStep plain_leaf(const Shape& canon, int dst) {
    HopStep h;
    Step& s = h.plain;
    s.kind = Kind::Leaf;
    s.shape = sub_shape(canon);
    const int x = below(20);
    s.dtype = x < 12 ? kFloat32 : x < 16 ? kFloat64 : x < 18 ? kInt64 : kBool;
    s.dst = dst;
    s.data = values(s.dtype, numel(s.shape));
    return h;
  }

  // A body of 1-4 ops; at depth 0 a nested cond or map sometimes (`prefer` more often).
  Body body(int depth, BodyOp::Kind prefer = BodyOp::Unary) {
    Body b;
    b.start = static_cast<uint8_t>(below(4));
    b.work = float_dtype();
    b.dtype = float_dtype();
    const int n = 1 + below(4);
    for (int i = 0; i < n; ++i) {
      BodyOp o;
      o.op = static_cast<uint8_t>(below(256));
      o.r = raw();
      o.x = threshold();
      const int x = below(600);
      if (x < 150)
        o.kind = BodyOp::Unary;
      else if (x < 300)
        o.kind = BodyOp::Binary;
      else if (x < 360)
        o.kind = BodyOp::WithScalar;
      else if (x < 430)
        o.kind = BodyOp::ReduceDim;
      else if (x < 480)
        o.kind = BodyOp::ReduceAll;
      else if (x < 530)
        o.kind = BodyOp::Where;
      else if (x < 596)
        o.kind = depth == 0 ? (x < 563 ? BodyOp::NestedCond : BodyOp::NestedMap) : BodyOp::Unary;
      else if (x < 598)
        o.kind = BodyOp::Random;
      else
        o.kind = BodyOp::ReadsData;
      if (depth == 0 && prefer != BodyOp::Unary && i == n - 1 && below(2) == 0) o.kind = prefer;
      if (o.kind == BodyOp::NestedCond) {
        o.inner = {body(depth + 1), body(depth + 1)};
        o.inner[1].dtype = o.inner[0].dtype;
      } else if (o.kind == BodyOp::NestedMap) {
        o.inner = {body(depth + 1)};
      }
      b.ops.push_back(std::move(o));
    }
    return b;
  }

  HopStep step(const HopProgram& p) {
    HopStep h;
    for (uint32_t& r : h.r) r = raw();
    h.op = static_cast<uint8_t>(below(256));
    h.x = threshold();
    h.dst = below(kPool);
    h.dst2 = below(kPool);
    h.dtype = float_dtype();
    h.grad = below(40) == 0;
    h.two_outputs = below(3) == 0;
    h.pool_capture = below(3) == 0;
    const int x = below(100);
    if (x < 12) {
      h.kind = HopStep::Cond;
      h.bodies = {body(0), body(0), body(0), body(0)};
      h.bodies[1].dtype = h.bodies[0].dtype;
      h.bodies[3].dtype = h.bodies[2].dtype;
      h.bodies[1].reduce_out = h.bodies[0].reduce_out = below(4) == 0;
    } else if (x < 38) {
      h.kind = x < 22 ? HopStep::Scan : x < 30 ? HopStep::Map : HopStep::While;
      h.bodies = {body(0, h.kind == HopStep::Scan ? BodyOp::NestedCond : BodyOp::Unary), body(0)};
      if (h.kind == HopStep::Scan || h.kind == HopStep::While) h.bodies[0].dtype = h.dtype;
      h.bodies[1].reduce_out = below(3) == 0;
      h.steps = h.kind == HopStep::While ? below(5) : 1 + below(4);
      if (h.kind != HopStep::While && below(2) == 0) {
        Shape xs{h.steps};
        xs.insert(xs.end(), p.canon.begin(), p.canon.end());
        h.data = values(kFloat32, numel(xs));
      }
    } else if (x < 50) {
      h.kind = HopStep::RegionCall;
      h.region = below(static_cast<int>(p.regions.size()));
    } else if (x < 56) {
      h.kind = HopStep::Checkpoint;
      h.bodies = {body(0)};
    } else if (x < 60) {
      h.kind = HopStep::MutateCapture;
    } else if (x < 68) {
      return plain_leaf(p.canon, h.dst);
    } else {
      h.kind = HopStep::Plain;
      Step& s = h.plain;
      for (uint32_t& r : s.r) r = raw();
      s.dst = h.dst;
      s.s = below(2) ? Scalar(threshold()) : Scalar(static_cast<int64_t>(below(7) - 3));
      s.lo = (below(9) - 6) / 2.0;
      s.hi = s.lo + below(8) / 2.0;
      static const Kind kinds[] = {Kind::Unary, Kind::Binary,  Kind::BinaryScalar, Kind::Reduce,
                                   Kind::View,  Kind::InPlace, Kind::Read,         Kind::Read};
      static const int ops[] = {26, 9, 8, 8, 14, 12, 1, 1};
      const int k = below(8);
      s.kind = kinds[k];
      s.op = static_cast<uint8_t>(below(ops[k]));
    }
    return h;
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
};

}  // namespace

HopProgram make_hop_program(uint64_t seed) { return HopGenerator(seed).make(); }

}  // namespace kiln::fuzz

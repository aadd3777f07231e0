#include "fuzz/program.h"

#include <limits>

namespace kiln::fuzz {

Program Generator::make() {
  Program p;
  p.seed = seed_;
  p.value_seed = value_seed_;
  const int rank = 1 + below(3);
  const bool square = below(2) == 0;
  const int64_t n = 2 + below(3);
  for (int d = 0; d < rank; ++d) p.canon.push_back(square ? n : 1 + below(5));
  // Some programs get one long dim, so that kernels run their vector loops and not only the
  // scalar tails (a layout-dependent result would show between the modes).
  if (below(4) == 0) p.canon[below(rank)] = 16 + below(25);
  // One program in 40 is above the parallel grain (kParallelGrain = 32768 elements), so that
  // kernels split their work between threads.
  if (below(40) == 0) p.canon = {3, 11000 + below(6000)};
  // A few materialized leaves first, so that ops have operands.
  for (int i = 0; i < 3; ++i) p.steps.push_back(leaf(p.canon, i));
  const int count = 10 + below(31);
  for (int i = 0; i < count; ++i) p.steps.push_back(step(p.canon));
  return p;
}

Shape Generator::sub_shape(const Shape& canon) {
  Shape s;
  const int drop = below(4) == 0 ? below(static_cast<int>(canon.size()) + 1) : 0;
  for (size_t d = drop; d < canon.size(); ++d) s.push_back(below(4) == 0 ? 1 : canon[d]);
  return s;
}

DType Generator::pick_dtype() {
  const int x = below(20);
  if (x < 10) return kFloat32;
  if (x < 14) return kFloat64;
  if (x < 16) return kInt64;
  if (x < 18) return kInt32;
  return kBool;
}

double Generator::value(DType d) {
  if (d == kBool) return vbelow(2);
  if (d == kInt32 || d == kInt64) return vbelow(11) - 5;
  switch (vbelow(40)) {
    case 0:
      return 0.0;
    case 1:
      return -0.0;
    case 2:
      return std::numeric_limits<double>::quiet_NaN();
    case 3:
      return std::numeric_limits<double>::infinity();
    case 4:
      return -std::numeric_limits<double>::infinity();
    case 5:
      return 1e30;
    default:
      return (vbelow(97) - 48) / 8.0;
  }
}

Scalar Generator::scalar() {
  switch (below(6)) {
    case 0:
      return Scalar(vbelow(2) == 0);
    case 1:
    case 2:
      return Scalar(static_cast<int64_t>(vbelow(7) - 3));
    default:
      return Scalar((vbelow(33) - 16) / 4.0);
  }
}

Step Generator::leaf(const Shape& canon, int dst) {
  Step s;
  s.kind = Kind::Leaf;
  s.shape = sub_shape(canon);
  s.dtype = pick_dtype();
  s.dst = dst;
  int64_t n = 1;
  for (int64_t d : s.shape) n *= d;
  for (int64_t i = 0; i < n; ++i) s.data.push_back(value(s.dtype));
  return s;
}

Step Generator::step(const Shape& canon) {
  Step s;
  for (uint32_t& r : s.r) r = raw();
  s.dst = below(kPool);
  s.s = scalar();
  s.lo = (vbelow(9) - 6) / 2.0;
  s.hi = s.lo + vbelow(8) / 2.0;
  const int x = below(116);
  if (x >= 100) {  // 16%: the ops the kinds above do not reach, and backward steps
    s.kind = x < 112 ? Kind::Extra : Kind::Backward;
    s.op = static_cast<uint8_t>(below(x < 112 ? kExtraOps : kBackwardOps));
    return s;
  }
  if (x < 8) return leaf(canon, s.dst);
  if (x < 11) {
    s.kind = Kind::Random;
    s.op = static_cast<uint8_t>(below(5));
    s.shape = sub_shape(canon);
  } else if (x < 12) {
    s.kind = Kind::Seed;
    s.s = Scalar(static_cast<int64_t>(vbelow(1000)));
  } else if (x < 14) {
    s.kind = Kind::Dropout;
    s.op = static_cast<uint8_t>(below(8));
  } else if (x < 26) {
    s.kind = Kind::Unary;
    s.op = static_cast<uint8_t>(below(26));
  } else if (x < 38) {
    s.kind = Kind::Binary;
    s.op = static_cast<uint8_t>(below(9));
  } else if (x < 45) {
    s.kind = Kind::BinaryScalar;
    s.op = static_cast<uint8_t>(below(8));
  } else if (x < 50) {
    s.kind = Kind::Compare;
    s.op = static_cast<uint8_t>(below(12));
  } else if (x < 53) {
    s.kind = Kind::Where;
  } else if (x < 59) {
    s.kind = Kind::Reduce;
    s.op = static_cast<uint8_t>(below(8));
  } else if (x < 62) {
    s.kind = Kind::Matmul;
  } else if (x < 64) {
    s.kind = Kind::Softmax;
    s.op = static_cast<uint8_t>(below(2));
  } else if (x < 76) {
    s.kind = Kind::View;
    s.op = static_cast<uint8_t>(below(14));
  } else if (x < 88) {
    s.kind = Kind::InPlace;
    s.op = static_cast<uint8_t>(below(12));
  } else if (x < 96) {
    s.kind = Kind::Read;
  } else if (x < 99) {
    s.kind = Kind::Drop;
  } else if (below(2) == 0) {
    s.kind = Kind::Sync;
  } else {
    s.kind = Kind::Toggle;
  }
  return s;
}

}  // namespace kiln::fuzz

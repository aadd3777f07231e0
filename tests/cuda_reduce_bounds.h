// The bounds of docs/cuda.md "The numerical contract on CUDA" for the reductions and row ops:
// how far CUDA's result may be from the CPU's, per output element. u is the unit roundoff of the
// result's dtype (2^-24, 2^-53), n the row length. Shared by the GPU tests (test_cuda_reduce.cpp)
// and the emulated ones (test_cuda_reduce_emulated.cpp), with the inputs both draw (values()).
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::testing {

inline double unit_roundoff(DType d) { return d == DType::Float32 ? 0x1p-24 : 0x1p-53; }
inline double log2n(double n) { return std::log2(std::max(n, 2.0)); }

// sum: both orders are within (log2 n + 16) u sum|x| of the exact sum.
inline double sum_bound(DType d, double n, double sum_abs) {
  return 2 * (log2n(n) + 16) * unit_roundoff(d) * sum_abs;
}
// mean: the sums' bound over n, plus the division's rounding.
inline double mean_bound(DType d, double n, double sum_abs) {
  return 2 * (log2n(n) + 17) * unit_roundoff(d) * sum_abs / std::max(n, 1.0);
}
// prod: n - 1 roundings of relative size u in any order.
inline double prod_bound(DType d, double n, double c) {
  return 2 * (n + 1) * unit_roundoff(d) * std::fabs(c);
}
// var: a sum of squares (positive terms) over n - unbiased.
inline double var_bound(DType d, double n, double c) {
  return 2 * (log2n(n) + 24) * unit_roundoff(d) * std::fabs(c);
}
// logsumexp: the sum of exps (>= 1) relative to itself, exp's 16 ulp, log's and the add's.
inline double logsumexp_bound(DType d, double n, double c) {
  return unit_roundoff(d) * (2 * log2n(n) + 64 + 20 * std::fabs(c));
}
// softmax: an in-order sum's n roundings (the CPU's order for softmax over a middle dim; over
// the last dim it sums pairwise now, inside the same bound), CUDA in its tree; exp's 16 ulp;
// relative, and subnormal results absolutely.
inline double softmax_bound(DType d, double n, double c) {
  const double tiny =
      d == DType::Float32 ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
  return unit_roundoff(d) * (n + 2 * log2n(n) + 64) * std::fabs(c) + 16 * tiny;
}
// log_softmax: x - lse, lse = max + log(sum) with the sum as softmax's (|lse| <= |x| + |c|).
inline double log_softmax_bound(DType d, double n, double x, double c) {
  return unit_roundoff(d) * (n + 2 * log2n(n) + 64 + 24 * (std::fabs(x) + std::fabs(c)));
}
// layer_norm: both compute in the input's dtype (sums pairwise on the CPU, in a tree on CUDA),
// relative to the scale of the normalized values (16: |x| / std and |x - mean| / std of the
// tests' data times |w|).
inline double layer_norm_bound(DType d, double n, double c) {
  return (4 * log2n(n) + 64) * unit_roundoff(d) * 16 * (1 + std::fabs(c));
}
// cross_entropy: per row a logsumexp in the logits' dtype (as logsumexp_bound), the row losses
// and their mean in Float64 (`rows` roundings), then one rounding to Float32.
inline double cross_entropy_bound(DType d, double classes, double rows, double max_abs_x,
                                  double c) {
  return (d == DType::Float32 ? 0x1p-23 * std::fabs(c) : 0) +
         4 * unit_roundoff(d) * (2 * log2n(classes) + 64 + 20 * max_abs_x) * (1 + std::fabs(c)) +
         4 * 0x1p-52 * rows * (1 + std::fabs(c));
}

// Values of `sizes`: normal * scale + shift for floats (with NaN and infinities when asked),
// integers in [-1000, 1000] with the extremes (sums wrap), Bools.
inline Tensor values(DType d, const DimVector& sizes, uint64_t seed, double scale = 4,
                     double shift = 0, bool specials = false) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  manual_seed(seed);
  std::vector<double> v =
      (randn({n}, TensorOptions().dtype(DType::Float64)) * scale + shift).to_vector<double>();
  if (specials && n > 0) {
    v[0] = NAN;
    if (n > 5) v[n / 2] = INFINITY;
    if (n > 9) v[n - 3] = -INFINITY;
  }
  const Tensor t = from_vector(v, {n});
  if (d == DType::Bool) return (t > 0.5).reshape(sizes);
  if (d == DType::Int32 || d == DType::Int64) {
    std::vector<int64_t> iv;
    for (double x : v) iv.push_back(static_cast<int64_t>(std::fmod(x * 250, 1000.0)));
    if (n > 2) {
      iv[1] = d == DType::Int32 ? INT32_MAX : INT64_MAX;
      iv[2] = d == DType::Int32 ? INT32_MIN : INT64_MIN;
    }
    return from_vector(iv, {n}).to(d).reshape(sizes);
  }
  return t.to(d).reshape(sizes);
}

}  // namespace kiln::testing

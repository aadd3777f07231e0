// Helpers shared by the core tests (pointwise, promotion, views, in-place): build tensors of any
// dtype from doubles, read them back as doubles, lay the same logical values out in several
// memory layouts, and compare floats in units in the last place.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "expect_error.h"
#include "kiln/kiln.h"

namespace kiln::testutil {

inline const DType kAllDTypes[] = {kBool, kInt32, kInt64, kFloat32, kFloat64};

// A tensor of dtype d holding `v` (converted with static_cast) in shape s.
inline Tensor make(const std::vector<double>& v, Shape s, DType d) {
  return visit_dtype(d, [&]<class T>(TypeTag<T>) {
    std::vector<T> c(v.size());
    for (size_t i = 0; i < v.size(); ++i) c[i] = static_cast<T>(v[i]);
    return from_vector<T>(c, s);
  });
}

// The row-major values of t as doubles, read in t's own dtype (no kiln cast involved).
inline std::vector<double> values(const Tensor& t) {
  return visit_dtype(t.dtype(), [&]<class T>(TypeTag<T>) {
    std::vector<double> out;
    const TensorImpl* x = t.impl();
    const int64_t n = x->numel(), nd = x->dim();
    const T* base = static_cast<const T*>(x->data());
    std::vector<int64_t> idx(nd, 0);
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = 0;
      for (int64_t d = 0; d < nd; ++d) off += idx[d] * x->strides()[d];
      out.push_back(static_cast<double>(base[off]));
      for (int64_t d = nd - 1; d >= 0 && ++idx[d] == x->sizes()[d]; --d) idx[d] = 0;
    }
    return out;
  });
}

// The same logical values laid out in several ways. Each layout gives the tensor and the
// row-major logical values it holds (expand repeats the first row).
struct Layout {
  std::string name;
  Tensor t;
  std::vector<double> vals;
};

// `vals` are the row-major values of a [r, c] matrix.
inline std::vector<Layout> layouts(const std::vector<double>& vals, int64_t r, int64_t c, DType d) {
  std::vector<Layout> out;
  out.push_back({"contiguous", make(vals, {r, c}, d), vals});
  std::vector<double> tr(vals.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) tr[j * r + i] = vals[i * c + j];
  out.push_back({"transposed", make(tr, {c, r}, d).t(), vals});
  // Every other column of a [r, 2c + 1] buffer, starting at column 1 (offset + step).
  std::vector<double> wide(r * (2 * c + 1), 77);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) wide[i * (2 * c + 1) + 1 + 2 * j] = vals[i * c + j];
  out.push_back({"sliced_step2", make(wide, {r, 2 * c + 1}, d).slice(1, 1, 2 * c + 1, 2), vals});
  std::vector<double> row(vals.begin(), vals.begin() + c), rep;
  for (int64_t i = 0; i < r; ++i) rep.insert(rep.end(), row.begin(), row.end());
  out.push_back({"expanded", make(row, {c}, d).expand({r, c}), rep});
  return out;
}

// Distance in units in the last place of T between got and the exactly rounded reference.
template <class T>
double ulp_err(T got, long double ref) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) == std::isnan(got) ? 0 : 1e30;
  if (std::isinf(ref) || std::isinf(got)) return T(ref) == got ? 0 : 1e30;
  T r = static_cast<T>(ref);
  long double ulp = std::nextafter(std::fabs(r), std::numeric_limits<T>::infinity()) - std::fabs(r);
  if (r == 0) ulp = std::numeric_limits<T>::denorm_min();
  return static_cast<double>(std::fabs((long double)got - ref) / ulp);
}

// expect_error(fn, {needles...}): expect_error.h's (one overload set for every test).
using kiln::testing::expect_error;

inline std::string dname(DType d) { return std::string(dtype_name(d)); }

}  // namespace kiln::testutil

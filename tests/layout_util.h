// Test helpers for ops that must accept any layout: deterministic inputs in contiguous,
// transposed, sliced and expanded layouts, and a strided element reader that does not go through
// kiln ops (so references never depend on the code under test).
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "expect_error.h"
#include "kiln/kiln.h"

namespace kt {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;

inline const DType kAllDTypes[] = {DType::Bool, DType::Int32, DType::Int64, DType::Float32,
                                   DType::Float64};

enum class Layout { Contiguous, Transposed, Sliced, Expanded };
inline const Layout kAllLayouts[] = {Layout::Contiguous, Layout::Transposed, Layout::Sliced,
                                     Layout::Expanded};

// Small integers (exact in every dtype); Bool gets a mix of true and false.
inline double test_value(int64_t i, DType dt, int seed) {
  int64_t v = (i * 37 + seed * 11) % 23;
  if (dt == DType::Bool) return v % 3 == 0 ? 1.0 : 0.0;
  return double(v) - 11.0;
}

inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Element `idx` of any strided tensor, read straight from memory, as double.
inline double at(const Tensor& t, const std::vector<int64_t>& idx) {
  const char* p = static_cast<const char*>(t.raw_data());
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.stride(int64_t(d));
  double v = 0;
  kiln::visit_dtype(t.dtype(), [&]<class T>(kiln::TypeTag<T>) {
    v = static_cast<double>(reinterpret_cast<const T*>(p)[off]);
  });
  return v;
}

// Every multi-index of `s` in row-major order.
inline std::vector<std::vector<int64_t>> all_indices(const Shape& s) {
  std::vector<std::vector<int64_t>> out;
  int64_t n = numel_of(s);
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(idx);
    for (int64_t d = int64_t(s.size()) - 1; d >= 0; --d) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// A contiguous tensor whose element i is test_value(i).
inline Tensor filled(const Shape& s, DType dt, int seed = 0) {
  Tensor t = kiln::empty(s, dt);
  char* p = static_cast<char*>(const_cast<void*>(t.raw_data()));
  for (int64_t i = 0; i < numel_of(s); ++i) {
    double v = test_value(i, dt, seed);
    kiln::visit_dtype(
        dt, [&]<class T>(kiln::TypeTag<T>) { reinterpret_cast<T*>(p)[i] = static_cast<T>(v); });
  }
  return t;
}

// A tensor of shape `s` in the given layout (values differ between layouts).
inline Tensor make(const Shape& s, DType dt, Layout l, int seed = 0) {
  const int64_t r = int64_t(s.size());
  switch (l) {
    case Layout::Contiguous:
      break;
    case Layout::Transposed:
      if (r >= 2) {
        Shape u = s;
        std::swap(u[0], u[r - 1]);
        return filled(u, dt, seed).transpose(0, r - 1);
      }
      break;
    case Layout::Sliced:
      if (r >= 1) {
        Shape u = s;
        u[r - 1] = 2 * s[r - 1] + 1;
        return filled(u, dt, seed).slice(r - 1, 1, u[r - 1], 2);
      }
      break;
    case Layout::Expanded:
      if (r >= 1) {
        Shape u = s;
        u[0] = 1;
        return filled(u, dt, seed).expand(s);
      }
      break;
  }
  return filled(s, dt, seed);
}

inline std::string layout_name(Layout l) {
  const char* names[] = {"contiguous", "transposed", "sliced", "expanded"};
  return names[int(l)];
}

// expect_error(fn, {parts...}): expect_error.h's (one overload set for every test).
using kiln::testing::expect_error;

}  // namespace kt

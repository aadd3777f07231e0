// The per-ISA reduction kernels (ops/cpu/reduce_kernels.cpp, compiled once per ISA) and the
// entry that picks the active ISA's (ops/reduce.cpp).
#pragma once
#include "ops/cpu/isa.h"
#include "runtime/dispatcher.h"

namespace kiln {

#define KILN_DECLARE_REDUCE(ns)                                                                   \
  namespace ns {                                                                                  \
  void reduce_eager(const OpCall& c, const Tensor& out);                                          \
  void softmax_rows(const float* x, float* y, int64_t m, int64_t n, bool log);                    \
  void softmax_rows(const double* x, double* y, int64_t m, int64_t n, bool log);                  \
  void softmax_cols(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool log); \
  void softmax_cols(const double* x, double* y, int64_t outer, int64_t n, int64_t inner,          \
                    bool log);                                                                    \
  void layer_norm_rows(const float* x, const float* w, const float* b, float* y, int64_t m,       \
                       int64_t n, double eps);                                                    \
  void layer_norm_rows(const double* x, const double* w, const double* b, double* y, int64_t m,   \
                       int64_t n, double eps);                                                    \
  double cross_entropy_total(const float* x, const int64_t* t, int64_t m, int64_t n,              \
                             int64_t ignore);                                                     \
  double cross_entropy_total(const double* x, const int64_t* t, int64_t m, int64_t n,             \
                             int64_t ignore);                                                     \
  }
KILN_FOR_EACH_ISA_NS(KILN_DECLARE_REDUCE)
#undef KILN_DECLARE_REDUCE

}  // namespace kiln

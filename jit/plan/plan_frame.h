// The executor's state for one run of a JitPlan (jit/plan/jit_plan.h): the value table, the
// results of higher-order nodes, which values a failed step poisoned, and the first error.
// Private to jit/plan/ (jit_plan.cpp, blas_step.cpp, product_batch.cpp, gathered_step.cpp,
// gathered_tail.cpp).
#pragma once
#include <algorithm>
#include <exception>
#include <span>
#include <vector>

#include "jit/plan/jit_plan.h"

namespace kiln::jit {

using tracer::ValueId;

inline bool contains(const std::vector<ValueId>& vs, ValueId v) {
  return std::find(vs.begin(), vs.end(), v) != vs.end();
}

// Whether two tensors are views of one storage (a blocked launch must not write what a later
// block still reads: blas_step.cpp, gathered_step.cpp).
inline bool shares_memory(const Tensor& x, const Tensor& y) {
  return x.defined() && y.defined() && x.impl()->storage() == y.impl()->storage();
}

struct JitPlan::Frame {
  const tracer::RunArgs& args;
  bool use_destinations;
  std::vector<Tensor> values;
  std::vector<std::vector<Tensor>> tuples = {};  // results of higher-order nodes
  std::vector<uint8_t> poisoned = {};
  std::exception_ptr error = nullptr;
  KernelLaunch launch = {};  // run_kernel's, reused by every kernel step of the run

  bool any_poisoned(std::span<const ValueId> vs) const {
    if (poisoned.empty()) return false;
    for (ValueId v : vs)
      if (poisoned[v]) return true;
    return false;
  }
  void poison(ValueId v) {
    if (poisoned.empty()) poisoned.assign(values.size(), 0);
    poisoned[v] = 1;
  }
  void fail(std::span<const ValueId> outs) {
    if (!error) error = std::current_exception();
    for (ValueId v : outs) poison(v);
  }
};

}  // namespace kiln::jit

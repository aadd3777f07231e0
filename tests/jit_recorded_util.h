// Helpers for tests that run programs recorded and planned by the CPU JIT (KILN_JIT=1) against
// eager: a fixture that starts each test from a cold region cache and plans on the recording
// thread, and a runner that compares every iteration bitwise and counts the plans' steps.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "jit/plan/jit_plan.h"
#include "kiln/kiln.h"
#include "record_util.h"
#include "runtime/allocator.h"
#include "tracer/region_cache.h"
#include "tracer/region_runner.h"

namespace kiln::testing {

// randn of `shape` and dtype d from seed `seed` (the generator is reseeded).
inline Tensor normal(std::vector<int64_t> shape, uint64_t seed, DType d = kFloat32) {
  manual_seed(seed);
  return randn(IntList(shape), TensorOptions().dtype(d));
}

// normal(), made with the JIT off (never recorded).
inline Tensor eager_normal(std::vector<int64_t> shape, uint64_t seed, DType d = kFloat32) {
  JitMode off(false);
  return normal(std::move(shape), seed, d);
}

// randint(0, high) of `shape` and dtype d (class indices) from seed `seed`, made with the JIT
// off.
inline Tensor eager_randint(std::vector<int64_t> shape, int64_t high, uint64_t seed,
                            DType d = kInt64) {
  JitMode off(false);
  manual_seed(seed);
  return randint(0, high, IntList(shape), TensorOptions().dtype(d));
}

// Blocks the CPU allocator has handed out so far (cache hits and fresh ones).
inline uint64_t cpu_allocations() {
  const CpuAllocatorStats s = cpu_allocator_stats();
  return s.hits + s.misses;
}

// Recording off between programs, a cold region cache, planning on the recording thread, and
// the planner's own threshold (`Threshold` -1: the CPU plans at first sight) unless told.
template <int Threshold = -1>
class JitRecordedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kiln::sync();
    config().jit = false;
    tracer::wait_for_compiles();
    tracer::RegionCache::instance().clear();
  }
  void TearDown() override { tracer::wait_for_compiles(); }
  JitRestore restore_;
  ConfigOverride<bool> sync_planning_{config().jit_async, false};
  ConfigOverride<int> threshold_{config().jit_threshold, Threshold};
};

// Runs `program(iteration)` `iterations` times eagerly and recorded (each recorded iteration ends
// with a sync: one flush, one region run; each program seeds what it draws); every iteration's
// results must be bitwise equal.
inline void expect_iterations_match(const std::function<TensorList(int)>& program, int iterations,
                                    const std::string& what) {
  std::vector<TensorList> want, got;
  {
    JitMode off(false);
    for (int it = 0; it < iterations; ++it) want.push_back(program(it));
  }
  {
    JitMode on(true);
    for (int it = 0; it < iterations; ++it) {
      got.push_back(program(it));
      kiln::sync();
    }
  }
  for (int it = 0; it < iterations; ++it)
    expect_lists_bitwise_equal(got[it], want[it], what + ", iteration " + std::to_string(it));
}

// expect_iterations_match, then the eager steps of every cached region's plan (0: everything
// fused; -1: a region without a JIT plan, which also fails the test); sets *kernels to their
// kernel steps.
inline int plan_eager_steps(const std::function<TensorList(int)>& program, int iterations,
                            const std::string& what, int* kernels) {
  expect_iterations_match(program, iterations, what);
  int eager = 0;
  *kernels = 0;
  for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions()) {
    std::shared_ptr<tracer::RegionPlan> p = r->jit_plan();
    const auto* jp = dynamic_cast<const jit::JitPlan*>(p.get());
    EXPECT_NE(jp, nullptr) << what << ": a region has no JIT plan";
    if (jp == nullptr) return -1;
    for (const jit::Step& s : jp->steps()) (s.kernel ? *kernels : eager) += 1;
  }
  return eager;
}

// The ops of every cached region's JIT plan's eager steps, in step order; sets *kernels (when
// given) to their kernel steps.
inline std::vector<OpId> plan_eager_ops(int* kernels = nullptr) {
  std::vector<OpId> ops;
  int k = 0;
  for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions()) {
    const std::shared_ptr<tracer::RegionPlan> plan = r->jit_plan();
    const auto* p = dynamic_cast<const jit::JitPlan*>(plan.get());
    if (p == nullptr) continue;
    for (const jit::Step& s : p->steps()) {
      if (s.kernel)
        ++k;
      else
        ops.push_back(p->graph().nodes[static_cast<size_t>(s.node)].op);
    }
  }
  if (kernels != nullptr) *kernels = k;
  return ops;
}

inline bool contains_op(const std::vector<OpId>& ops, OpId op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

}  // namespace kiln::testing

// Helpers for the tests of the traced higher-order ops (test_hop_traced*.cpp): running a program
// eagerly and recorded, comparing the results bit for bit, and finding the higher-order nodes of
// the graphs the recorder flushed (tracer/hop_nodes.h gives their layout).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/kiln.h"
#include "record_util.h"
#include "tracer/graph.h"
#include "tracer/region_cache.h"

namespace kiln::testing {

// Sets one config field for a scope, restoring it after.
template <class T>
class ConfigOverride {
 public:
  // The bool, int and enum fields are Relaxed<T> (runtime/relaxed.h), the others plain.
  using Field = std::conditional_t<std::is_arithmetic_v<T> || std::is_enum_v<T>, Relaxed<T>, T>;
  ConfigOverride(Field& field, T value) : field_(field), saved_(field) { field_ = value; }
  ~ConfigOverride() { field_ = saved_; }
  ConfigOverride(const ConfigOverride&) = delete;
  ConfigOverride& operator=(const ConfigOverride&) = delete;

 private:
  Field& field_;
  T saved_;
};

// Distinct values that are exact in Float32: start, start + step, ... in row-major order.
inline Tensor ramp(std::vector<int64_t> shape, double start = 0.5, double step = 0.25) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (arange(n, kFloat64) * step + start).to(kFloat32).reshape(shape);
}

// Runs `program` with recording off (the reference) or forced on; results are synced (and,
// recorded, the graphs flushed) before returning.
inline TensorList run_eagerly(const std::function<TensorList()>& program) {
  JitMode off(false);
  TensorList out = program();
  kiln::sync();
  return out;
}
inline TensorList run_recorded(const std::function<TensorList()>& program) {
  JitMode on(true);
  TensorList out = program();
  kiln::sync();
  return out;
}

inline void expect_lists_bitwise_equal(const TensorList& got, const TensorList& want,
                                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    expect_bitwise_equal(got[i], want[i], (what + ", result " + std::to_string(i)).c_str());
}

// The program's results recorded equal its results in eager mode, bit for bit.
inline void expect_recorded_matches_eager(const std::function<TensorList()>& program,
                                          const std::string& what) {
  const TensorList want = run_eagerly(program);
  const TensorList got = run_recorded(program);
  expect_lists_bitwise_equal(got, want, what);
}

// The nodes of `op` in `g`, top level only.
inline std::vector<const tracer::Node*> nodes_of(const tracer::Graph& g, OpId op) {
  std::vector<const tracer::Node*> out;
  for (const tracer::Node& n : g.nodes)
    if (n.op == op) out.push_back(&n);
  return out;
}

// The nodes of `op` at the top level of every region flushed since the cache was cleared.
inline std::vector<const tracer::Node*> flushed_nodes_of(OpId op) {
  std::vector<const tracer::Node*> out;
  for (const tracer::CachedRegion* r : tracer::RegionCache::instance().regions())
    for (const tracer::Node* n : nodes_of(r->graph, op)) out.push_back(n);
  return out;
}

// The one node of `op` flushed since the cache was cleared (fails the test if not exactly one).
inline const tracer::Node* the_flushed_node(OpId op) {
  std::vector<const tracer::Node*> found = flushed_nodes_of(op);
  EXPECT_EQ(found.size(), 1u) << "flushed nodes of " << op_name(op);
  return found.size() == 1 ? found[0] : nullptr;
}

}  // namespace kiln::testing

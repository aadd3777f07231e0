// The fuzzer's interpreter: runs one step descriptor (tests/fuzz/program.h) against the pool,
// resolving its raw choices against tensor metadata.
#pragma once
#include <string>
#include <vector>

#include "fuzz/pool.h"

namespace kiln::fuzz {

// Runs one step; `desc` says what it did (for the reproducer listing); read values and pool
// results go to `pool` and `reads`.
void run_step(const Step& s, Pool& pool, std::vector<std::string>& reads, std::string& desc);

// What a step that has an operand knows when it runs (its first operand A, picked by r[0]).
struct StepContext {
  const Step& s;
  Pool& pool;
  std::string& desc;
  Tensor A;
  std::string an;  // A's slot and metadata, for the listing

  void put(Tensor t) const { pool[s.dst] = std::move(t); }
  // A slot whose tensor broadcasts with A (picked by r).
  int compatible(uint32_t r) const {
    return pick(pool, r, [&](const Tensor& t) { return broadcastable(t.sizes(), A.sizes()); });
  }
};

// The pointwise kinds (Dropout, Unary, Binary, BinaryScalar, Compare, Where); false for others.
bool run_pointwise_step(const StepContext& c);
// The Extra and Backward kinds (tests/fuzz/run_step_extra.cpp); false for others.
bool run_extra_step(const StepContext& c);

}  // namespace kiln::fuzz

#include "jit/loop/common_exprs.h"

#include <bit>
#include <map>
#include <tuple>

namespace kiln::jit {

namespace {

// An expression's identity: every field, the float constant by its bits (-0 is not +0).
using ExprKey = std::tuple<uint8_t, uint8_t, int32_t, int32_t, int32_t, int32_t, uint64_t, int64_t>;

ExprKey key_of(const Expr& e) {
  return {static_cast<uint8_t>(e.op),
          static_cast<uint8_t>(e.type),
          e.a,
          e.b,
          e.c,
          e.index,
          std::bit_cast<uint64_t>(e.value),
          e.ivalue};
}

}  // namespace

LoopKernel merge_common_exprs(const LoopKernel& k) {
  const size_t n = k.exprs.size();
  // Live: read by a store, directly or through other expressions.
  std::vector<uint8_t> live(n, 0);
  for (int32_t s : k.stores) live[s] = 1;
  for (size_t i = n; i-- > 0;) {
    if (!live[i]) continue;
    const Expr& e = k.exprs[i];
    for (int32_t o : {e.a, e.b, e.c})
      if (o >= 0) live[o] = 1;
  }
  LoopKernel out;
  out.inputs = k.inputs;
  out.params = k.params;
  std::vector<int32_t> id(n, -1);  // old expression -> new
  std::map<ExprKey, int32_t> seen;
  for (size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    Expr e = k.exprs[i];
    for (int32_t* o : {&e.a, &e.b, &e.c})
      if (*o >= 0) *o = id[*o];
    auto [it, added] = seen.try_emplace(key_of(e), static_cast<int32_t>(out.exprs.size()));
    if (added) out.exprs.push_back(e);
    id[i] = it->second;
  }
  for (int32_t s : k.stores) out.stores.push_back(id[s]);
  return out;
}

}  // namespace kiln::jit

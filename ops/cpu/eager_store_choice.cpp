#include "ops/cpu/eager_store_choice.h"

#include <cstddef>

#include "runtime/config.h"

namespace kiln {

StoreChoice& eager_store_choice(OpId op, DType compute) {
  static auto* table = new StoreChoice[static_cast<size_t>(kNumOps) * kNumDTypes];
  return table[static_cast<size_t>(op) * kNumDTypes + static_cast<size_t>(compute)];
}

ChosenLoop choose_pointwise_loop(const PointwiseTable& t, OpId op, DType compute,
                                 const TensorImpl* out) {
  const int o = static_cast<int>(op), d = static_cast<int>(compute);
  if (!streams_output(out)) return {t.op[o][d], {false, false}, nullptr};
  StoreChoice& choice = eager_store_choice(op, compute);
  const StoreChoice::Pick p = choice.next(StoreChoice::mode_from(config().jit_streaming));
  return {(p.streaming ? t.op_nt : t.op)[o][d], p, &choice};
}

}  // namespace kiln

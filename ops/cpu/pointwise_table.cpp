#include "ops/cpu/pointwise_table.h"

namespace kiln {

const PointwiseTable& pointwise_table() {
  static const PointwiseTable table = [] {
    PointwiseTable t;
    switch (active_isa()) {
      case CpuIsa::Avx512:
        isa_avx512::fill_pointwise_table(t);
        break;
      case CpuIsa::Avx2:
        isa_avx2::fill_pointwise_table(t);
        break;
      case CpuIsa::Baseline:
        isa_baseline::fill_pointwise_table(t);
        break;
    }
    return t;
  }();
  return table;
}

}  // namespace kiln

#include "ops/op_registry.h"

namespace kiln {

void register_all_ops() {
  register_view_ops();
  register_copy_ops();
  register_pointwise_ops();
  register_shape_ops();
  register_index_ops();
}

}  // namespace kiln

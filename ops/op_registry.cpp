#include "ops/op_registry.h"

#include "ops/grad_utils.h"

namespace kiln {

void register_all_ops() {
  register_view_ops();
  register_copy_ops();
  register_pointwise_ops();
  register_reduce_ops();
  register_pointwise_backward();
  register_view_backward();
}

}  // namespace kiln

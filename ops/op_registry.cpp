#include "ops/op_registry.h"

#include "ops/grad_utils.h"

namespace kiln {

void register_all_ops() {
  register_view_ops();
  register_copy_ops();
  register_pointwise_ops();
  register_factory_ops();
  register_reduce_ops();
  register_matmul_ops();
  register_nn_ops();
  register_shape_ops();
  register_index_ops();
  register_strided_ops();
  register_pointwise_backward();
  register_view_backward();
  register_index_backward();
  register_reduce_backward();
  register_matmul_backward();
  register_nn_backward();
  register_pointwise_decompositions();
}

}  // namespace kiln

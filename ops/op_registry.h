// Registration entry points of the op families; kiln::init() calls register_all_ops().
#pragma once

namespace kiln {

void register_all_ops();

void register_view_ops();
void register_copy_ops();
void register_pointwise_ops();
void register_factory_ops();
void register_reduce_ops();
void register_matmul_ops();
void register_nn_ops();
void register_shape_ops();
void register_index_ops();
void register_strided_ops();

}  // namespace kiln

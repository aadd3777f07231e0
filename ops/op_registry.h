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

// Decompositions of composite ops (ops/decomposition.h), read by the JIT's passes.
void register_pointwise_decompositions();

}  // namespace kiln

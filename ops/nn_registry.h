// Registration of the nn op files (ops/softmax.cpp, ops/layer_norm.cpp, ops/losses.cpp,
// ops/dropout.cpp, ops/embedding.cpp); ops/nn.cpp's register_nn_ops() calls them all.
#pragma once

namespace kiln {

void register_softmax_ops();
void register_layer_norm_ops();
void register_loss_ops();
void register_dropout_ops();
void register_embedding_ops();

}  // namespace kiln

// Composite nn functions (no kernels of their own: they get autograd and tracing from the ops
// they call) and the registration of the nn family. The primitives live in ops/softmax.cpp,
// ops/layer_norm.cpp, ops/losses.cpp, ops/dropout.cpp and ops/embedding.cpp.
#include <cmath>
#include <limits>
#include <vector>

#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/nn_registry.h"
#include "ops/op_registry.h"

namespace kiln {

void register_nn_ops() {
  register_softmax_ops();
  register_layer_norm_ops();
  register_loss_ops();
  register_dropout_ops();
  register_embedding_ops();
}

// x [..., in] @ w.t() [in, out] (+ b [out]), as torch.nn.functional.linear.
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  KILN_CHECK(x.defined() && w.defined(), "linear: the input or the weight is undefined");
  KILN_CHECK(w.dim() == 1 || w.dim() == 2, "linear: expected a 1-D or 2-D weight, got {}",
             describe(w));
  Tensor y = matmul(x, w.dim() == 2 ? w.t() : w);
  if (!b.defined()) return y;
  KILN_CHECK(broadcast_shapes("linear", y.impl()->sizes(), b.impl()->sizes()) == y.impl()->sizes(),
             "linear: the bias {} does not broadcast to the output {} (input {}, weight {})",
             describe(b), describe(y), describe(x), describe(w));
  return add(y, b);
}

// softmax(q @ k^T / sqrt(E) [+ causal mask]) @ v for q [..., L, E], k [..., S, E], v [..., S, Ev]
// (batch dims broadcast as in matmul). The causal mask is top-left aligned, as PyTorch's
// ones(L, S).tril(): query i may attend to key j iff j <= i; masked scores become -inf.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    bool is_causal) {
  const char* op = "scaled_dot_product_attention";
  KILN_CHECK(q.defined() && k.defined() && v.defined(), "{}: q, k or v is undefined", op);
  KILN_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2,
             "{}: expected q, k, v of at least 2 dims, got {}, {}, {}", op, describe(q),
             describe(k), describe(v));
  KILN_CHECK(is_floating(q.dtype()) && q.dtype() == k.dtype() && q.dtype() == v.dtype(),
             "{}: expected q, k, v of one float dtype, got {}, {}, {}", op, describe(q),
             describe(k), describe(v));
  const int64_t L = q.size(-2), E = q.size(-1), S = k.size(-2);
  KILN_CHECK(k.size(-1) == E, "{}: q {} and k {} differ in the embedding size", op, describe(q),
             describe(k));
  KILN_CHECK(v.size(-2) == S, "{}: k {} and v {} differ in the sequence length", op, describe(k),
             describe(v));
  Tensor scores = mul(matmul(q, k.transpose(-2, -1)), 1.0 / std::sqrt(static_cast<double>(E)));
  if (is_causal) {
    std::vector<bool> above(static_cast<size_t>(L * S));
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) above[static_cast<size_t>(i * S + j)] = j > i;
    Tensor mask = from_vector<bool>(above, {L, S});
    scores = masked_fill(scores, mask, -std::numeric_limits<double>::infinity());
  }
  return matmul(softmax(scores, -1), v);
}

}  // namespace kiln

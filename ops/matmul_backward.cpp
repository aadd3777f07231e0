// Backward rule of the matmul primitive (ops/matmul.cpp). The primitive only sees operands of at
// least 2 dims: the public matmul() reaches it through unsqueeze/squeeze/view for the 1-D forms
// and for the folded batched-times-matrix product, and those views have their own rules, so
// every torch.matmul form is covered by this one rule plus the view rules.
//
// For y = a @ b over broadcast batch dims: ga = g @ b^T and gb = a^T @ g, each summed back to
// its operand's shape (sum_to) where the operand's batch dims were broadcast.
#include "ops/functions.h"
#include "ops/grad_utils.h"

namespace kiln {

namespace {

int64_t prod_leading(const Tensor& t) {
  int64_t n = 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d) n *= t.size(d);
  return n;
}

void matmul_bw(const BackwardCall& c, std::span<Tensor> g) {
  const Tensor& a = c.inputs[0];
  const Tensor& b = c.inputs[1];
  const Tensor& gy = c.grad;
  if (c.needs_input(0)) g[0] = sum_to(matmul(gy, b.transpose(-2, -1)), c.input_info[0].sizes);
  if (!c.needs_input(1)) return;
  // b a transposed matrix (a linear layer's w.t()): gb in b's own layout, (g^T a)^T, so that the
  // transpose's backward hands w a dense [N, K] gradient that AccumulateGrad keeps as it is
  // (a^T g would come back as a transposed view, and accumulating it copied it, strided).
  const bool b_transposed = b.dim() == 2 && b.stride(0) == 1 && b.stride(1) != 1;
  if (b.dim() == 2 && a.dim() >= 2 && (a.dim() > 2 || b_transposed)) {
    // A batched a times a matrix b (a linear layer): one [K, rows] @ [rows, N] product instead
    // of a batch of products that sum_to would reduce afterwards.
    const int64_t rows = prod_leading(a);
    Tensor a2 = a.dim() > 2 ? a.reshape({rows, a.size(-1)}) : a;
    Tensor g2 = gy.dim() > 2 ? gy.reshape({rows, gy.size(-1)}) : gy;
    g[1] = b_transposed ? matmul(g2.t(), a2).t() : matmul(a2.t(), g2);
    return;
  }
  g[1] = sum_to(matmul(a.transpose(-2, -1), gy), c.input_info[1].sizes);
}

}  // namespace

void register_matmul_backward() {
  set_backward(OpId::Matmul, matmul_bw, save_input(0) | save_input(1));
}

}  // namespace kiln

// See perf/workloads/transformer_block.h.
#include "perf/workloads/transformer_block.h"

#include <cmath>

namespace kiln::perf {

namespace {

Tensor weight(int64_t out, int64_t in) { return randn({out, in}) * (1.0 / std::sqrt(in)); }

}  // namespace

TensorList make_block_weights(int64_t d) {
  return {ones({d}), zeros({d}), weight(3 * d, d), zeros({3 * d}), weight(d, d),     zeros({d}),
          ones({d}), zeros({d}), weight(4 * d, d), zeros({4 * d}), weight(d, 4 * d), zeros({d})};
}

Tensor transformer_block(const Tensor& x, const TensorList& w, int64_t heads) {
  KILN_CHECK(x.dim() == 3 && w.size() == kBlockWeightCount,
             "transformer_block: expected x [batch, seq, d] and {} weights, got x {} and {}",
             kBlockWeightCount, shape_str(x.sizes()), w.size());
  const int64_t batch = x.size(0), seq = x.size(1), d = x.size(2), hd = d / heads;
  Tensor h = layer_norm(x, {d}, w[0], w[1]);
  std::vector<Tensor> qkv = chunk(linear(h, w[2], w[3]), 3, -1);
  auto split = [&](const Tensor& t) { return t.reshape({batch, seq, heads, hd}).transpose(1, 2); };
  Tensor a = scaled_dot_product_attention(split(qkv[0]), split(qkv[1]), split(qkv[2]), true);
  a = a.transpose(1, 2).reshape({batch, seq, d});
  Tensor y = x + linear(a, w[4], w[5]);
  Tensor m = gelu(linear(layer_norm(y, {d}, w[6], w[7]), w[8], w[9]), "tanh");
  return y + linear(m, w[10], w[11]);
}

void check_block_output(const char* what, const Tensor& x, const Tensor& y) {
  KILN_CHECK(y.sizes() == x.sizes(), "{}: output shape {} differs from the input's {}", what,
             shape_str(y.sizes()), shape_str(x.sizes()));
  std::vector<float> v = y.contiguous().to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i)
    KILN_CHECK(std::isfinite(v[i]), "{}: output element {} is {}", what, i, v[i]);
}

}  // namespace kiln::perf

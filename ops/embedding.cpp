// embedding: rows of a [V, D] weight picked by integer indices (OpId::Embedding).
// Inputs: weight [V, D] (any dtype), indices Int32/Int64 of any shape. Attrs: none.
// Output: indices.shape + [D], weight's dtype. An index outside [0, V) raises a kiln::Error that
// names it and V (PyTorch does not wrap negative indices here either); indices are checked
// before any row is copied.
#include <cstring>

#include "ops/eager_helpers.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/nn_registry.h"
#include "runtime/parallel.h"

namespace kiln {

namespace {

void embedding_meta(const OpCall& c, OutputMeta& m) {
  const Tensor& wt = c.inputs[0];
  const Tensor& it = c.inputs[1];
  KILN_CHECK(wt.impl()->dim() == 2, "embedding: expected a 2-D weight [V, D], got {}",
             describe(wt));
  KILN_CHECK(is_integral(it.impl()->dtype()), "embedding: expected Int32 or Int64 indices, got {}",
             describe(it));
  m.sizes = it.impl()->sizes();
  m.sizes.push_back(wt.impl()->sizes()[1]);
  m.dtype = wt.impl()->dtype();
  m.device = common_device("embedding", c.inputs);
}

void embedding_eager(const OpCall& c, const Tensor& out) {
  const Tensor weight = eager_contiguous(c.inputs[0]);
  const Tensor idx = eager_contiguous(c.inputs[1], DType::Int64);
  const int64_t V = weight.impl()->sizes()[0];
  const int64_t D = weight.impl()->sizes()[1];
  const int64_t n = idx.impl()->numel();
  const int64_t* ip = static_cast<const int64_t*>(idx.impl()->data());
  for (int64_t i = 0; i < n; ++i)
    KILN_CHECK(ip[i] >= 0 && ip[i] < V,
               "embedding: index {} (at position {}) is out of range for a weight with V = {} rows",
               ip[i], i, V);
  const size_t row_bytes = static_cast<size_t>(D) * itemsize(weight.impl()->dtype());
  const char* wp = static_cast<const char*>(weight.impl()->data());
  char* op = static_cast<char*>(out.impl()->data());
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, D));
  parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      std::memcpy(op + i * row_bytes, wp + ip[i] * row_bytes, row_bytes);
  });
}

}  // namespace

void register_embedding_ops() {
  register_op(OpId::Embedding, {"embedding", embedding_meta, embedding_eager, kChecksData});
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  const Tensor in[] = {weight, indices};
  return dispatch(OpId::Embedding, in, Attrs{});
}

}  // namespace kiln

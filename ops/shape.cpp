// Shape ops: cat (a primitive with N inputs), and the composites stack, split and chunk.
// Attrs: Cat uses ints[0] = dim (as the user gave it; the meta function wraps it).
#include <algorithm>
#include <cstring>

#include "ops/cpu/elementwise_loop.h"
#include "ops/cpu/pointwise_table.h"
#include "ops/functions.h"
#include "ops/meta_helpers.h"
#include "ops/op_registry.h"
#include "runtime/parallel.h"

namespace kiln {

namespace {

// PyTorch keeps accepting the legacy empty tensor, 1-D of size 0, in cat next to tensors of any
// rank: it is skipped for shapes (but still takes part in type promotion).
bool cat_skips(const TensorImpl* t) { return t->dim() == 1 && t->sizes()[0] == 0; }

// The first input cat does not skip, or -1 when every input is a legacy empty tensor.
int64_t cat_reference(std::span<const Tensor> xs) {
  for (size_t i = 0; i < xs.size(); ++i)
    if (!cat_skips(xs[i].impl())) return static_cast<int64_t>(i);
  return -1;
}

void cat_meta(const OpCall& c, OutputMeta& m) {
  std::span<const Tensor> xs = c.inputs;
  KILN_CHECK(!xs.empty(), "cat: expected a non-empty list of tensors");
  for (size_t i = 0; i < xs.size(); ++i)
    KILN_CHECK(xs[i].impl()->dim() > 0,
               "cat: zero-dimensional tensor (at position {}) cannot be concatenated", i);
  m.device = common_device("cat", xs);
  ResultType rt;
  for (const Tensor& t : xs) rt.add(t);
  m.dtype = rt.get();

  int64_t ref = cat_reference(xs);
  if (ref < 0) {
    m.sizes = {0};
    return;
  }
  const TensorImpl* r = xs[ref].impl();
  int64_t dim = wrap_dim("cat", c.attrs.ints[0], r->dim());
  m.sizes = r->sizes();
  m.sizes[dim] = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const TensorImpl* t = xs[i].impl();
    if (cat_skips(t)) continue;
    KILN_CHECK(t->dim() == r->dim(),
               "cat: tensors must have the same number of dims: tensor {} has shape {} but "
               "tensor {} has shape {}",
               ref, shape_str(r->sizes()), i, shape_str(t->sizes()));
    for (int64_t d = 0; d < r->dim(); ++d) {
      KILN_CHECK(d == dim || t->sizes()[d] == r->sizes()[d],
                 "cat: sizes of tensors must match except in dim {}: tensor {} has shape {} but "
                 "tensor {} has shape {} (dim {}: {} vs {})",
                 dim, ref, shape_str(r->sizes()), i, shape_str(t->sizes()), d, r->sizes()[d],
                 t->sizes()[d]);
    }
    m.sizes[dim] += t->sizes()[dim];
  }
}

// Contiguous inputs of the output's dtype: output row r (one index of the dims before `dim`) is
// row r of every input, back to back. The output's elements are split evenly between threads
// (not its rows, of which there may be one) and each range is filled by memcpy of the pieces it
// covers.
void cat_contiguous(std::span<const Tensor> xs, const Tensor& out, int64_t dim) {
  const TensorImpl* o = out.impl();
  const int64_t isz = static_cast<int64_t>(itemsize(o->dtype()));
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= o->sizes()[d];
  const int64_t out_row = o->numel() / outer;
  // Per non-empty input: its data, its row length and where its piece starts in an output row.
  struct Piece {
    const char* data;
    int64_t row, start;
  };
  SmallVector<Piece, 8> pieces;
  int64_t start = 0;
  for (const Tensor& x : xs) {
    const TensorImpl* t = x.impl();
    if (cat_skips(t) || t->numel() == 0) continue;
    const int64_t row = t->numel() / outer;
    pieces.push_back({static_cast<const char*>(t->data()), row, start});
    start += row;
  }
  char* base = static_cast<char*>(o->data());
  parallel_for(0, o->numel(), kParallelGrain, [&](int64_t b, int64_t e) {
    int64_t r = b / out_row, c = b % out_row;
    size_t k = 0;
    while (pieces[k].start + pieces[k].row <= c) ++k;
    for (int64_t pos = b; pos < e;) {
      const Piece& p = pieces[k];
      const int64_t len = std::min(p.start + p.row - c, e - pos);
      std::memcpy(base + pos * isz, p.data + (r * p.row + c - p.start) * isz, len * isz);
      pos += len;
      c += len;
      if (c == p.start + p.row && ++k == pieces.size()) {
        k = 0;
        c = 0;
        ++r;
      }
    }
  });
}

void cat_eager(const OpCall& c, const Tensor& out) {
  std::span<const Tensor> xs = c.inputs;
  const TensorImpl* o = out.impl();
  int64_t ref = cat_reference(xs);
  if (ref < 0) return;  // every input is a legacy empty tensor: the output is empty too
  int64_t dim = wrap_dim("cat", c.attrs.ints[0], o->dim());

  bool simple = o->is_contiguous();
  for (const Tensor& x : xs)
    simple = simple && (cat_skips(x.impl()) ||
                        (x.impl()->is_contiguous() && x.impl()->dtype() == o->dtype()));
  if (simple) {
    cat_contiguous(xs, out, dim);
    return;
  }
  // Any layout or dtype: copy each input, casting, into its slice of the output.
  const PointwiseTable& table = pointwise_table();
  int64_t start = 0;
  for (const Tensor& x : xs) {
    const TensorImpl* t = x.impl();
    if (cat_skips(t) || t->numel() == 0) {
      if (!cat_skips(t)) start += t->sizes()[dim];
      continue;
    }
    DimVector sizes = o->sizes();
    sizes[dim] = t->sizes()[dim];
    Tensor slice(make_ref<TensorImpl>(sizes, o->strides(), o->offset() + start * o->strides()[dim],
                                      o->dtype(), o->device(), o->storage_ref()));
    const Tensor in[] = {x};
    ElementwiseLoop loop(slice, in);
    loop.run(table.cast[int(t->dtype())][int(o->dtype())], nullptr);
    start += t->sizes()[dim];
  }
}

}  // namespace

void register_shape_ops() { register_op(OpId::Cat, {"cat", cat_meta, cat_eager, kNoFlags}); }

Tensor cat(const std::vector<Tensor>& xs, int64_t dim) {
  Attrs a;
  a.ints[0] = dim;
  return dispatch(OpId::Cat, xs, a);
}

Tensor stack(const std::vector<Tensor>& xs, int64_t dim) {
  KILN_CHECK(!xs.empty(), "stack: expected a non-empty list of tensors");
  for (size_t i = 0; i < xs.size(); ++i)
    KILN_CHECK(xs[i].defined(), "stack: tensor {} is undefined", i);
  const Shape& first = xs[0].sizes();
  for (size_t i = 1; i < xs.size(); ++i) {
    KILN_CHECK(xs[i].impl()->sizes() == xs[0].impl()->sizes(),
               "stack: expects each tensor to be equal size, but got {} at entry 0 and {} at "
               "entry {}",
               shape_str(first), shape_str(xs[i].impl()->sizes()), i);
  }
  int64_t d = wrap_dim("stack", dim, static_cast<int64_t>(first.size()) + 1);
  std::vector<Tensor> parts;
  parts.reserve(xs.size());
  for (const Tensor& x : xs) parts.push_back(x.unsqueeze(d));
  return cat(parts, d);
}

std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim) {
  KILN_CHECK(x.defined(), "split: the input tensor is undefined");
  KILN_CHECK(x.dim() > 0, "split: expects at least a 1-dimensional tensor, got {}", describe(x));
  int64_t d = wrap_dim("split", dim, x.dim());
  KILN_CHECK(size >= 0, "split: split size must be non-negative, got {}", size);
  int64_t n = x.size(d);
  KILN_CHECK(size > 0 || n == 0,
             "split: split size can only be 0 if the dim's size is 0, but dim {} of {} has "
             "size {}",
             d, describe(x), n);
  // PyTorch's rule: at least one piece, even when size exceeds the dim (or the dim is empty).
  int64_t pieces = size == 0 ? 1 : std::max<int64_t>(n / size + (n % size != 0), 1);
  std::vector<Tensor> out;
  out.reserve(pieces);
  for (int64_t i = 0; i < pieces; ++i) {
    int64_t start = i == 0 ? 0 : std::min(i * size, n);  // i >= 1 only when size < n
    out.push_back(x.narrow(d, start, std::min(size, n - start)));
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  KILN_CHECK(x.defined(), "chunk: the input tensor is undefined");
  KILN_CHECK(x.dim() > 0, "chunk: expects at least a 1-dimensional tensor, got {}", describe(x));
  KILN_CHECK(chunks > 0, "chunk: the number of chunks must be greater than 0, got {}", chunks);
  int64_t d = wrap_dim("chunk", dim, x.dim());
  int64_t n = x.size(d);
  if (n == 0) {
    // PyTorch returns `chunks` empty pieces here (split would give one).
    std::vector<Tensor> out;
    for (int64_t i = 0; i < chunks; ++i) out.push_back(x.narrow(d, 0, 0));
    return out;
  }
  return split(x, n / chunks + (n % chunks != 0), d);  // ceil(n / chunks) without overflow
}

std::vector<Tensor> Tensor::split(int64_t size, int64_t dim) const {
  return kiln::split(*this, size, dim);
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  return kiln::chunk(*this, chunks, dim);
}

}  // namespace kiln

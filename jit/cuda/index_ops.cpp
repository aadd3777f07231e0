#include "jit/cuda/index_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "jit/cuda/render.h"
#include "ops/index_common.h"
#include "ops/meta_helpers.h"
#include "runtime/dispatcher.h"
#include "runtime/error.h"
#include "runtime/tensor_impl.h"

namespace kiln::jit::cuda {

namespace {

constexpr int kMaxDims = kCudaMaxDims;
constexpr DType kAll[] = {DType::Bool, DType::Int32, DType::Int64, DType::Float32, DType::Float64};
constexpr DType kIndexTypes[] = {DType::Int32, DType::Int64};

// Splits `index` over the rank a.w[1] and sizes a.w[2 + d] into offsets o<j> += digit * stride,
// the strides of offset j at a.w[base_j + d] (elements). Dim 0 takes what is left. `digits`
// also keeps the digits of dims rank-1 (col) and rank-2 (row): the triangle ops.
std::string split(const std::string& index, const std::vector<int>& bases, bool digits = false) {
  std::string s = fmt::format("    kiln_i64 r = {};\n", index);
  for (size_t j = 0; j < bases.size(); ++j) s += fmt::format("    kiln_i64 o{} = 0;\n", j);
  if (digits) s += "    kiln_i64 col = 0, row = 0;\n";
  s += "    for (int d = (int)a.w[1] - 1; d >= 0; --d) {\n";
  s += "      kiln_i64 q = 0;\n";
  s += "      const kiln_i64 digit = d == 0 ? r : kiln_divmod(r, (kiln_i64)a.w[2 + d], &q);\n";
  s += "      r = q;\n";
  if (digits)
    s += "      if (d == (int)a.w[1] - 1) col = digit;\n      if (d == (int)a.w[1] - 2) row = "
         "digit;\n";
  for (size_t j = 0; j < bases.size(); ++j)
    s += fmt::format("      o{} += digit * (kiln_i64)a.w[{} + d];\n", j, bases[j]);
  s += "    }\n";
  return s;
}

// ---- index_select, gather, embedding: out[p] = x[p with dim replaced by index[p]] ----
// Words: [0] n, [1] rank, [2, 14) sizes, [14, 26) out strides, [26, 38) x strides (0 along dim),
// [38, 50) index strides, [50] dim size, [51] x's stride along dim, [52] out, [53] x, [54] index,
// [55] error word, [56] op code, [57] dim.
constexpr int kGatherWords = 58;

CudaSource gather_source(DType t, DType it) {
  const std::string name = fmt::format("kiln_gather_{}_{}", dtype_name(t), dtype_name(it));
  const char* T = cuda_storage_type(t);
  std::string s = source_kernel_begin(name, kGatherWords);
  s += fmt::format(
      "  {0}* const out = ({0}*)a.w[52];\n  const {0}* const x = (const {0}*)a.w[53];\n"
      "  const {1}* const ix = (const {1}*)a.w[54];\n"
      "  const kiln_i64 size = (kiln_i64)a.w[50], stride = (kiln_i64)a.w[51];\n",
      T, cuda_storage_type(it));
  s += grid_stride_loop();
  s += split("i", {14, 26, 38});
  s += fmt::format(
      "    const kiln_i64 v = (kiln_i64)ix[o2];\n"
      "    if (v < 0 || v >= size) {{\n"
      "      kiln_report((kiln_u64*)a.w[55], a.w[56], v, (kiln_i64)a.w[57], size);\n"
      "      out[o0] = ({0})0;\n"
      "      continue;\n"
      "    }}\n"
      "    out[o0] = x[o1 + v * stride];\n  }}\n}}\n",
      T);
  return {name, s};
}

struct GatherPlan {
  DimVector sizes;
  std::array<DimVector, 3> strides;  // out, x, index (elements)
  int64_t dim = 0, dim_size = 0, dim_stride = 0;
};

void check_rank(const char* op, const DimVector& sizes) {
  KILN_CHECK(static_cast<int>(sizes.size()) <= kMaxDims,
             "{}: CUDA kernels take at most {} dims, got sizes {}", op, kMaxDims, shape_str(sizes));
}

void run_gather(OpId op, const GatherPlan& p, const Tensor& out, const Tensor& x,
                const Tensor& index) {
  check_rank(op_name(op), p.sizes);
  const int device = out.impl()->device().index;
  std::vector<uint64_t> w(kGatherWords, 0);
  w[0] = static_cast<uint64_t>(numel_of(p.sizes));
  if (w[0] == 0) return;
  w[1] = p.sizes.size();
  for (size_t d = 0; d < p.sizes.size(); ++d) {
    w[2 + d] = static_cast<uint64_t>(p.sizes[d]);
    for (size_t j = 0; j < 3; ++j) w[14 + 12 * j + d] = static_cast<uint64_t>(p.strides[j][d]);
  }
  w[50] = static_cast<uint64_t>(p.dim_size);
  w[51] = static_cast<uint64_t>(p.dim_stride);
  w[52] = address_word(out);
  w[53] = address_word(x);
  w[54] = address_word(index);
  w[55] = source_kernel_error_word(device);
  w[56] = static_cast<uint64_t>(op) + 1;
  w[57] = static_cast<uint64_t>(p.dim);
  launch_source_kernel(device, rendered<gather_source>(x.impl()->dtype(), index.impl()->dtype()),
                       w);
}

// As ops/index.cpp: the indexed tensor's stride along dim is 0, the index's value times the
// stride is added per element.
void index_select_cuda(const OpCall& c, const Tensor& out) {
  const TensorImpl* xi = c.inputs[0].impl();
  const TensorImpl* ii = c.inputs[1].impl();
  GatherPlan p;
  p.dim = wrap_dim("index_select", c.attrs.ints[0], xi->dim());
  const DimVector xstrides = nonempty_strides(xi);
  p.sizes = nonempty_sizes(xi);
  p.dim_size = p.sizes[p.dim];
  p.dim_stride = xstrides[p.dim];
  p.sizes[p.dim] = ii->numel();
  p.strides[0] = contiguous_strides(p.sizes);
  p.strides[1] = xstrides;
  p.strides[1][p.dim] = 0;
  p.strides[2].assign(p.sizes.size(), 0);
  p.strides[2][p.dim] = ii->dim() == 0 ? 0 : ii->strides()[0];
  run_gather(OpId::IndexSelect, p, out, c.inputs[0], c.inputs[1]);
}

void gather_cuda(const OpCall& c, const Tensor& out) {
  const TensorImpl* xi = c.inputs[0].impl();
  const TensorImpl* ii = c.inputs[1].impl();
  GatherPlan p;
  p.dim = wrap_dim("gather", c.attrs.ints[0], xi->dim());
  const DimVector xstrides = nonempty_strides(xi);
  p.dim_size = nonempty_sizes(xi)[p.dim];
  p.dim_stride = xstrides[p.dim];
  p.sizes = nonempty_sizes(ii);
  p.strides[0] = contiguous_strides(p.sizes);
  p.strides[1] = xstrides;
  p.strides[1][p.dim] = 0;
  p.strides[2] = nonempty_strides(ii);
  run_gather(OpId::Gather, p, out, c.inputs[0], c.inputs[1]);
}

// embedding(weight [V, D], indices): out[p, k] = weight[indices[p], k], a gather along dim 0
// of the weight over the index space indices.shape + [D].
void embedding_cuda(const OpCall& c, const Tensor& out) {
  const TensorImpl* wi = c.inputs[0].impl();
  const TensorImpl* ii = c.inputs[1].impl();
  GatherPlan p;
  p.sizes = ii->sizes();
  p.sizes.push_back(wi->sizes()[1]);
  p.strides[0] = contiguous_strides(p.sizes);
  p.strides[1].assign(p.sizes.size(), 0);
  p.strides[1].back() = wi->strides()[1];
  p.strides[2] = ii->strides();
  p.strides[2].push_back(0);
  p.dim = 0;
  p.dim_size = wi->sizes()[0];
  p.dim_stride = wi->strides()[0];
  run_gather(OpId::Embedding, p, out, c.inputs[0], c.inputs[1]);
}

// ---- scatter_add ----
// One thread per output column (a position of the index space with dim's coordinate left out)
// walks dim upwards, so each output element receives its additions in the CPU's order.
// Words: [0] columns, [1] rank, [2, 14) index sizes (1 along dim), [14, 26) out strides,
// [26, 38) src strides, [38, 50) index strides, [50] index size along dim, [51] out size along
// dim, [52] out stride along dim, [53] src stride along dim, [54] index stride along dim,
// [55] out, [56] src, [57] index, [58] error word, [59] op code, [60] dim.
constexpr int kScatterWords = 61;

std::string add_expr(DType t) {
  switch (t) {
    case DType::Bool:
      return "(unsigned char)(dst != 0 || add != 0)";
    case DType::Int32:
      return "(int)((unsigned)dst + (unsigned)add)";
    case DType::Int64:
      return "(kiln_i64)((kiln_u64)dst + (kiln_u64)add)";
    default:
      return "dst + add";
  }
}

CudaSource scatter_add_source(DType t, DType it) {
  const std::string name = fmt::format("kiln_scatter_add_{}_{}", dtype_name(t), dtype_name(it));
  const char* T = cuda_storage_type(t);
  std::string s = source_kernel_begin(name, kScatterWords);
  s += fmt::format(
      "  {0}* const out = ({0}*)a.w[55];\n  const {0}* const src = (const {0}*)a.w[56];\n"
      "  const {1}* const ix = (const {1}*)a.w[57];\n"
      "  const kiln_i64 len = (kiln_i64)a.w[50], size = (kiln_i64)a.w[51];\n"
      "  const kiln_i64 so = (kiln_i64)a.w[52], ss = (kiln_i64)a.w[53], si = (kiln_i64)a.w[54];\n",
      T, cuda_storage_type(it));
  s += grid_stride_loop();
  s += split("i", {14, 26, 38});
  s += fmt::format(
      "    for (kiln_i64 j = 0; j < len; ++j) {{\n"
      "      const kiln_i64 v = (kiln_i64)ix[o2 + j * si];\n"
      "      if (v < 0 || v >= size) {{\n"
      "        kiln_report((kiln_u64*)a.w[58], a.w[59], v, (kiln_i64)a.w[60], size);\n"
      "        continue;\n"
      "      }}\n"
      "      {0}* const p = out + o0 + v * so;\n"
      "      const {0} dst = *p, add = src[o1 + j * ss];\n"
      "      *p = {1};\n"
      "    }}\n  }}\n}}\n",
      T, add_expr(t));
  return {name, s};
}

void copy_on_device(const Tensor& dst, const Tensor& src) {
  const Tensor in[] = {src};
  Attrs none;
  device_kernel(op_def(OpId::Copy), OpId::Copy, dst.impl()->device())(OpCall{OpId::Copy, in, none},
                                                                      dst);
}

void scatter_add_cuda(const OpCall& c, const Tensor& out) {
  const Tensor& x = c.inputs[0];
  copy_on_device(out, x);
  const TensorImpl* ii = c.inputs[1].impl();
  const TensorImpl* si = c.inputs[2].impl();
  const TensorImpl* oi = out.impl();
  if (ii->numel() == 0) return;
  const int64_t dim = wrap_dim("scatter_add", c.attrs.ints[0], x.impl()->dim());
  DimVector sizes = nonempty_sizes(ii);
  check_rank("scatter_add", sizes);
  const DimVector ostrides = contiguous_strides(nonempty_sizes(oi));
  const DimVector sstrides = nonempty_strides(si), istrides = nonempty_strides(ii);
  const int64_t len = sizes[dim];
  sizes[dim] = 1;
  std::vector<uint64_t> w(kScatterWords, 0);
  w[0] = static_cast<uint64_t>(numel_of(sizes));
  w[1] = sizes.size();
  for (size_t d = 0; d < sizes.size(); ++d) {
    w[2 + d] = static_cast<uint64_t>(sizes[d]);
    w[14 + d] = static_cast<uint64_t>(ostrides[d]);
    w[26 + d] = static_cast<uint64_t>(sstrides[d]);
    w[38 + d] = static_cast<uint64_t>(istrides[d]);
  }
  w[50] = static_cast<uint64_t>(len);
  w[51] = static_cast<uint64_t>(nonempty_sizes(oi)[dim]);
  w[52] = static_cast<uint64_t>(ostrides[dim]);
  w[53] = static_cast<uint64_t>(sstrides[dim]);
  w[54] = static_cast<uint64_t>(istrides[dim]);
  w[55] = address_word(out);
  w[56] = address_word(c.inputs[2]);
  w[57] = address_word(c.inputs[1]);
  const int device = oi->device().index;
  w[58] = source_kernel_error_word(device);
  w[59] = static_cast<uint64_t>(OpId::ScatterAdd) + 1;
  w[60] = static_cast<uint64_t>(dim);
  launch_source_kernel(device, rendered<scatter_add_source>(oi->dtype(), ii->dtype()), w);
}

// ---- one_hot ----
// Words: [0] n (index elements x classes), [1] index rank, [2, 14) index sizes, [14, 26) index
// strides, [26] classes, [27] out, [28] index, [29] error word, [30] op code, [31] the class dim.
constexpr int kOneHotWords = 32;

CudaSource one_hot_source() {
  const std::string name = "kiln_one_hot";
  std::string s = source_kernel_begin(name, kOneHotWords);
  s += "  kiln_i64* const out = (kiln_i64*)a.w[27];\n"
       "  const kiln_i64* const ix = (const kiln_i64*)a.w[28];\n"
       "  const kiln_i64 classes = (kiln_i64)a.w[26];\n";
  s += grid_stride_loop();
  s += "    kiln_i64 p = 0;\n    const kiln_i64 k = kiln_divmod(i, classes, &p);\n";
  s += split("p", {14});
  s +=
      "    const kiln_i64 v = ix[o0];\n"
      "    if (v < 0 || v >= classes) {\n"
      "      if (k == 0) kiln_report((kiln_u64*)a.w[29], a.w[30], v, (kiln_i64)a.w[31], classes);\n"
      "      out[i] = 0;\n"
      "      continue;\n"
      "    }\n"
      "    out[i] = v == k ? 1 : 0;\n  }\n}\n";
  return {name, s};
}

void one_hot_cuda(const OpCall& c, const Tensor& out) {
  const TensorImpl* ii = c.inputs[0].impl();
  const int64_t classes = c.attrs.ints[0];
  const DimVector sizes = nonempty_sizes(ii), strides = nonempty_strides(ii);
  check_rank("one_hot", sizes);
  std::vector<uint64_t> w(kOneHotWords, 0);
  w[0] = static_cast<uint64_t>(out.impl()->numel());
  if (w[0] == 0) return;
  w[1] = sizes.size();
  for (size_t d = 0; d < sizes.size(); ++d) {
    w[2 + d] = static_cast<uint64_t>(sizes[d]);
    w[14 + d] = static_cast<uint64_t>(strides[d]);
  }
  w[26] = static_cast<uint64_t>(classes);
  w[27] = address_word(out);
  w[28] = address_word(c.inputs[0]);
  const int device = out.impl()->device().index;
  w[29] = source_kernel_error_word(device);
  w[30] = static_cast<uint64_t>(OpId::OneHot) + 1;
  w[31] = static_cast<uint64_t>(ii->dim());
  launch_source_kernel(device, rendered<one_hot_source>(), w);
}

// ---- tril / triu ----
// Words: [0] n, [1] rank, [2, 14) sizes, [14, 26) x strides, [26] k (clamped), [27] lower,
// [28] out (contiguous), [29] x.
constexpr int kTriangleWords = 30;

CudaSource triangle_source(DType t) {
  const std::string name = fmt::format("kiln_triangle_{}", dtype_name(t));
  const char* T = cuda_storage_type(t);
  std::string s = source_kernel_begin(name, kTriangleWords);
  s += fmt::format(
      "  {0}* const out = ({0}*)a.w[28];\n  const {0}* const x = (const {0}*)a.w[29];\n"
      "  const kiln_i64 k = (kiln_i64)a.w[26];\n  const bool lower = a.w[27] != 0;\n",
      T);
  s += grid_stride_loop();
  s += split("i", {14}, /*digits=*/true);
  s += fmt::format(
      "    const bool keep = lower ? col - row <= k : col - row >= k;\n"
      "    out[i] = keep ? x[o0] : ({})0;\n  }}\n}}\n",
      T);
  return {name, s};
}

void triangle_cuda(const OpCall& c, const Tensor& out) {
  const TensorImpl* xi = c.inputs[0].impl();
  const DimVector& sizes = xi->sizes();
  check_rank(op_name(c.op), sizes);
  const int64_t R = sizes[sizes.size() - 2], C = sizes.back();
  const int64_t k = std::clamp<int64_t>(c.attrs.ints[0], -R - 1, C + 1);  // as the CPU
  std::vector<uint64_t> w(kTriangleWords, 0);
  w[0] = static_cast<uint64_t>(xi->numel());
  w[1] = sizes.size();
  for (size_t d = 0; d < sizes.size(); ++d) {
    w[2 + d] = static_cast<uint64_t>(sizes[d]);
    w[14 + d] = static_cast<uint64_t>(xi->strides()[d]);
  }
  w[26] = static_cast<uint64_t>(k);
  w[27] = c.op == OpId::Tril ? 1 : 0;
  w[28] = address_word(out);
  w[29] = address_word(c.inputs[0]);
  launch_source_kernel(out.impl()->device().index, rendered<triangle_source>(xi->dtype()), w);
}

// ---- cat and as_strided_scatter: copies into views of the output ----

bool cat_skips(const TensorImpl* t) { return t->dim() == 1 && t->sizes()[0] == 0; }

void cat_cuda(const OpCall& c, const Tensor& out) {
  const TensorImpl* o = out.impl();
  bool any = false;
  for (const Tensor& x : c.inputs) any = any || !cat_skips(x.impl());
  if (!any) return;  // every input is a legacy empty tensor: so is the output
  const int64_t dim = wrap_dim("cat", c.attrs.ints[0], o->dim());
  int64_t start = 0;
  for (const Tensor& x : c.inputs) {
    const TensorImpl* t = x.impl();
    if (cat_skips(t)) continue;
    if (t->numel() > 0) {
      DimVector sizes = o->sizes();
      sizes[dim] = t->sizes()[dim];
      const Tensor slice(make_ref<TensorImpl>(sizes, o->strides(),
                                              o->offset() + start * o->strides()[dim], o->dtype(),
                                              o->device(), o->storage_ref()));
      copy_on_device(slice, x);  // casts to the output's dtype
    }
    start += t->sizes()[dim];
  }
}

void as_strided_scatter_cuda(const OpCall& c, const Tensor& out) {
  copy_on_device(out, c.inputs[0]);
  const Attrs& a = c.attrs;
  const size_t rank = a.dims.size() / 2;
  const DimVector sizes(a.dims.begin(), a.dims.begin() + static_cast<int64_t>(rank));
  const DimVector strides(a.dims.begin() + static_cast<int64_t>(rank), a.dims.end());
  if (numel_of(sizes) == 0) return;
  const TensorImpl* o = out.impl();
  const Tensor view(make_ref<TensorImpl>(sizes, strides, o->offset() + a.ints[0], o->dtype(),
                                         o->device(), o->storage_ref()));
  copy_on_device(view, c.inputs[1]);
}

}  // namespace

std::vector<CudaSource> cuda_index_sources() {
  std::vector<CudaSource> all;
  for (DType t : kAll) {
    for (DType it : kIndexTypes) {
      all.push_back(gather_source(t, it));
      all.push_back(scatter_add_source(t, it));
    }
    all.push_back(triangle_source(t));
  }
  all.push_back(one_hot_source());
  return all;
}

void register_cuda_index_kernels() {
  constexpr auto kCuda = Device::Type::CUDA;
  register_device_kernel(OpId::IndexSelect, kCuda, index_select_cuda);
  register_device_kernel(OpId::Gather, kCuda, gather_cuda);
  register_device_kernel(OpId::Embedding, kCuda, embedding_cuda);
  register_device_kernel(OpId::ScatterAdd, kCuda, scatter_add_cuda);
  register_device_kernel(OpId::OneHot, kCuda, one_hot_cuda);
  register_device_kernel(OpId::Tril, kCuda, triangle_cuda);
  register_device_kernel(OpId::Triu, kCuda, triangle_cuda);
  register_device_kernel(OpId::Cat, kCuda, cat_cuda);
  register_device_kernel(OpId::AsStridedScatter, kCuda, as_strided_scatter_cuda);
}

}  // namespace kiln::jit::cuda

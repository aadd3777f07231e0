#include "jit/cuda/launch_words.h"

#include <algorithm>
#include <array>
#include <bit>

#include "jit/cuda/render.h"
#include "jit/cuda/render_reduce.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace kiln::jit::cuda {

namespace {

// Each param's value as the kernel reads it: Scalar::to in the param's type, as bits.
uint64_t param_word(const Scalar& s, DType t) {
  switch (t) {
    case DType::Float32:
      return std::bit_cast<uint32_t>(s.to<float>());
    case DType::Float64:
      return std::bit_cast<uint64_t>(s.to<double>());
    case DType::Int32:
      return static_cast<uint32_t>(s.to<int32_t>());
    default:
      return static_cast<uint64_t>(s.to<int64_t>());
  }
}

// The launch's dims after coalescing: size-1 dims dropped, a dim merged into the next inner one
// where every operand steps through both as through one. At most kCudaMaxDims remain.
struct Coalesced {
  explicit Coalesced(int nops) : strides(static_cast<size_t>(nops)) {}
  std::array<int64_t, kCudaMaxDims> sizes{};
  std::vector<std::array<int64_t, kCudaMaxDims>> strides;
  int rank = 0;

  // Appends dims [begin, end) of `a`, merged among themselves only; returns their element
  // count. `keep_one`: none left (all of size 1, or no dims) appends one dim of size 1.
  int64_t add(const LaunchArgs& a, size_t begin, size_t end, bool keep_one) {
    const int first = rank;
    int64_t n = 1;
    for (size_t d = begin; d < end; ++d) {
      const int64_t s = a.sizes[d];
      n *= s;
      if (s == 1) continue;
      bool merge = rank > first;
      for (size_t j = 0; j < strides.size() && merge; ++j)
        merge = strides[j][rank - 1] == a.strides[j][d] * s;
      if (merge) {
        sizes[rank - 1] *= s;
        for (size_t j = 0; j < strides.size(); ++j) strides[j][rank - 1] = a.strides[j][d];
        continue;
      }
      push(s, a, d);
    }
    if (rank == first && (keep_one || first == 0)) push(1, a, a.sizes.size());  // stride 0
    return n;
  }

 private:
  void push(int64_t size, const LaunchArgs& a, size_t d) {
    KILN_CHECK(rank < kCudaMaxDims,
               "cuda kernel: the launch has more than {} dims that cannot be merged (sizes {})",
               kCudaMaxDims, shape_str(a.sizes));
    sizes[rank] = size;
    for (size_t j = 0; j < strides.size(); ++j)
      strides[j][rank] = d < a.sizes.size() ? a.strides[j][d] : 0;
    ++rank;
  }
};

// Whether a launch may take the vector form (render.cpp): a 32-bit count, and either rank 1 with
// every output and every input that does not broadcast (stride 0) contiguous and its address
// aligned as kiln_pack4 of its type is (4 elements, at most 16 bytes); or rank 2 with rows of a
// multiple of 4 elements, every operand's inner stride its item size (or 0 for an input) and
// every row's start so aligned (its address and its row stride).
bool vector_form_applies(const LoopKernel& k, int rank, int64_t n,
                         const SmallVector<char*, 8>& ptrs, const Coalesced& c) {
  if ((rank != 1 && rank != 2) || n > int64_t{0x7fffffff}) return false;
  if (rank == 2 && c.sizes[1] % 4 != 0) return false;
  const int inner = rank - 1;
  for (int j = 0; j < k.num_operands(); ++j) {
    const int64_t item = static_cast<int64_t>(itemsize(k.operand_dtype(j)));
    const uint64_t align = static_cast<uint64_t>(std::min<int64_t>(4 * item, 16));
    const auto& st = c.strides[static_cast<size_t>(j)];
    if (j >= k.num_outputs() && st[inner] == 0) continue;  // one scalar load per row or launch
    if (st[inner] != item || reinterpret_cast<uint64_t>(ptrs[j]) % align != 0) return false;
    if (rank == 2 && static_cast<uint64_t>(st[0]) % align != 0) return false;
  }
  return true;
}

}  // namespace

CudaLaunch cuda_launch_words(const LoopKernel& k, const LaunchArgs& args) {
  const int nops = k.num_operands();
  KILN_CHECK(static_cast<int>(args.ptrs.size()) == nops &&
                 static_cast<int>(args.strides.size()) == nops &&
                 static_cast<int>(args.params.size()) == k.num_params(),
             "cuda kernel: launched with {} pointers, {} stride lists and {} params; it has {} "
             "operands and {} params",
             args.ptrs.size(), args.strides.size(), args.params.size(), nops, k.num_params());
  const bool row_kernel = k.has_reduce();
  const size_t total = args.sizes.size();
  KILN_CHECK(args.reduced_dims >= 0 && static_cast<size_t>(args.reduced_dims) <= total &&
                 (row_kernel || args.reduced_dims == 0),
             "cuda kernel: {} reduced dims of sizes {} ({})", args.reduced_dims,
             shape_str(args.sizes), row_kernel ? "a row kernel" : "a pointwise kernel");
  Coalesced c(nops);
  const size_t split = total - static_cast<size_t>(args.reduced_dims);
  const int64_t outer = c.add(args, 0, split, row_kernel);
  const int outer_rank = c.rank;
  const int64_t row_n = row_kernel ? c.add(args, split, total, true) : 0;
  const int row_rank = c.rank - outer_rank;
  CudaLaunch l;
  if (outer == 0) return l;
  const CudaArgLayout layout{nops, k.num_params()};
  l.words.assign(static_cast<size_t>(layout.words()), 0);
  std::vector<uint64_t>& w = l.words;
  w[CudaArgLayout::kCount] = static_cast<uint64_t>(outer);
  w[CudaArgLayout::kRank] = static_cast<uint64_t>(outer_rank);
  w[CudaArgLayout::kRowLen] = static_cast<uint64_t>(row_n);
  w[CudaArgLayout::kRowRank] = static_cast<uint64_t>(row_rank);
  for (int d = 0; d < c.rank; ++d) w[CudaArgLayout::kSizes + d] = static_cast<uint64_t>(c.sizes[d]);
  for (int j = 0; j < nops; ++j) {
    w[layout.ptr(j)] = reinterpret_cast<uint64_t>(args.ptrs[j]);
    for (int d = 0; d < c.rank; ++d)
      w[layout.stride(j, d)] = static_cast<uint64_t>(c.strides[j][d]);
  }
  for (int p = 0; p < k.num_params(); ++p)
    w[layout.param(p)] = param_word(args.params[p], k.params[p]);
  l.work = outer;
  if (row_kernel) {  // render_reduce.h: a warp per row of at most 2048 elements, else a block
    l.per_block = row_n <= 2048 ? kCudaBlockThreads / 32 : 1;
    // Few long rows: split each into chunks of 2048 C elements (C a power of two) so that
    // about kSplitBlocks blocks share the work, at most kSplitChunks per row (phase 2 walks a
    // lane's chunks in order); the order, hence the bits, stay the same.
    constexpr int64_t kSplitBlocks = 1024, kSplitChunks = 256;
    if (row_n > 2048 && row_kernel_splits(k) && outer < kSplitBlocks) {
      const int64_t wanted = std::min((kSplitBlocks + outer - 1) / outer, kSplitChunks);
      int64_t chunk = 2048;
      while ((row_n + chunk - 1) / chunk > wanted) chunk *= 2;
      const int64_t chunks = (row_n + chunk - 1) / chunk;
      if (chunks >= 2) {
        w[layout.split(CudaArgLayout::kSplitChunk)] = static_cast<uint64_t>(chunk);
        l.split_items = outer * chunks;
        l.scratch_bytes =
            l.split_items * 256 * static_cast<int64_t>(itemsize(row_kernel_reduce_type(k)));
      }
    }
    return l;
  }
  if (vector_form_applies(k, c.rank, outer, args.ptrs, c))
    w[CudaArgLayout::kRank] |= CudaArgLayout::kVecFlag;
  // The dense loop and the vector forms (render.h): one block per 256 * 4 elements, no cap (each
  // thread makes one trip: on an H100 this moves ~7% more bytes per second than 8 blocks per SM
  // looping, and reaches PyTorch's elementwise kernels). The strided loop: at most 16 blocks per
  // SM, looping.
  const bool dense = (c.rank == 1 && outer <= int64_t{0x7fffffff}) ||
                     (w[CudaArgLayout::kRank] & CudaArgLayout::kVecFlag) != 0;
  l.per_block = int64_t{kCudaBlockThreads} * (dense ? 4 : 1);
  l.capped = !dense;
  return l;
}

void set_split_phase(CudaLaunch& l, const LoopKernel& k, void* scratch, int phase) {
  const CudaArgLayout layout{k.num_operands(), k.num_params()};
  l.words[static_cast<size_t>(layout.split(CudaArgLayout::kSplitScratch))] =
      reinterpret_cast<uint64_t>(scratch);
  l.words[static_cast<size_t>(layout.split(CudaArgLayout::kSplitPhase))] =
      static_cast<uint64_t>(phase);
}

}  // namespace kiln::jit::cuda

#include "ops/cpu/elementwise_loop.h"

#include <cstdlib>

#include <emmintrin.h>
#include <xmmintrin.h>

#include "runtime/error.h"
#include "runtime/parallel.h"

namespace kiln {

ElementwiseLoop::ElementwiseLoop(const Tensor& out, std::span<const Tensor> inputs,
                                 std::span<const void* const> scalars) {
  const TensorImpl* o = out.impl();
  nops_ = 1 + static_cast<int>(inputs.size());
  KILN_CHECK(nops_ <= kMaxOperands, "elementwise loop: too many operands ({})", nops_);
  const DimVector& shape = o->sizes();
  int nd = static_cast<int>(shape.size());
  numel_ = o->numel();

  // Fast path (most small eager ops): every tensor operand has out's shape and is contiguous,
  // so the whole space is one dense dim; scalars get stride 0.
  if (o->is_contiguous() && nd > 0) {
    bool dense = true;
    for (size_t i = 0; i < inputs.size() && dense; ++i) {
      if (i < scalars.size() && scalars[i]) continue;
      const TensorImpl* in = inputs[i].impl();
      dense = in->is_contiguous() && in->sizes() == shape;
    }
    if (dense) {
      sizes_.push_back(numel_);
      base_[0] = static_cast<char*>(o->data());
      strides_[0].push_back(int64_t(itemsize(o->dtype())));
      for (int k = 1; k < nops_; ++k) {
        size_t i = k - 1;
        bool scalar = i < scalars.size() && scalars[i];
        base_[k] =
            static_cast<char*>(const_cast<void*>(scalar ? scalars[i] : inputs[i].impl()->data()));
        strides_[k].push_back(scalar ? 0 : int64_t(itemsize(inputs[i].impl()->dtype())));
      }
      ndim_ = numel_ > 1 ? 1 : 0;
      if (ndim_ == 0) {
        sizes_.clear();
        for (int k = 0; k < nops_; ++k) strides_[k].clear();
      }
      return;
    }
  }

  // Byte strides per operand over the output's dims (0 where an input broadcasts).
  std::array<DimVector, kMaxOperands> st;
  st[0].resize(nd);
  base_[0] = static_cast<char*>(o->data());
  for (int d = 0; d < nd; ++d) st[0][d] = o->strides()[d] * int64_t(itemsize(o->dtype()));
  for (int k = 1; k < nops_; ++k) {
    st[k].assign(nd, 0);
    size_t in_idx = k - 1;
    if (in_idx < scalars.size() && scalars[in_idx]) {
      base_[k] = static_cast<char*>(const_cast<void*>(scalars[in_idx]));
      continue;
    }
    const TensorImpl* in = inputs[in_idx].impl();
    base_[k] = static_cast<char*>(in->data());
    int off = nd - static_cast<int>(in->dim());
    KILN_CHECK(off >= 0,
               "elementwise loop: operand {} of shape {} has more dims than the output {}", k,
               shape_str(in->sizes()), shape_str(shape));
    int64_t isz = int64_t(itemsize(in->dtype()));
    for (int d = 0; d < in->dim(); ++d)
      st[k][d + off] = in->sizes()[d] == 1 ? 0 : in->strides()[d] * isz;
  }

  // Drop size-1 dims and merge dim d into d+1 when contiguous for every operand.
  for (int d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;
    if (!sizes_.empty()) {
      bool merge = true;
      for (int k = 0; k < nops_ && merge; ++k) merge = strides_[k].back() == st[k][d] * shape[d];
      if (merge) {
        sizes_.back() *= shape[d];
        for (int k = 0; k < nops_; ++k) strides_[k].back() = st[k][d];
        continue;
      }
    }
    sizes_.push_back(shape[d]);
    for (int k = 0; k < nops_; ++k) strides_[k].push_back(st[k][d]);
  }
  ndim_ = static_cast<int>(sizes_.size());
}

void ElementwiseLoop::run_range(int64_t begin, int64_t end, InnerLoop inner,
                                const Scalar* params) const {
  if (begin >= end) return;
  std::array<char*, kMaxOperands> ptrs;
  std::array<int64_t, kMaxOperands> inner_strides{};
  if (ndim_ == 0) {
    inner(base_.data(), inner_strides.data(), 1, params);
    return;
  }
  const int last = ndim_ - 1;
  for (int k = 0; k < nops_; ++k) inner_strides[k] = strides_[k][last];
  DimVector idx(ndim_);
  int64_t rem = begin;
  for (int d = last; d >= 0; --d) {
    idx[d] = rem % sizes_[d];
    rem /= sizes_[d];
  }
  int64_t i = begin;
  while (i < end) {
    for (int k = 0; k < nops_; ++k) {
      char* p = base_[k];
      for (int d = 0; d < ndim_; ++d) p += idx[d] * strides_[k][d];
      ptrs[k] = p;
    }
    int64_t n = std::min(sizes_[last] - idx[last], end - i);
    inner(ptrs.data(), inner_strides.data(), n, params);
    i += n;
    idx[last] += n;
    for (int d = last; d > 0 && idx[d] == sizes_[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

bool ElementwiseLoop::tiles() const {
  if (ndim_ < 2) return false;
  const int last = ndim_ - 1;
  if (sizes_[last] < 2 * kTileCols || sizes_[last - 1] < 2 || std::abs(strides_[0][last]) > 16)
    return false;
  for (int k = 1; k < nops_; ++k)
    if (transposed_input(strides_[k][last], strides_[k][last - 1])) return true;
  return false;
}

// Calls f(bases, r0, r1, c0, c1) for every tile of `tile_rows` x `tile_cols` of the last two
// dims (tiles() holds), in parallel: `bases` each operand's address of the tile's outer index
// (the last two dims at 0), [r0, r1) x [c0, c1) the tile's rows and columns.
template <class F>
void ElementwiseLoop::for_each_tile(int64_t tile_rows, int64_t tile_cols, const F& f) const {
  const int last = ndim_ - 1;
  const int64_t rows = sizes_[last - 1], cols = sizes_[last];
  const int64_t tr = (rows + tile_rows - 1) / tile_rows, tc = (cols + tile_cols - 1) / tile_cols;
  const int64_t outer = numel_ / (rows * cols);
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (tile_rows * tile_cols));
  parallel_for(0, outer * tr * tc, grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t c = t % tc, r = t / tc % tr;
      int64_t o = t / (tc * tr);
      std::array<char*, kMaxOperands> base = base_;
      for (int d = last - 2; d >= 0; --d) {  // the outer dims' index of tile t
        const int64_t i = o % sizes_[d];
        o /= sizes_[d];
        for (int k = 0; k < nops_; ++k) base[k] += i * strides_[k][d];
      }
      f(base, r * tile_rows, std::min(rows, (r + 1) * tile_rows), c * tile_cols,
        std::min(cols, (c + 1) * tile_cols));
    }
  });
}

void ElementwiseLoop::run_tiles(InnerLoop inner, const Scalar* params) const {
  const int last = ndim_ - 1;
  std::array<int64_t, kMaxOperands> inner_strides{};
  for (int k = 0; k < nops_; ++k) inner_strides[k] = strides_[k][last];
  for_each_tile(kTileRows, kTileCols,
                [&](const std::array<char*, kMaxOperands>& base, int64_t r0, int64_t r1, int64_t c0,
                    int64_t c1) {
                  std::array<char*, kMaxOperands> ptrs;
                  for (int64_t i = r0; i < r1; ++i) {
                    for (int k = 0; k < nops_; ++k)
                      ptrs[k] = base[k] + i * strides_[k][last - 1] + c0 * strides_[k][last];
                    inner(ptrs.data(), inner_strides.data(), c1 - c0, params);
                  }
                });
}

namespace {

// Rows [r0, r1) by columns [c0, c1) of a transpose: out(i, j) at out + i * so + j, in(i, j) at
// in + j * si + i (strides in elements). Whole blocks in SSE2 registers (4 x 4 of 4-byte
// elements, 2 x 2 of 8-byte ones: 4 or 2 contiguous runs of the input read, transposed, and
// written as as many contiguous runs of the output), the edges element by element.
template <class T>
void transpose_tile(T* out, int64_t so, const T* in, int64_t si, int64_t r0, int64_t r1, int64_t c0,
                    int64_t c1) {
  constexpr int64_t B = 16 / sizeof(T);
  int64_t r = r0;
  for (; r + B <= r1; r += B) {
    int64_t c = c0;
    for (; c + B <= c1; c += B) {
      if constexpr (B == 4) {
        __m128 a = _mm_loadu_ps(reinterpret_cast<const float*>(in + c * si + r));
        __m128 b = _mm_loadu_ps(reinterpret_cast<const float*>(in + (c + 1) * si + r));
        __m128 d = _mm_loadu_ps(reinterpret_cast<const float*>(in + (c + 2) * si + r));
        __m128 e = _mm_loadu_ps(reinterpret_cast<const float*>(in + (c + 3) * si + r));
        _MM_TRANSPOSE4_PS(a, b, d, e);
        _mm_storeu_ps(reinterpret_cast<float*>(out + r * so + c), a);
        _mm_storeu_ps(reinterpret_cast<float*>(out + (r + 1) * so + c), b);
        _mm_storeu_ps(reinterpret_cast<float*>(out + (r + 2) * so + c), d);
        _mm_storeu_ps(reinterpret_cast<float*>(out + (r + 3) * so + c), e);
      } else {
        const __m128d a = _mm_loadu_pd(reinterpret_cast<const double*>(in + c * si + r));
        const __m128d b = _mm_loadu_pd(reinterpret_cast<const double*>(in + (c + 1) * si + r));
        _mm_storeu_pd(reinterpret_cast<double*>(out + r * so + c), _mm_unpacklo_pd(a, b));
        _mm_storeu_pd(reinterpret_cast<double*>(out + (r + 1) * so + c), _mm_unpackhi_pd(a, b));
      }
    }
    for (int64_t i = r; i < r + B; ++i)
      for (int64_t j = c; j < c1; ++j) out[i * so + j] = in[j * si + i];
  }
  for (int64_t i = r; i < r1; ++i)
    for (int64_t j = c0; j < c1; ++j) out[i * so + j] = in[j * si + i];
}

}  // namespace

bool ElementwiseLoop::run_transposed_copy(size_t bytes) const {
  if (nops_ != 2 || (bytes != 4 && bytes != 8) || !tiles()) return false;
  const int last = ndim_ - 1;
  const auto b = static_cast<int64_t>(bytes);
  if (strides_[0][last] != b || strides_[1][last - 1] != b || strides_[0][last - 1] % b != 0 ||
      strides_[1][last] % b != 0 || strides_[0][last - 1] < 0 || strides_[1][last] < 0)
    return false;
  const int64_t so = strides_[0][last - 1] / b, si = strides_[1][last] / b;
  // Tiles of 128 rows x 32 columns: [4096, 1024] Float32 from a transposed [1024, 4096], a
  // harness of this loop on two threads: 2-core Zen 1 3.2-3.4 ms against 4.1-5.2 for 128 x 128
  // (256 x 16 3.0-3.2, 64 x 64 3.7-4.4); 16-core Xeon (AVX-512) 1.6-1.8 against 2.8-3.1 (256 x 16
  // 1.9-2.1, 64 x 64 1.8-2.6); with 16 threads every shape ran at memory speed (0.7 ms). (On
  // the 2-core Zen 3 of 2026-11-29, 128 x 128 was the fastest of 8 x 8 to 256 x 64.) Rows of at
  // most 128 elements stay whole: `img.permute({0, 2, 3, 1}).contiguous()` of [32, 64, 56, 56]
  // (64 columns) took 4.8-5.3 ms in 32-column tiles against 4.7 whole (Zen 1).
  for_each_tile(128, sizes_[last] <= 128 ? 128 : 32,
                [&](const std::array<char*, kMaxOperands>& base, int64_t r0, int64_t r1, int64_t c0,
                    int64_t c1) {
                  if (bytes == 4)
                    transpose_tile(reinterpret_cast<uint32_t*>(base[0]), so,
                                   reinterpret_cast<const uint32_t*>(base[1]), si, r0, r1, c0, c1);
                  else
                    transpose_tile(reinterpret_cast<uint64_t*>(base[0]), so,
                                   reinterpret_cast<const uint64_t*>(base[1]), si, r0, r1, c0, c1);
                });
  return true;
}

void ElementwiseLoop::run(InnerLoop inner, const Scalar* params) const {
  if (tiles()) return run_tiles(inner, params);
  parallel_for(0, numel_, kParallelGrain,
               [&](int64_t b, int64_t e) { run_range(b, e, inner, params); });
}

}  // namespace kiln

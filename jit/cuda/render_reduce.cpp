#include "jit/cuda/render_reduce.h"

#include <fmt/format.h>

#include <vector>

#include "jit/cuda/render_expr.h"
#include "runtime/error.h"

namespace kiln::jit::cuda {

namespace {

// The row kernels' helpers (after the prelude): each Reduce's operator with its identity, one
// lane's fold (kiln_cascade) and the tree over the lanes (kiln_row_tree). render_reduce.h states
// the order they implement.
constexpr const char* kRowPrelude =
    R"(// The extremes of each type, chosen by an argument of the type (an explicit specialization
// cannot be static).
KILN_INLINE float kiln_lowest(float) { return -__int_as_float(0x7f800000); }
KILN_INLINE float kiln_highest(float) { return __int_as_float(0x7f800000); }
KILN_INLINE double kiln_lowest(double) { return -__longlong_as_double(0x7ff0000000000000ll); }
KILN_INLINE double kiln_highest(double) { return __longlong_as_double(0x7ff0000000000000ll); }
KILN_INLINE int kiln_lowest(int) { return (int)0x80000000u; }
KILN_INLINE int kiln_highest(int) { return 0x7fffffff; }
KILN_INLINE kiln_i64 kiln_lowest(kiln_i64) { return (kiln_i64)0x8000000000000000ull; }
KILN_INLINE kiln_i64 kiln_highest(kiln_i64) { return 0x7fffffffffffffffll; }
template <class T> struct kiln_rsum {
  static __device__ __forceinline__ T id() { return T(0); }
  static __device__ __forceinline__ T f(T a, T b) { return kiln_add(a, b); }
};
template <class T> struct kiln_rprod {
  static __device__ __forceinline__ T id() { return T(1); }
  static __device__ __forceinline__ T f(T a, T b) { return kiln_mul(a, b); }
};
template <class T> struct kiln_rmax {
  static __device__ __forceinline__ T id() { return kiln_lowest(T(0)); }
  static __device__ __forceinline__ T f(T a, T b) { return kiln_max(a, b); }
};
template <class T> struct kiln_rmin {
  static __device__ __forceinline__ T id() { return kiln_highest(T(0)); }
  static __device__ __forceinline__ T f(T a, T b) { return kiln_min(a, b); }
};
// One lane's elements in order: pieces of 8 folded left to right, the pieces combined by a
// binary counter (piece c merges with the stack while c is even), then the stack folded from
// its top down. 48 levels hold 2^48 pieces.
template <class Op, class T> struct kiln_cascade {
  T st[48];
  T piece;
  int top, k;
  kiln_u64 c;
  __device__ __forceinline__ kiln_cascade() : top(0), k(0), c(0) {}
  __device__ __forceinline__ void flush() {
    T s = piece;
    k = 0;
    _Pragma("unroll 1") for (kiln_u64 m = ++c; !(m & 1); m >>= 1) s = Op::f(st[--top], s);
    st[top++] = s;
  }
  __device__ __forceinline__ void add(T x) {
    piece = k == 0 ? x : Op::f(piece, x);
    if (++k == 8) flush();
  }
  __device__ __forceinline__ T result() {
    if (k) flush();
    if (top == 0) return Op::id();
    T r = st[top - 1];
    _Pragma("unroll 1") for (int i = top - 2; i >= 0; --i) r = Op::f(st[i], r);
    return r;
  }
};
// The tree over the 256 lanes of a row of n elements. A warp: v[q] is lane t + 32q (q < 8);
// a block: v[0] is lane t, `sh` has 257 values. Every thread of the row gets the result.
template <class Op, class T>
static __device__ __noinline__ T kiln_row_tree(T* v, kiln_i64 n, int t, bool warp, T* sh) {
  if (n == 0) return Op::id();
  T x;
  if (warp) {
    for (int s = 4; s >= 1; s >>= 1)  // levels 128, 64, 32: within the thread
      for (int q = 0; q < s; ++q)
        if (t + 32 * (q + s) < n) v[q] = Op::f(v[q], v[q + s]);
    x = v[0];
  } else {
    x = v[0];
    for (int s = 128; s >= 32; s >>= 1) {
      sh[t] = x;
      __syncthreads();
      if (t < s && t + s < n) x = Op::f(x, sh[t + s]);
      __syncthreads();
    }
  }
  for (int s = 16; s >= 1; s >>= 1) {  // every warp shuffles; only warp 0's lanes matter
    const T y = __shfl_down_sync(0xffffffffu, x, s);
    if (t + s < n) x = Op::f(x, y);
  }
  if (warp) return __shfl_sync(0xffffffffu, x, 0);
  if (t == 0) sh[256] = x;
  __syncthreads();
  x = sh[256];
  __syncthreads();  // before the next pass reuses `sh` (maybe as another type)
  return x;
}
)";

const char* reduce_struct(ExprOp op) {
  switch (op) {
    case ExprOp::ReduceSum:
      return "kiln_rsum";
    case ExprOp::ReduceProd:
      return "kiln_rprod";
    case ExprOp::ReduceMax:
      return "kiln_rmax";
    default:
      return "kiln_rmin";
  }
}

class RowKernelRenderer {
 public:
  RowKernelRenderer(const LoopKernel& k, std::string& s)
      : k_(k), s_(s), layout_{k.num_operands(), k.num_params()}, row_(k.row_values()) {}

  void render(const std::string& name) {
    s_ += fmt::format("struct KilnArgs {{ kiln_u64 w[{}]; }};\n", layout_.words());
    s_ += fmt::format(
        "extern \"C\" __global__ void __launch_bounds__(256) {}(const KilnArgs a) {{\n"
        "  const kiln_i64 rows = (kiln_i64)a.w[{}];\n"
        "  const int orank = (int)a.w[{}];\n"
        "  const kiln_i64 row_n = (kiln_i64)a.w[{}];\n"
        "  const int rrank = (int)a.w[{}];\n"
        "  const bool warp = row_n <= 2048;  // render_reduce.h: by the row length alone\n"
        "  const int nt = warp ? 32 : 256;  // threads per row\n"
        "  const int t = (int)threadIdx.x % nt;\n"
        "  const kiln_i64 rpb = 256 / nt;  // rows per block\n"
        "  __shared__ kiln_u64 kiln_sh[257];\n",
        name, CudaArgLayout::kCount, CudaArgLayout::kRank, CudaArgLayout::kRowLen,
        CudaArgLayout::kRowRank);
    const int nops = k_.num_operands();
    for (int j = 0; j < nops; ++j)
      s_ += fmt::format("  char* const p{} = (char*)a.w[{}];\n", j, layout_.ptr(j));
    s_ +=
        "  for (kiln_i64 row = (kiln_i64)blockIdx.x * rpb + threadIdx.x / nt; row < rows;\n"
        "       row += (kiln_i64)gridDim.x * rpb) {\n";
    // The row's base offsets: the row index split over the rows' dims.
    for (int j = 0; j < nops; ++j) s_ += fmt::format("    kiln_i64 b{} = 0;\n", j);
    s_ += "    {\n      kiln_i64 r = row;\n      for (int d = orank - 1; d > 0; --d) {\n";
    s_ += fmt::format("        const kiln_i64 size = (kiln_i64)a.w[{} + d];\n",
                      CudaArgLayout::kSizes);
    s_ += "        kiln_i64 q;\n        const kiln_i64 x = kiln_divmod(r, size, &q);\n";
    s_ += "        r = q;\n";
    for (int j = 0; j < nops; ++j)
      s_ += fmt::format("        b{} += x * (kiln_i64)a.w[{} + d];\n", j, layout_.stride(j, 0));
    s_ += "      }\n";
    for (int j = 0; j < nops; ++j)
      s_ += fmt::format("      b{} += r * (kiln_i64)a.w[{}];\n", j, layout_.stride(j, 0));
    s_ += "    }\n";

    int32_t next_row_value = 0;  // row values are emitted in SSA order, between the passes
    for (size_t i = 0; i < k_.exprs.size(); ++i) {
      const Expr& e = k_.exprs[i];
      if (!expr_is_reduce(e.op)) continue;
      emit_row_values(next_row_value, static_cast<int32_t>(i));
      emit_pass(static_cast<int32_t>(i));
      next_row_value = static_cast<int32_t>(i) + 1;
    }
    emit_row_values(next_row_value, static_cast<int32_t>(k_.exprs.size()));
    emit_element_stores();
    emit_row_stores();
    s_ += "  }\n}\n";
  }

 private:
  static std::string v(int32_t id) { return fmt::format("v{}", id); }

  void emit_row_values(int32_t from, int32_t to) {
    for (int32_t i = from; i < to; ++i) {
      const Expr& e = k_.exprs[i];
      if (!row_[i] || expr_is_reduce(e.op)) continue;
      s_ += fmt::format("    const {} {} = {};\n", cuda_type(e.type), v(i),
                        render_cuda_expr(k_, e, layout_));
    }
  }

  // The element values that `roots` read (not through a row value), in SSA order.
  std::vector<int32_t> element_closure(const std::vector<int32_t>& roots) const {
    std::vector<uint8_t> need(k_.exprs.size(), 0);
    std::vector<int32_t> stack;
    for (int32_t r : roots)
      if (!row_[r]) stack.push_back(r);
    while (!stack.empty()) {
      const int32_t i = stack.back();
      stack.pop_back();
      if (need[i]) continue;
      need[i] = 1;
      const Expr& e = k_.exprs[i];
      for (int32_t o : {e.a, e.b, e.c})
        if (o >= 0 && !row_[o]) stack.push_back(o);
    }
    std::vector<int32_t> out;
    for (size_t i = 0; i < need.size(); ++i)
      if (need[i]) out.push_back(static_cast<int32_t>(i));
    return out;
  }

  // Operand offsets of element `i` of the row, then the element values `ids`.
  void emit_element(const std::vector<int32_t>& ids, const char* pad) {
    const int nops = k_.num_operands();
    for (int j = 0; j < nops; ++j) s_ += fmt::format("{}kiln_i64 o{} = b{};\n", pad, j, j);
    s_ += fmt::format("{}{{\n{}  kiln_i64 r = i;\n", pad, pad);
    s_ += fmt::format("{}  for (int d = rrank - 1; d > 0; --d) {{\n", pad);
    s_ += fmt::format("{}    const kiln_i64 size = (kiln_i64)a.w[{} + orank + d];\n", pad,
                      CudaArgLayout::kSizes);
    s_ += fmt::format(
        "{}    kiln_i64 q;\n{}    const kiln_i64 x = kiln_divmod(r, size, &q);\n{}    r = q;\n",
        pad, pad, pad);
    for (int j = 0; j < nops; ++j)
      s_ += fmt::format("{}    o{} += x * (kiln_i64)a.w[{} + orank + d];\n", pad, j,
                        layout_.stride(j, 0));
    s_ += fmt::format("{}  }}\n", pad);
    for (int j = 0; j < nops; ++j)
      s_ +=
          fmt::format("{}  o{} += r * (kiln_i64)a.w[{} + orank];\n", pad, j, layout_.stride(j, 0));
    s_ += fmt::format("{}}}\n", pad);
    for (int32_t id : ids)
      s_ += fmt::format("{}const {} {} = {};\n", pad, cuda_type(k_.exprs[id].type), v(id),
                        render_cuda_expr(k_, k_.exprs[id], layout_));
  }

  // One Reduce: each thread folds its lanes (render_reduce.h), then the tree over the lanes.
  void emit_pass(int32_t r) {
    const Expr& e = k_.exprs[r];
    const char* T = cuda_type(e.type);
    const std::string op = fmt::format("{}<{}>", reduce_struct(e.op), T);
    s_ += fmt::format("    // {} of %{}\n    {} kv{}[8];\n", expr_op_name(e.op), e.a, T, r);
    // Not unrolled: 8 copies of the prologue cost NVRTC 2-3 times as long, for nothing.
    s_ += "    _Pragma(\"unroll 1\") for (int lq = 0; lq < (warp ? 8 : 1); ++lq) {\n";
    s_ += fmt::format("      kiln_cascade<{}, {}> c;\n", op, T);
    s_ += "      for (kiln_i64 i = t + 32 * lq; i < row_n; i += 256) {\n";
    emit_element(element_closure({e.a}), "        ");
    s_ += fmt::format("        c.add({});\n", v(e.a));
    s_ += "      }\n";
    s_ += fmt::format("      kv{}[lq] = c.result();\n    }}\n", r);
    s_ += fmt::format(
        "    const {} {} = kiln_row_tree<{}, {}>(kv{}, row_n, t, warp, ({}*)kiln_sh);\n", T, v(r),
        op, T, r, T);
  }

  void store(int32_t j, const std::string& offset, const char* pad) {
    const int32_t id = k_.stores[j];
    if (k_.exprs[id].type == DType::Bool)
      s_ += fmt::format("{}*(unsigned char*)(p{} + {}) = {} ? 1 : 0;\n", pad, j, offset, v(id));
    else
      s_ += fmt::format("{}*({}*)(p{} + {}) = {};\n", pad, cuda_type(k_.exprs[id].type), j, offset,
                        v(id));
  }

  void emit_element_stores() {
    std::vector<int32_t> roots;
    for (int32_t j = 0; j < k_.num_outputs(); ++j)
      if (!row_[k_.stores[j]]) roots.push_back(k_.stores[j]);
    if (roots.empty()) return;
    s_ += "    for (kiln_i64 i = t; i < row_n; i += nt) {\n";
    emit_element(element_closure(roots), "      ");
    for (int32_t j = 0; j < k_.num_outputs(); ++j)
      if (!row_[k_.stores[j]]) store(j, fmt::format("o{}", j), "      ");
    s_ += "    }\n";
  }

  void emit_row_stores() {
    bool any = false;
    for (int32_t j = 0; j < k_.num_outputs(); ++j) any = any || row_[k_.stores[j]];
    if (!any) return;
    s_ += "    if (t == 0) {\n";
    for (int32_t j = 0; j < k_.num_outputs(); ++j)
      if (row_[k_.stores[j]]) store(j, fmt::format("b{}", j), "      ");
    s_ += "    }\n";
  }

  const LoopKernel& k_;
  std::string& s_;
  CudaArgLayout layout_;
  std::vector<uint8_t> row_;
};

}  // namespace

RenderedCuda render_cuda_row_kernel(const LoopKernel& k, const std::string& name) {
  // `i` is an element's index within its row here, not in the index space (render.h).
  KILN_CHECK(!k.uses_index(),
             "cuda row kernel: an expression reads the element index (not rendered)");
  RenderedCuda r;
  r.name = name;
  r.source = "/* kiln row kernel\n" + to_text(k) + "*/\n";
  r.source += cuda_prelude();
  r.source += kRowPrelude;
  RowKernelRenderer(k, r.source).render(name);
  return r;
}

}  // namespace kiln::jit::cuda

#include "jit/cuda/render_reduce.h"

#include <fmt/format.h>

#include <vector>

#include "jit/cuda/render_expr.h"
#include "jit/cuda/source_kernel.h"
#include "runtime/error.h"

namespace kiln::jit::cuda {

namespace {

// The row kernels' helpers (after the prelude): each Reduce's operator with its identity, one
// lane's fold (kiln_cascade) and the trees over the lanes (kiln_warp_tree, kiln_block_tree).
// render_reduce.h states the order they implement.
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
// One lane's pieces (each of 8 elements, folded left to right by the caller) combined by a
// binary counter (piece c merges with the stack while c is even), then the stack folded from its
// top down. 48 levels hold 2^48 pieces. Only a block's lanes (rows over 2048 elements) use it.
template <class Op, class T> struct kiln_cascade {
  T st[48];
  int top;
  kiln_u64 c;
  __device__ __forceinline__ kiln_cascade() : top(0), c(0) {}
  __device__ __forceinline__ void push(T s) {
    _Pragma("unroll 1") for (kiln_u64 m = ++c; !(m & 1); m >>= 1) s = Op::f(st[--top], s);
    st[top++] = s;
  }
  __device__ __forceinline__ T result() const {
    if (top == 0) return Op::id();
    T r = st[top - 1];
    _Pragma("unroll 1") for (int i = top - 2; i >= 0; --i) r = Op::f(st[i], r);
    return r;
  }
  // The stack folded onto `r`, the value of the lane's last, partial chunk (a split row).
  __device__ __forceinline__ T fold_onto(T r) const {
    _Pragma("unroll 1") for (int i = top - 1; i >= 0; --i) r = Op::f(st[i], r);
    return r;
  }
};
// The levels 16..1 of the tree over the lanes (warp shuffles; only lanes t + s < n hold elements).
template <class Op, class T>
static __device__ __forceinline__ T kiln_shuffle_tree(T x, kiln_i64 n, int t) {
#pragma unroll
  for (int s = 16; s >= 1; s >>= 1) {
    const T y = __shfl_down_sync(0xffffffffu, x, s);
    if (t + s < n) x = Op::f(x, y);
  }
  return x;
}
// The tree over the 256 lanes of a row of n elements held by a warp: v[4h + i] is lane
// 4t + i + 128h (so that a thread's lanes 4t .. 4t + 3 are consecutive elements: one pack).
// Level 128 within the thread, levels 64 .. 4 by shuffles (lane 4t + i meets 4(t + s) + i),
// levels 2 and 1 within thread 0. Inlined and unrolled, so that v stays in registers. Every
// thread of the warp gets the result.
template <class Op, class T>
static __device__ __forceinline__ T kiln_warp_tree(T (&v)[8], kiln_i64 n, int t) {
  if (n == 0) return Op::id();
#pragma unroll
  for (int i = 0; i < 4; ++i)
    if (4 * t + i + 128 < n) v[i] = Op::f(v[i], v[i + 4]);
#pragma unroll
  for (int s = 16; s >= 1; s >>= 1)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const T y = __shfl_down_sync(0xffffffffu, v[i], s);
      if (4 * (t + s) + i < n) v[i] = Op::f(v[i], y);
    }
  if (2 < n) v[0] = Op::f(v[0], v[2]);
  if (3 < n) v[1] = Op::f(v[1], v[3]);
  if (1 < n) v[0] = Op::f(v[0], v[1]);
  return __shfl_sync(0xffffffffu, v[0], 0);
}
// The tree over the 256 lanes of a row held by a block: x is lane t; `sh` has 257 values.
// Every thread of the block gets the result.
template <class Op, class T>
static __device__ __noinline__ T kiln_block_tree(T x, kiln_i64 n, int t, T* sh) {
  if (n == 0) return Op::id();
  for (int s = 128; s >= 32; s >>= 1) {
    sh[t] = x;
    __syncthreads();
    if (t < s && t + s < n) x = Op::f(x, sh[t + s]);
    __syncthreads();
  }
  x = kiln_shuffle_tree<Op, T>(x, n, t);
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
      : k_(k),
        s_(s),
        layout_{k.num_operands(), k.num_params()},
        row_(k.row_values()),
        splits_(row_kernel_splits(k)) {}

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
    if (!splits_) {
      s_ +=
          "  for (kiln_i64 row = (kiln_i64)blockIdx.x * rpb + threadIdx.x / nt; row < rows;\n"
          "       row += (kiln_i64)gridDim.x * rpb) {\n";
    } else {  // render_reduce.h, "Split": phase 1 walks (row, chunk) items
      s_ += fmt::format(
          "  char* const scratch = (char*)a.w[{}];\n"
          "  const kiln_i64 chunk_n = (kiln_i64)a.w[{}];\n"
          "  const int phase = (int)a.w[{}];\n"
          "  const kiln_i64 nchunks = phase ? (row_n + chunk_n - 1) / chunk_n : 1;\n"
          "  const kiln_i64 items = phase == 1 ? rows * nchunks : rows;\n"
          "  for (kiln_i64 it = (kiln_i64)blockIdx.x * rpb + threadIdx.x / nt; it < items;\n"
          "       it += (kiln_i64)gridDim.x * rpb) {{\n"
          "    const kiln_i64 row = phase == 1 ? it / nchunks : it;\n"
          "    const kiln_i64 chunk = phase == 1 ? it - row * nchunks : 0;\n",
          layout_.split(CudaArgLayout::kSplitScratch), layout_.split(CudaArgLayout::kSplitChunk),
          layout_.split(CudaArgLayout::kSplitPhase));
    }
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
    // Whether operand j's row is contiguous from an address aligned for kiln_pack4: a group of
    // four consecutive elements then moves as one pack (emit_groups).
    for (int j = 0; j < nops; ++j) {
      const char* st = cuda_storage_type(k_.operand_dtype(j));
      s_ += fmt::format(
          "    const bool vec{0} = rrank == 1 && (kiln_i64)a.w[{1} + orank] == sizeof({2}) &&\n"
          "                      (kiln_u64)(p{0} + b{0}) % alignof(kiln_pack4<{2}>) == 0;\n"
          "    (void)vec{0};\n",
          j, layout_.stride(j, 0), st);
    }

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

  // The row values that the element values `ids` read.
  std::vector<int32_t> row_operands(const std::vector<int32_t>& ids) const {
    std::vector<uint8_t> need(k_.exprs.size(), 0);
    for (int32_t id : ids) {
      const Expr& e = k_.exprs[id];
      for (int32_t o : {e.a, e.b, e.c})
        if (o >= 0 && row_[o]) need[o] = 1;
    }
    std::vector<int32_t> out;
    for (size_t i = 0; i < need.size(); ++i)
      if (need[i]) out.push_back(static_cast<int32_t>(i));
    return out;
  }

  // Element u's alias v<id>_u of each row value in `row_ids` (the suffixed names its values read).
  void emit_row_aliases(const std::vector<int32_t>& row_ids, const std::string& sfx,
                        const char* pad) {
    for (int32_t id : row_ids)
      s_ += fmt::format("{}const {} {}{} = {};\n", pad, cuda_type(k_.exprs[id].type), v(id), sfx,
                        v(id));
  }

  // Element u's values of `ids` but the Loads (loaded before), suffixed `sfx`.
  void emit_element_values(const std::vector<int32_t>& ids, const std::string& sfx,
                           const char* pad) {
    for (int32_t id : ids) {
      const Expr& e = k_.exprs[id];
      if (e.op == ExprOp::Load) continue;
      s_ += fmt::format("{}const {} {}{} = {};\n", pad, cuda_type(e.type), v(id), sfx,
                        render_cuda_expr(k_, e, layout_, sfx));
    }
  }

  // kUnroll elements of the row at once, element u at index `index(u)` where `in_u` holds: first
  // every element's operand offsets and loads (so that all the loads are in flight together),
  // then each element's values (names suffixed _u), then `use(u)` for each element in range.
  template <class Index, class Use>
  void emit_unrolled(const std::vector<int32_t>& ids, const char* pad, Index index, Use use) {
    const int nops = k_.num_operands();
    for (int u = 0; u < kUnroll; ++u) {
      const std::string x = fmt::format("_{}", u);
      s_ += fmt::format("{}const kiln_i64 i{} = {};\n{}const bool in{} = i{} < row_n;\n", pad, x,
                        index(u), pad, x, x);
      std::vector<uint8_t> loaded(static_cast<size_t>(nops), 0);
      for (int32_t id : ids)
        if (k_.exprs[id].op == ExprOp::Load) loaded[k_.num_outputs() + k_.exprs[id].index] = 1;
      for (int j = 0; j < nops; ++j)
        if (loaded[j]) emit_offset(j, u, pad);
      for (int32_t id : ids) {
        const Expr& e = k_.exprs[id];
        if (e.op != ExprOp::Load) continue;
        s_ += fmt::format("{}const {} {}{} = in{} ? {} : ({})0;\n", pad, cuda_type(e.type), v(id),
                          x, x, render_cuda_expr(k_, e, layout_, x), cuda_type(e.type));
      }
      emit_row_aliases(row_operands(ids), x, pad);
    }
    for (int u = 0; u < kUnroll; ++u) {
      const std::string x = fmt::format("_{}", u);
      s_ += fmt::format("{}if (in{}) {{\n", pad, x);
      emit_element_values(ids, x, (std::string(pad) + "  ").c_str());
      use(u, x);
      s_ += fmt::format("{}}}\n", pad);
    }
  }

  // Operand j's offset o<j>_u of element u at index i_u (the row's dims split over the sizes).
  void emit_offset(int j, int u, const char* pad) {
    s_ += fmt::format("{}kiln_i64 o{}_{} = b{};\n", pad, j, u, j);
    s_ += fmt::format("{}{{\n{}  kiln_i64 r = i_{};\n", pad, pad, u);
    s_ += fmt::format("{}  for (int d = rrank - 1; d > 0; --d) {{\n", pad);
    s_ += fmt::format("{}    const kiln_i64 size = (kiln_i64)a.w[{} + orank + d];\n", pad,
                      CudaArgLayout::kSizes);
    s_ += fmt::format(
        "{}    kiln_i64 q;\n{}    const kiln_i64 x = kiln_divmod(r, size, &q);\n{}    r = q;\n",
        pad, pad, pad);
    s_ += fmt::format("{}    o{}_{} += x * (kiln_i64)a.w[{} + orank + d];\n", pad, j, u,
                      layout_.stride(j, 0));
    s_ += fmt::format("{}  }}\n", pad);
    s_ += fmt::format("{}  o{}_{} += r * (kiln_i64)a.w[{} + orank];\n", pad, j, u,
                      layout_.stride(j, 0));
    s_ += fmt::format("{}}}\n", pad);
  }

  // Eight elements in two groups of four consecutive ones, element u = 4h + v at index
  // `group(h)` + v: first every element's offsets and loads (an operand whose row is contiguous
  // and aligned, vec<j>, loads a whole group as one pack), so that all the loads are in flight
  // together; then each element in range computes its values (suffixed _u) and `use(u)`. With
  // `store`, the element outputs are gathered per group and stored as one pack where they can be.
  template <class Group, class Use>
  void emit_groups(const std::vector<int32_t>& ids, const char* pad, int groups, Group group,
                   Use use, bool store) {
    const int nout = k_.num_outputs();
    const std::vector<int32_t> row_ids = row_operands(ids);
    for (int h = 0; h < groups; ++h) {
      s_ += fmt::format("{}const kiln_i64 g{} = {};\n", pad, h, group(h));
      s_ += fmt::format("{}const bool full{} = g{} + 3 < row_n;\n", pad, h, h);
      for (int vv = 0; vv < 4; ++vv) {
        const int u = 4 * h + vv;
        s_ += fmt::format("{}const kiln_i64 i_{} = g{} + {};\n{}const bool in_{} = i_{} < row_n;\n",
                          pad, u, h, vv, pad, u, u);
      }
      for (int32_t id : ids) {
        const Expr& e = k_.exprs[id];
        if (e.op != ExprOp::Load) continue;
        const int j = nout + e.index;
        const char* T = cuda_type(e.type);
        const char* S = cuda_storage_type(e.type);
        const char* tail = e.type == DType::Bool ? " != 0" : "";
        for (int vv = 0; vv < 4; ++vv)
          s_ += fmt::format("{}{} {}_{};\n", pad, T, v(id), 4 * h + vv);
        s_ += fmt::format("{}if (vec{} && full{}) {{\n", pad, j, h);
        s_ += fmt::format(
            "{}  const kiln_pack4<{}> P = *(const kiln_pack4<{}>*)(p{} + b{} + g{} * "
            "sizeof({}));\n",
            pad, S, S, j, j, h, S);
        for (int vv = 0; vv < 4; ++vv)
          s_ += fmt::format("{}  {}_{} = P.v[{}]{};\n", pad, v(id), 4 * h + vv, vv, tail);
        s_ += fmt::format("{}}} else {{\n", pad);
        for (int vv = 0; vv < 4; ++vv) {
          const int u = 4 * h + vv;
          const std::string sfx = fmt::format("_{}", u);
          s_ += fmt::format("{}  if (in{}) {{\n", pad, sfx);
          emit_offset(j, u, (std::string(pad) + "    ").c_str());
          s_ += fmt::format("{}    {}{} = {};\n{}  }} else {{\n{}    {}{} = ({})0;\n{}  }}\n", pad,
                            v(id), sfx, render_cuda_expr(k_, e, layout_, sfx), pad, pad, v(id), sfx,
                            T, pad);
        }
        s_ += fmt::format("{}}}\n", pad);
      }
      for (int vv = 0; vv < 4; ++vv) emit_row_aliases(row_ids, fmt::format("_{}", 4 * h + vv), pad);
    }
    for (int h = 0; h < groups; ++h) {
      if (store)
        for (int32_t j = 0; j < nout; ++j)
          if (!row_[k_.stores[j]])
            s_ += fmt::format("{}kiln_pack4<{}> S{}_{};\n", pad,
                              cuda_storage_type(k_.output_dtype(j)), j, h);
      for (int vv = 0; vv < 4; ++vv) {
        const int u = 4 * h + vv;
        const std::string x = fmt::format("_{}", u);
        s_ += fmt::format("{}if (in{}) {{\n", pad, x);
        emit_element_values(ids, x, (std::string(pad) + "  ").c_str());
        if (store)
          for (int32_t j = 0; j < nout; ++j)
            if (!row_[k_.stores[j]])
              s_ += fmt::format("{}  S{}_{}.v[{}] = {}{}{};\n", pad, j, h, vv, v(k_.stores[j]), x,
                                k_.exprs[k_.stores[j]].type == DType::Bool ? " ? 1 : 0" : "");
        use(u, x);
        s_ += fmt::format("{}}}\n", pad);
      }
      if (!store) continue;
      for (int32_t j = 0; j < nout; ++j) {
        if (row_[k_.stores[j]]) continue;
        const char* S = cuda_storage_type(k_.output_dtype(j));
        s_ += fmt::format("{}if (vec{} && full{}) {{\n", pad, j, h);
        s_ += fmt::format("{}  *(kiln_pack4<{}>*)(p{} + b{} + g{} * sizeof({})) = S{}_{};\n", pad,
                          S, j, j, h, S, j, h);
        s_ += fmt::format("{}}} else {{\n", pad);
        for (int vv = 0; vv < 4; ++vv) {
          const int u = 4 * h + vv;
          s_ += fmt::format("{}  if (in_{}) {{\n", pad, u);
          emit_offset(j, u, (std::string(pad) + "    ").c_str());
          s_ += fmt::format("{}    *({}*)(p{} + o{}_{}) = S{}_{}.v[{}];\n{}  }}\n", pad, S, j, j, u,
                            j, h, vv, pad);
        }
        s_ += fmt::format("{}}}\n", pad);
      }
    }
  }

  // One Reduce: each thread folds its lanes (render_reduce.h), then the tree over the lanes.
  // A warp's thread holds lanes 4t + i + 128h (kv[4h + i], in registers), each of at most 8
  // elements (one piece): a trip takes the elements m + 4t + i + 128h of its 8 lanes at once, as
  // two packs where the row is contiguous. A block's thread holds lane t: a trip takes its piece
  // of 8 at once and pushes it on the cascade.
  void emit_pass(int32_t r) {
    const Expr& e = k_.exprs[r];
    const char* T = cuda_type(e.type);
    const std::string op = fmt::format("{}<{}>", reduce_struct(e.op), T);
    const std::vector<int32_t> ids = element_closure({e.a});
    const std::string x = v(e.a);
    s_ += fmt::format("    // {} of %{}\n    {} {};\n    if (warp) {{\n", expr_op_name(e.op), e.a,
                      T, v(r));
    s_ += fmt::format(
        "      {} kv[8];\n#pragma unroll\n      for (int q = 0; q < 8; ++q) kv[q] = "
        "{}::id();\n",
        T, op);
    s_ += fmt::format("      _Pragma(\"unroll 1\") for (kiln_i64 m = 0; m < row_n; m += {}) {{\n",
                      128 * kGroups);
    emit_groups(
        ids, "        ", kGroups,
        [](int h) { return fmt::format("m + {} + 4 * t", 256 * (h / 2) + 128 * (h % 2)); },
        [&](int u, const std::string& sfx) {
          s_ += fmt::format("          kv[{0}] = {4} ? {1}{2} : {3}::f(kv[{0}], {1}{2});\n", u % 8,
                            x, sfx, op, u < 8 ? "m == 0" : "false");
        },
        false);
    s_ += "      }\n";
    s_ += fmt::format("      {} = kiln_warp_tree<{}, {}>(kv, row_n, t);\n", v(r), op, T);
    s_ += "    } else {\n";
    s_ += fmt::format("      kiln_cascade<{}, {}> c;\n", op, T);
    if (splits_) {
      // Phase 2: each lane's full chunks through the cascade, folded onto its partial chunk.
      s_ += fmt::format(
          "      {0}* const sc = ({0}*)scratch + row * nchunks * 256 + t;\n"
          "      if (phase == 2) {{\n"
          "        const kiln_i64 full = row_n / chunk_n;\n"
          "        kiln_i64 b = 0;\n"
          "        _Pragma(\"unroll 1\") for (; b + 8 <= full; b += 8) {{  // 8 loads in flight\n"
          "          {0} q[8];\n"
          "#pragma unroll\n"
          "          for (int u = 0; u < 8; ++u) q[u] = sc[(b + u) * 256];\n"
          "#pragma unroll\n"
          "          for (int u = 0; u < 8; ++u) c.push(q[u]);\n"
          "        }}\n"
          "        _Pragma(\"unroll 1\") for (; b < full; ++b) c.push(sc[b * 256]);\n"
          "        {1} = kiln_block_tree<{2}, {0}>(full * chunk_n + t < row_n ? "
          "c.fold_onto(sc[full * 256]) : c.result(), row_n, t, ({0}*)kiln_sh);\n"
          "      }} else {{\n",
          T, v(r), op);
      s_ +=
          "      const kiln_i64 m_end = phase == 1 ? kiln_min(row_n, (chunk + 1) * chunk_n) : "
          "row_n;\n"
          "      _Pragma(\"unroll 1\") for (kiln_i64 m = t + chunk * chunk_n; m < m_end; m += "
          "2048) {\n";
    } else {
      s_ += "      _Pragma(\"unroll 1\") for (kiln_i64 m = t; m < row_n; m += 2048) {\n";
    }
    s_ += fmt::format("        {} piece;\n", T);
    emit_unrolled(
        ids, "        ", [](int u) { return fmt::format("m + {}", 256 * u); },
        [&](int u, const std::string& sfx) {
          if (u == 0)
            s_ += fmt::format("          piece = {}{};\n", x, sfx);
          else
            s_ += fmt::format("          piece = {}::f(piece, {}{});\n", op, x, sfx);
        });
    s_ += "        c.push(piece);\n      }\n";
    if (splits_)
      s_ +=
          "      if (phase == 1) {\n        sc[chunk * 256] = c.result();\n        continue;\n     "
          " }\n";
    s_ += fmt::format("      {} = kiln_block_tree<{}, {}>(c.result(), row_n, t, ({}*)kiln_sh);\n",
                      v(r), op, T, T);
    if (splits_) s_ += "      }\n";
    s_ += "    }\n";
  }

  void store(int32_t j, const std::string& offset, const std::string& value, const char* pad) {
    const int32_t id = k_.stores[j];
    if (k_.exprs[id].type == DType::Bool)
      s_ += fmt::format("{}*(unsigned char*)(p{} + {}) = {} ? 1 : 0;\n", pad, j, offset, value);
    else
      s_ += fmt::format("{}*({}*)(p{} + {}) = {};\n", pad, cuda_type(k_.exprs[id].type), j, offset,
                        value);
  }

  // The element stores: each thread its elements t, t + nt, ..., kUnroll of them per trip.
  void emit_element_stores() {
    std::vector<int32_t> roots;
    for (int32_t j = 0; j < k_.num_outputs(); ++j)
      if (!row_[k_.stores[j]]) roots.push_back(k_.stores[j]);
    if (roots.empty()) return;
    s_ +=
        fmt::format("    _Pragma(\"unroll 1\") for (kiln_i64 m = 0; m < row_n; m += {} * nt) {{\n",
                    4 * kGroups);
    emit_groups(
        element_closure(roots), "      ", kGroups,
        [](int h) { return fmt::format("m + {} * nt + 4 * t", 4 * h); },
        [](int, const std::string&) {}, true);
    s_ += "    }\n";
  }

  void emit_row_stores() {
    bool any = false;
    for (int32_t j = 0; j < k_.num_outputs(); ++j) any = any || row_[k_.stores[j]];
    if (!any) return;
    s_ += "    if (t == 0) {\n";
    for (int32_t j = 0; j < k_.num_outputs(); ++j)
      if (row_[k_.stores[j]]) store(j, fmt::format("b{}", j), v(k_.stores[j]), "      ");
    s_ += "    }\n";
  }

  // Elements per thread and loop trip: a warp's 8 lanes, a block's pieces of 8.
  static constexpr int kUnroll = 8;
  // Groups of four elements per thread and trip in a warp's passes and in the element stores
  // (measured on an H100, 8192x1024 float32: 2 groups beat 4, which spill registers).
  static constexpr int kGroups = 2;
  const LoopKernel& k_;
  std::string& s_;
  CudaArgLayout layout_;
  std::vector<uint8_t> row_;
  bool splits_;
};

}  // namespace

bool row_kernel_splits(const LoopKernel& k) {
  int reduces = 0;
  for (const Expr& e : k.exprs) reduces += expr_is_reduce(e.op) ? 1 : 0;
  return reduces == 1;
}

DType row_kernel_reduce_type(const LoopKernel& k) {
  for (const Expr& e : k.exprs)
    if (expr_is_reduce(e.op)) return e.type;
  fail("cuda row kernel: no Reduce expression");
}

RenderedCuda render_cuda_row_kernel(const LoopKernel& k, const std::string& name) {
  // `i` is an element's index within its row here, not in the index space (render.h).
  KILN_CHECK(!k.uses_index(),
             "cuda row kernel: an expression reads the element index (not rendered)");
  for (const Expr& e : k.exprs)  // the CPU planner's alone (loop_kernel.h)
    KILN_CHECK(!(e.op == ExprOp::Load && e.ivalue != 0),
               "cuda row kernel: a row load (not rendered)");
  RenderedCuda r;
  r.name = name;
  r.source = "/* kiln row kernel\n" + to_text(k) + "*/\n";
  r.source += cuda_prelude();
  r.source += kRowPrelude;
  RowKernelRenderer(k, r.source).render(name);
  return r;
}

}  // namespace kiln::jit::cuda

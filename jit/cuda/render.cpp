#include "jit/cuda/render.h"

#include <fmt/format.h>

#include <array>
#include <bit>

#include "jit/cuda/philox_cuda.h"
#include "jit/cuda/prelude_base.h"
#include "jit/cuda/render_expr.h"
#include "jit/cuda/render_reduce.h"
#include "jit/cuda/source_kernel.h"
#include "runtime/error.h"

namespace kiln::jit::cuda {

namespace {

// Helpers of every kernel: wrapping integer arithmetic (in the unsigned type, as the eager
// functors), NaN-propagating maximum/minimum, and the x86 float -> integer conversions.
constexpr const char* kPrelude =
    R"(KILN_INLINE int kiln_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
KILN_INLINE int kiln_sub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
KILN_INLINE int kiln_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
KILN_INLINE int kiln_neg(int a) { return (int)(0u - (unsigned)a); }
KILN_INLINE kiln_i64 kiln_add(kiln_i64 a, kiln_i64 b) { return (kiln_i64)((kiln_u64)a + (kiln_u64)b); }
KILN_INLINE kiln_i64 kiln_sub(kiln_i64 a, kiln_i64 b) { return (kiln_i64)((kiln_u64)a - (kiln_u64)b); }
KILN_INLINE kiln_i64 kiln_mul(kiln_i64 a, kiln_i64 b) { return (kiln_i64)((kiln_u64)a * (kiln_u64)b); }
KILN_INLINE kiln_i64 kiln_neg(kiln_i64 a) { return (kiln_i64)(0ull - (kiln_u64)a); }
KILN_INLINE float kiln_add(float a, float b) { return a + b; }
KILN_INLINE float kiln_sub(float a, float b) { return a - b; }
KILN_INLINE float kiln_mul(float a, float b) { return a * b; }
KILN_INLINE float kiln_neg(float a) { return -a; }
KILN_INLINE double kiln_add(double a, double b) { return a + b; }
KILN_INLINE double kiln_sub(double a, double b) { return a - b; }
KILN_INLINE double kiln_mul(double a, double b) { return a * b; }
KILN_INLINE double kiln_neg(double a) { return -a; }
template <class T> KILN_INLINE T kiln_max(T a, T b) { return a < b ? b : a; }
template <class T> KILN_INLINE T kiln_min(T a, T b) { return b < a ? b : a; }
KILN_INLINE float kiln_max(float a, float b) { return a != a ? a : b != b ? b : a < b ? b : a; }
KILN_INLINE float kiln_min(float a, float b) { return a != a ? a : b != b ? b : b < a ? b : a; }
KILN_INLINE double kiln_max(double a, double b) { return a != a ? a : b != b ? b : a < b ? b : a; }
KILN_INLINE double kiln_min(double a, double b) { return a != a ? a : b != b ? b : b < a ? b : a; }
template <class T> KILN_INLINE T kiln_abs(T x) { return x < T(0) ? kiln_neg(x) : x; }
template <class T> KILN_INLINE T kiln_relu(T x) { return x < T(0) ? T(0) : x; }
template <class T> KILN_INLINE T kiln_sign(T x) { return T(0) < x ? T(1) : x < T(0) ? T(-1) : T(0); }
// int_pow of ops/cpu/pointwise_functors.h: squaring with wrapping products; a negative exponent
// gives 1/b^|e| truncated.
template <class T> KILN_INLINE T kiln_ipow(T b, T e) {
  if (e < T(0)) return b == T(1) ? T(1) : (b == T(-1) ? ((e & T(1)) ? T(-1) : T(1)) : T(0));
  T r = T(1);
  while (e) {
    if (e & T(1)) r = kiln_mul(r, b);
    e >>= 1;
    if (e) b = kiln_mul(b, b);
  }
  return r;
}
// Four consecutive elements, aligned so that one (or, for 8-byte types, two) 16-byte access
// moves them: the dense loop's vector loads and stores.
template <class T> struct alignas(4 * sizeof(T) < 16 ? 4 * sizeof(T) : 16) kiln_pack4 { T v[4]; };
KILN_INLINE int kiln_to_i32(double x) {
  return x > -2147483649.0 && x < 2147483648.0 ? (int)x : (int)0x80000000u;
}
KILN_INLINE kiln_i64 kiln_to_i64(double x) {
  return x >= -9223372036854775808.0 && x < 9223372036854775808.0 ? (kiln_i64)x
                                                                   : (kiln_i64)0x8000000000000000ull;
}
)";

}  // namespace

const char* cuda_prelude() {
  static const std::string prelude = std::string(kCudaPreludeBase) + kPrelude;
  return prelude.c_str();
}

const char* cuda_type(DType t) {
  switch (t) {
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
    case DType::Int32:
      return "int";
    case DType::Int64:
      return "kiln_i64";
    default:
      return "bool";
  }
}

namespace {

const char* ctype(DType t) { return cuda_type(t); }

std::string v(int32_t id) { return fmt::format("v{}", id); }

std::string float_const(double value, DType t) {
  if (t == DType::Float32)
    return fmt::format("__int_as_float((int)0x{:08x}u)",
                       std::bit_cast<uint32_t>(static_cast<float>(value)));
  return fmt::format("__longlong_as_double((kiln_i64)0x{:016x}ull)",
                     std::bit_cast<uint64_t>(value));
}

std::string param_expr(DType t, const std::string& word) {
  switch (t) {
    case DType::Float32:
      return fmt::format("__int_as_float((int)(unsigned){})", word);
    case DType::Float64:
      return fmt::format("__longlong_as_double((kiln_i64){})", word);
    case DType::Int32:
      return fmt::format("(int)(unsigned){}", word);
    default:
      return fmt::format("(kiln_i64){}", word);
  }
}

std::string cast_expr(DType from, DType to, const std::string& x) {
  if (to == DType::Bool) return fmt::format("({} != 0)", x);
  if (from == DType::Bool) return fmt::format("({})({} ? 1 : 0)", ctype(to), x);
  if (is_floating(from) && !is_floating(to))
    return fmt::format("{}((double){})", to == DType::Int32 ? "kiln_to_i32" : "kiln_to_i64", x);
  if (from == DType::Int64 && to == DType::Int32)
    return fmt::format("(int)(unsigned)(kiln_u64){}", x);
  return fmt::format("({}){}", ctype(to), x);
}

// The CUDA math function for a float op: expf for Float32, exp for Float64.
std::string fn(const char* name, DType t, const std::string& x) {
  return fmt::format("{}{}({})", name, t == DType::Float32 ? "f" : "", x);
}

// The argument words of a RandUniform's four Philox params, from `first` on.
std::array<std::string, 4> rand_words(const CudaArgLayout& layout, int32_t first) {
  std::array<std::string, 4> w;
  for (int j = 0; j < 4; ++j)
    w[static_cast<size_t>(j)] = fmt::format("a.w[{}]", layout.param(first + j));
  return w;
}

// Expression e of an element whose variables carry the suffix `sfx` (the dense loop's u-th
// element: v3_1), over operands of the same element.
std::string render_expr(const LoopKernel& k, const Expr& e, const CudaArgLayout& layout,
                        const std::string& sfx) {
  const DType t = e.type;
  const std::string A = e.a >= 0 ? v(e.a) + sfx : "", B = e.b >= 0 ? v(e.b) + sfx : "";
  const std::string C = e.c >= 0 ? v(e.c) + sfx : "";
  const bool f32 = t == DType::Float32;
  const std::string one = f32 ? "1.0f" : "1.0", half = f32 ? "0.5f" : "0.5";
  switch (e.op) {
    case ExprOp::Const:
      if (is_floating(t)) return float_const(e.value, t);
      if (t == DType::Bool) return e.ivalue ? "true" : "false";
      if (t == DType::Int32) return fmt::format("(int)0x{:08x}u", static_cast<uint32_t>(e.ivalue));
      return fmt::format("(kiln_i64)0x{:016x}ull", static_cast<uint64_t>(e.ivalue));
    case ExprOp::Param:
      return param_expr(t, fmt::format("a.w[{}]", layout.param(e.index)));
    case ExprOp::RandUniform:  // i: the element's row-major index (the launcher never reorders)
      return render_rand_uniform(e, "i", rand_words(layout, e.index));
    case ExprOp::Neg:
      return fmt::format("kiln_neg({})", A);
    case ExprOp::Abs:
      return fmt::format("kiln_abs({})", A);
    case ExprOp::Sqrt:
      return fn("sqrt", t, A);
    case ExprOp::Rsqrt:
      return fmt::format("{} / {}", one, fn("sqrt", t, A));
    case ExprOp::Reciprocal:
      return fmt::format("{} / {}", one, A);
    case ExprOp::Square:
      return fmt::format("kiln_mul({}, {})", A, A);
    case ExprOp::Relu:
      return fmt::format("kiln_relu({})", A);
    case ExprOp::Sign:
      return fmt::format("kiln_sign({})", A);
    case ExprOp::Exp:
      return fn("exp", t, A);
    case ExprOp::Log:
      return fn("log", t, A);
    case ExprOp::Log1p:
      return fn("log1p", t, A);
    case ExprOp::Expm1:
      return fn("expm1", t, A);
    case ExprOp::Tanh:
      return fn("tanh", t, A);
    case ExprOp::Sin:
      return fn("sin", t, A);
    case ExprOp::Cos:
      return fn("cos", t, A);
    case ExprOp::Erf:
      return fn("erf", t, A);
    case ExprOp::Sigmoid:
      return fmt::format("{} / ({} + {})", one, one, fn("exp", t, "-" + A));
    case ExprOp::Silu:
      return fmt::format("{} / ({} + {})", A, one, fn("exp", t, "-" + A));
    case ExprOp::Gelu:  // x/2 (1 + erf(x / sqrt 2))
      return fmt::format("{} * {} * ({} + {})", half, A, one,
                         fn("erf", t, fmt::format("{} * {}", A, float_const(M_SQRT1_2, t))));
    case ExprOp::GeluTanh:  // x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      return fmt::format(
          "{} * {} * ({} + {})", half, A, one,
          fn("tanh", t,
             fmt::format("{} * ({} + {} * {} * {} * {})", float_const(0.7978845608028654, t), A,
                         float_const(0.044715, t), A, A, A)));
    case ExprOp::Add:
      return fmt::format("kiln_add({}, {})", A, B);
    case ExprOp::Sub:
      return fmt::format("kiln_sub({}, {})", A, B);
    case ExprOp::Mul:
      return fmt::format("kiln_mul({}, {})", A, B);
    case ExprOp::Div:
      return fmt::format("{} / {}", A, B);
    case ExprOp::Maximum:
      return fmt::format("kiln_max({}, {})", A, B);
    case ExprOp::Minimum:
      return fmt::format("kiln_min({}, {})", A, B);
    case ExprOp::Lt:
      return fmt::format("{} < {}", A, B);
    case ExprOp::Le:
      return fmt::format("{} <= {}", A, B);
    case ExprOp::Gt:
      return fmt::format("{} > {}", A, B);
    case ExprOp::Ge:
      return fmt::format("{} >= {}", A, B);
    case ExprOp::Eq:
      return fmt::format("{} == {}", A, B);
    case ExprOp::Ne:
      return fmt::format("{} != {}", A, B);
    case ExprOp::Select:
      return fmt::format("{} ? {} : {}", A, B, C);
    case ExprOp::Cast:
      return cast_expr(k.exprs[e.a].type, t, A);
    case ExprOp::Pow:  // floats: CUDA's pow (within the transcendental bound); integers exact
      return is_floating(t) ? fn("pow", t, A + ", " + B) : fmt::format("kiln_ipow({}, {})", A, B);
    case ExprOp::Floor:
      return fn("floor", t, A);
    case ExprOp::Ceil:
      return fn("ceil", t, A);
    case ExprOp::Round:  // rint: to nearest, ties to even (the default rounding mode)
      return fn("rint", t, A);
    case ExprOp::And:
      return fmt::format("{} && {}", A, B);
    case ExprOp::Or:
      return fmt::format("{} || {}", A, B);
    case ExprOp::Not:
      return fmt::format("!{}", A);
    case ExprOp::RowSize:  // row kernels: the row's element count
      return fmt::format("({})(row_n + (kiln_i64){})", ctype(t), e.ivalue);
    default:
      fail("cuda kernel: no rendering for expression op {}", expr_op_name(e.op));
  }
}

// The statements computing every expression but the Loads, for one element whose variables
// carry the suffix `sfx` (v<id><sfx>), `indent` deep.
std::string render_values(const LoopKernel& k, const std::string& sfx, const char* indent) {
  const CudaArgLayout layout{k.num_operands(), k.num_params()};
  std::string s;
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr& e = k.exprs[i];
    if (e.op == ExprOp::Load) continue;
    s += fmt::format("{}const {} {}{} = {};\n", indent, ctype(e.type), v(static_cast<int32_t>(i)),
                     sfx, render_expr(k, e, layout, sfx));
  }
  return s;
}

// One element's loads: each Load expression read at its operand's offset o<j><sfx>. Rendered apart
// from the values so that the dense loop can issue the loads of several elements first.
std::string render_loads(const LoopKernel& k, const std::string& sfx, const char* indent) {
  std::string s;
  for (size_t i = 0; i < k.exprs.size(); ++i) {
    const Expr& e = k.exprs[i];
    if (e.op != ExprOp::Load) continue;
    const int j = k.num_outputs() + e.index;
    const std::string at = fmt::format("(p{} + o{}{})", j, j, sfx);
    s += fmt::format("{}const {} {}{} = ", indent, ctype(e.type), v(static_cast<int32_t>(i)), sfx);
    s += e.type == DType::Bool ? fmt::format("*(const unsigned char*){} != 0;\n", at)
                               : fmt::format("*(const {}*){};\n", ctype(e.type), at);
  }
  return s;
}

// One element's values and stores (its loads rendered before).
std::string render_body(const LoopKernel& k, const std::string& sfx, const char* indent) {
  std::string s = render_values(k, sfx, indent);
  for (int32_t j = 0; j < k.num_outputs(); ++j) {
    const int32_t id = k.stores[j];
    if (k.exprs[id].type == DType::Bool)
      s += fmt::format("{}*(unsigned char*)(p{} + o{}{}) = {}{} ? 1 : 0;\n", indent, j, j, sfx,
                       v(id), sfx);
    else
      s += fmt::format("{}*({}*)(p{} + o{}{}) = {}{};\n", indent, ctype(k.exprs[id].type), j, j,
                       sfx, v(id), sfx);
  }
  return s;
}

// The vector form, for launches the launcher flags with CudaArgLayout::kVecFlag: each thread
// computes four consecutive elements [4g, 4g + 4), moving each operand's four as one pack (an
// input broadcast along the inner dim: one load). Rank 1 (`rank2` false): every output and every
// input that is not broadcast is contiguous and aligned for kiln_pack4; the last n % 4 elements
// go to the scalar dense loop. Rank 2 (rows of `cols` elements, cols % 4 == 0, n < 2^31): every
// operand's inner stride is its item size or 0 (an input only), its rows start aligned; group g
// is row g / (cols / 4): a [rows, 1] or [cols] operand of a broadcast binary op takes this form.
std::string render_vector_loop(const LoopKernel& k, bool rank2) {
  const int nout = k.num_outputs(), nops = k.num_operands();
  std::string s;
  if (rank2) {
    s += "    const int cols4 = (int)(a.w[" + std::to_string(CudaArgLayout::kSizes + 1) +
         "] / 4), groups = (int)(n / 4);\n";
  } else {
    s += "    if (vec) {\n      const int groups = last / 4;\n";
  }
  s += "      for (int g = (int)(blockIdx.x * blockDim.x + threadIdx.x); g < groups;\n"
       "           g += (int)(gridDim.x * blockDim.x)) {\n";
  if (rank2) {
    s += "        const int row = g / cols4, c = g - row * cols4;\n";
    for (int j = 0; j < nops; ++j)
      s += fmt::format("        const char* const q{0} = p{0} + (kiln_i64)row * s{0}o;\n", j);
  } else {
    s += "        const int c = g;\n";
    for (int j = 0; j < nops; ++j) s += fmt::format("        const char* const q{0} = p{0};\n", j);
  }
  for (int32_t in = 0; in < k.num_inputs(); ++in) {
    const int j = nout + in;
    s += fmt::format(
        "        kiln_pack4<{0}> L{1};\n"
        "        if (s{1} == 0) {{\n"
        "          const {0} x = *(const {0}*)q{1};\n"
        "          L{1}.v[0] = L{1}.v[1] = L{1}.v[2] = L{1}.v[3] = x;\n"
        "        }} else {{\n"
        "          L{1} = ((const kiln_pack4<{0}>*)q{1})[c];\n"
        "        }}\n",
        cuda_storage_type(k.inputs[in]), j);
  }
  for (int32_t j = 0; j < nout; ++j)
    s += fmt::format("        kiln_pack4<{}> S{};\n", cuda_storage_type(k.output_dtype(j)), j);
  for (int u = 0; u < 4; ++u) {
    const std::string sfx = fmt::format("_{}", u);
    s += fmt::format(
        "        {{\n          const kiln_i64 i = 4 * (kiln_i64)g + {};\n          (void)i;\n", u);
    for (size_t e = 0; e < k.exprs.size(); ++e) {
      const Expr& x = k.exprs[e];
      if (x.op != ExprOp::Load) continue;
      s += fmt::format("          const {} {}{} = L{}.v[{}]{};\n", ctype(x.type),
                       v(static_cast<int32_t>(e)), sfx, nout + x.index, u,
                       x.type == DType::Bool ? " != 0" : "");
    }
    s += render_values(k, sfx, "          ");
    for (int32_t j = 0; j < nout; ++j) {
      const int32_t id = k.stores[j];
      s += fmt::format("          S{}.v[{}] = {}{}{};\n", j, u, v(id), sfx,
                       k.exprs[id].type == DType::Bool ? " ? 1 : 0" : "");
    }
    s += "        }\n";
  }
  for (int32_t j = 0; j < nout; ++j)
    s += fmt::format("        ((kiln_pack4<{}>*)q{})[c] = S{};\n",
                     cuda_storage_type(k.output_dtype(j)), j, j);
  s += rank2 ? "      }\n" : "      }\n      first = groups * 4;\n    }\n";
  return s;
}

}  // namespace

std::string render_cuda_expr(const LoopKernel& k, const Expr& e, const CudaArgLayout& layout,
                             const std::string& sfx) {
  if (e.op != ExprOp::Load) return render_expr(k, e, layout, sfx);
  const int j = k.num_outputs() + e.index;
  if (e.type == DType::Bool)
    return fmt::format("(*(const unsigned char*)(p{} + o{}{}) != 0)", j, j, sfx);
  return fmt::format("*(const {}*)(p{} + o{}{})", ctype(e.type), j, j, sfx);
}

RenderedCuda render_cuda_kernel(const LoopKernel& k, const std::string& name) {
  k.verify();
  if (k.has_reduce()) return render_cuda_row_kernel(k, name);
  const CudaArgLayout layout{k.num_operands(), k.num_params()};
  RenderedCuda r;
  r.name = name;
  std::string& s = r.source;
  s += "/* kiln loop kernel\n" + to_text(k) + "*/\n";
  s += cuda_prelude();
  if (k.uses_index()) s += philox_cuda_source();
  s += fmt::format("struct KilnArgs {{ kiln_u64 w[{}]; }};\n", layout.words());
  s += fmt::format(
      "extern \"C\" __global__ void __launch_bounds__(256) {}(const KilnArgs a) {{\n"
      "  const kiln_i64 n = (kiln_i64)a.w[{}];\n"
      "  const int rank = (int)(a.w[{}] & 0xff);\n"
      "  const bool vec = (a.w[{}] & 0x{:x}ull) != 0;\n",
      name, CudaArgLayout::kCount, CudaArgLayout::kRank, CudaArgLayout::kRank,
      CudaArgLayout::kVecFlag);
  const int nops = k.num_operands();
  for (int j = 0; j < nops; ++j)
    s += fmt::format("  char* const p{} = (char*)a.w[{}];\n", j, layout.ptr(j));
  // Rank 1 with a 32-bit count (every dense or broadcast launch, after the launcher coalesces):
  // the vector loop where the launch allows it, then each thread takes kCudaDenseUnroll elements
  // a block apart (every access coalesced) and issues all their loads before computing any, so
  // that enough bytes are in flight to reach the memory's bandwidth; 32-bit index math.
  s += "  if (rank == 1 && n <= 0x7fffffffLL) {\n";
  for (int j = 0; j < nops; ++j)
    s += fmt::format("    const kiln_i64 s{} = (kiln_i64)a.w[{}];\n", j, layout.stride(j, 0));
  s += "    const int last = (int)n;\n    int first = 0;\n";
  s += render_vector_loop(k, false);
  s += fmt::format("    const int per_block = (int)blockDim.x * {};\n", kCudaDenseUnroll);
  s += "    for (int base = first + (int)(blockIdx.x * blockDim.x * " +
       std::to_string(kCudaDenseUnroll) +
       ") + (int)threadIdx.x; base < last;\n"
       "         base += (int)gridDim.x * per_block) {\n";
  for (int u = 0; u < kCudaDenseUnroll; ++u) {
    const std::string sfx = fmt::format("_{}", u);
    s += fmt::format("      const int i{} = base + {} * (int)blockDim.x;\n", sfx, u);
    s += fmt::format("      const bool in{} = i{} < last;\n", sfx, sfx);
    for (int j = 0; j < nops; ++j)
      s += fmt::format("      const kiln_i64 o{}{} = in{} ? (kiln_i64)i{} * s{} : 0;\n", j, sfx,
                       sfx, sfx, j);
    s += render_loads(k, sfx, "      ");
  }
  for (int u = 0; u < kCudaDenseUnroll; ++u) {
    const std::string sfx = fmt::format("_{}", u);
    s += fmt::format("      if (in{}) {{\n        const kiln_i64 i = i{};\n        (void)i;\n", sfx,
                     sfx);
    s += render_body(k, sfx, "        ");
    s += "      }\n";
  }
  s += "    }\n    return;\n  }\n";
  // Rank 2 in the vector form (render_vector_loop).
  s += "  if (rank == 2 && vec) {\n";
  for (int j = 0; j < nops; ++j)
    s += fmt::format(
        "    const kiln_i64 s{0}o = (kiln_i64)a.w[{1}], s{0} = (kiln_i64)a.w[{2}];\n    "
        "(void)s{0};\n",
        j, layout.stride(j, 0), layout.stride(j, 1));
  s += render_vector_loop(k, true);
  s += "    return;\n  }\n";
  // Any rank: a grid-stride loop, each element's index split over the sizes.
  s += "  const kiln_i64 step = (kiln_i64)gridDim.x * blockDim.x;\n";
  s += "  for (kiln_i64 i = (kiln_i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {\n";
  s += "    kiln_i64 r = i;\n";
  for (int j = 0; j < nops; ++j) s += fmt::format("    kiln_i64 o{} = 0;\n", j);
  // Dims from the innermost outwards; dim 0 takes what is left (no division for rank 1).
  s += "    for (int d = rank - 1; d > 0; --d) {\n";
  s += fmt::format("      const kiln_i64 size = (kiln_i64)a.w[{} + d];\n", CudaArgLayout::kSizes);
  s += "      kiln_i64 q;\n      const kiln_i64 x = kiln_divmod(r, size, &q);\n      r = q;\n";
  for (int j = 0; j < nops; ++j)
    s += fmt::format("      o{} += x * (kiln_i64)a.w[{} + d];\n", j, layout.stride(j, 0));
  s += "    }\n";
  for (int j = 0; j < nops; ++j)
    s += fmt::format("    o{} += r * (kiln_i64)a.w[{}];\n", j, layout.stride(j, 0));
  s += render_loads(k, "", "    ");
  s += render_body(k, "", "    ");
  s += "  }\n}\n";
  return r;
}

}  // namespace kiln::jit::cuda

// Random-program fuzzer for the recorder (KILN_JIT=1): each seed generates a program of 10-40
// steps over a pool of tensors (pointwise ops with broadcasting and mixed dtypes, reductions,
// matmul, softmax, views, in-place writes through views, random ops, reads, dropped handles).
// The program is run eagerly and recorded, and everything observable must be bitwise equal: every
// value read, every kiln::Error (same step, same message) and every tensor left in the pool
// (dtype, geometry, bytes).
//
// A program is a list of step descriptors made from the seed before anything runs. A descriptor
// holds raw random numbers that the interpreter resolves against tensor metadata (which operand,
// which dim, which slice), and metadata is known at once in both modes, so both runs make the
// same choices without touching the generator.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "record_util.h"
#include "tracer/region_cache.h"

namespace kiln {
namespace {

using kiln::testing::JitRestore;

constexpr int kPool = 10;

enum class Kind : uint8_t {
  Leaf,
  Random,
  Seed,
  Dropout,
  Unary,
  Binary,
  BinaryScalar,
  Compare,
  Where,
  Reduce,
  Matmul,
  Softmax,
  View,
  InPlace,
  Read,
  Drop,
  Sync,
  Toggle,  // recorded runs switch recording off or back on (eager runs: nothing)
};

struct Step {
  Kind kind = Kind::Sync;
  uint8_t op = 0;         // which op of the kind
  uint32_t r[4] = {};     // raw choices, resolved against tensor metadata when the step runs
  int dst = 0;            // pool slot that receives the result
  Scalar s;               // scalar operand (drawn from the value stream)
  double lo = 0, hi = 0;  // clamp bounds
  Shape shape;            // Leaf / Random
  DType dtype = kFloat32;
  std::vector<double> data;  // Leaf values
};

struct Program {
  uint64_t seed = 0;        // structure seed, also the manual_seed of the run
  uint64_t value_seed = 0;  // scalars and data
  Shape canon;              // most tensors broadcast against it
  std::vector<Step> steps;
};

// ---------------------------------------------------------------- generation

// `structure` decides the ops and operands; `values` the scalars and data, so that two programs
// with the same structure seed and different value seeds record graphs that differ only in their
// scalars (the region cache then promotes them to runtime inputs).
class Generator {
 public:
  Generator(uint64_t structure_seed, uint64_t value_seed)
      : seed_(structure_seed),
        value_seed_(value_seed),
        st_(structure_seed),
        va_(value_seed ^ 0x9e3779b97f4a7c15ull) {}

  Program make() {
    Program p;
    p.seed = seed_;
    p.value_seed = value_seed_;
    const int rank = 1 + below(3);
    const bool square = below(2) == 0;
    const int64_t n = 2 + below(3);
    for (int d = 0; d < rank; ++d) p.canon.push_back(square ? n : 1 + below(5));
    // Some programs get one long dim, so that kernels run their vector loops and not only the
    // scalar tails (a layout-dependent result would show between the modes).
    if (below(4) == 0) p.canon[below(rank)] = 16 + below(25);
    // A few materialized leaves first, so that ops have operands.
    for (int i = 0; i < 3; ++i) p.steps.push_back(leaf(p.canon, i));
    const int count = 10 + below(31);
    for (int i = 0; i < count; ++i) p.steps.push_back(step(p.canon));
    return p;
  }

 private:
  int below(int n) { return static_cast<int>(st_() % static_cast<uint32_t>(n)); }
  uint32_t raw() { return static_cast<uint32_t>(st_()); }
  int vbelow(int n) { return static_cast<int>(va_() % static_cast<uint32_t>(n)); }

  Shape sub_shape(const Shape& canon) {
    Shape s;
    const int drop = below(4) == 0 ? below(static_cast<int>(canon.size()) + 1) : 0;
    for (size_t d = drop; d < canon.size(); ++d) s.push_back(below(4) == 0 ? 1 : canon[d]);
    return s;
  }

  DType pick_dtype() {
    const int x = below(20);
    if (x < 10) return kFloat32;
    if (x < 14) return kFloat64;
    if (x < 16) return kInt64;
    if (x < 18) return kInt32;
    return kBool;
  }

  double value(DType d) {
    if (d == kBool) return vbelow(2);
    if (d == kInt32 || d == kInt64) return vbelow(11) - 5;
    switch (vbelow(40)) {
      case 0:
        return 0.0;
      case 1:
        return -0.0;
      case 2:
        return std::numeric_limits<double>::quiet_NaN();
      case 3:
        return std::numeric_limits<double>::infinity();
      case 4:
        return -std::numeric_limits<double>::infinity();
      case 5:
        return 1e30;
      default:
        return (vbelow(97) - 48) / 8.0;
    }
  }

  Scalar scalar() {
    switch (below(6)) {
      case 0:
        return Scalar(vbelow(2) == 0);
      case 1:
      case 2:
        return Scalar(static_cast<int64_t>(vbelow(7) - 3));
      default:
        return Scalar((vbelow(33) - 16) / 4.0);
    }
  }

  Step leaf(const Shape& canon, int dst) {
    Step s;
    s.kind = Kind::Leaf;
    s.shape = sub_shape(canon);
    s.dtype = pick_dtype();
    s.dst = dst;
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    for (int64_t i = 0; i < n; ++i) s.data.push_back(value(s.dtype));
    return s;
  }

  Step step(const Shape& canon) {
    Step s;
    for (uint32_t& r : s.r) r = raw();
    s.dst = below(kPool);
    s.s = scalar();
    s.lo = (vbelow(9) - 6) / 2.0;
    s.hi = s.lo + vbelow(8) / 2.0;
    const int x = below(100);
    if (x < 8) return leaf(canon, s.dst);
    if (x < 11) {
      s.kind = Kind::Random;
      s.op = static_cast<uint8_t>(below(5));
      s.shape = sub_shape(canon);
    } else if (x < 12) {
      s.kind = Kind::Seed;
      s.s = Scalar(static_cast<int64_t>(vbelow(1000)));
    } else if (x < 14) {
      s.kind = Kind::Dropout;
      s.op = static_cast<uint8_t>(below(8));
    } else if (x < 26) {
      s.kind = Kind::Unary;
      s.op = static_cast<uint8_t>(below(26));
    } else if (x < 38) {
      s.kind = Kind::Binary;
      s.op = static_cast<uint8_t>(below(9));
    } else if (x < 45) {
      s.kind = Kind::BinaryScalar;
      s.op = static_cast<uint8_t>(below(8));
    } else if (x < 50) {
      s.kind = Kind::Compare;
      s.op = static_cast<uint8_t>(below(12));
    } else if (x < 53) {
      s.kind = Kind::Where;
    } else if (x < 59) {
      s.kind = Kind::Reduce;
      s.op = static_cast<uint8_t>(below(8));
    } else if (x < 62) {
      s.kind = Kind::Matmul;
    } else if (x < 64) {
      s.kind = Kind::Softmax;
      s.op = static_cast<uint8_t>(below(2));
    } else if (x < 76) {
      s.kind = Kind::View;
      s.op = static_cast<uint8_t>(below(14));
    } else if (x < 88) {
      s.kind = Kind::InPlace;
      s.op = static_cast<uint8_t>(below(12));
    } else if (x < 96) {
      s.kind = Kind::Read;
    } else if (x < 99) {
      s.kind = Kind::Drop;
    } else if (below(2) == 0) {
      s.kind = Kind::Sync;
    } else {
      s.kind = Kind::Toggle;
    }
    return s;
  }

  uint64_t seed_, value_seed_;
  std::mt19937_64 st_, va_;
};

// ---------------------------------------------------------------- execution

using Pool = std::vector<Tensor>;

bool broadcastable(const Shape& a, const Shape& b) {
  for (size_t i = 1; i <= std::min(a.size(), b.size()); ++i) {
    const int64_t x = a[a.size() - i], y = b[b.size() - i];
    if (x != y && x != 1 && y != 1) return false;
  }
  return true;
}

bool broadcasts_to(const Shape& src, const Shape& dst) {
  if (src.size() > dst.size()) return false;
  for (size_t i = 1; i <= src.size(); ++i) {
    const int64_t x = src[src.size() - i];
    if (x != dst[dst.size() - i] && x != 1) return false;
  }
  return true;
}

// The (r mod count)-th defined slot that satisfies `ok`, or -1.
template <class F>
int pick(const Pool& pool, uint32_t r, F&& ok) {
  std::vector<int> c;
  for (int i = 0; i < kPool; ++i)
    if (pool[i].defined() && ok(pool[i])) c.push_back(i);
  return c.empty() ? -1 : c[r % c.size()];
}
int pick_any(const Pool& pool, uint32_t r) {
  return pick(pool, r, [](const Tensor&) { return true; });
}

std::string slot_name(int i) {
  std::string s = "t";  // built in two steps: GCC 12 warns (-Wrestrict) on "t" + to_string(i)
  s += std::to_string(i);
  return s;
}

std::string show(const Tensor& t) {
  std::ostringstream o;
  o << dtype_name(t.dtype()) << shape_str(t.sizes());
  if (!t.is_contiguous() || t.storage_offset() != 0)
    o << "{strides=" << shape_str(t.strides()) << ",off=" << t.storage_offset() << "}";
  return o.str();
}

std::string hex(const void* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    s += digits[b[i] >> 4];
    s += digits[b[i] & 15];
  }
  return s;
}

// Element bytes of t in row-major logical order, read through its own strides.
std::string bytes_of(const Tensor& t) {
  const auto* base = static_cast<const char*>(t.raw_data());
  const size_t item = itemsize(t.dtype());
  const Shape sz = t.sizes(), st = t.strides();
  std::string out;
  std::vector<int64_t> idx(sz.size(), 0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < sz.size(); ++d) off += idx[d] * st[d];
    out += hex(base + off * static_cast<int64_t>(item), item);
    for (int64_t d = static_cast<int64_t>(sz.size()) - 1; d >= 0 && ++idx[d] == sz[d]; --d)
      idx[d] = 0;
  }
  return out;
}

std::string read_value(const Tensor& t) {
  return visit_dtype(t.dtype(), [&]<class T>(TypeTag<T>) -> std::string {
    if (t.numel() == 1) {
      T v = t.item<T>();
      return "item " + hex(&v, sizeof v);
    }
    std::string s = "vector ";
    for (T v : t.to_vector<T>()) s += hex(&v, sizeof v) + " ";
    return s;
  });
}

Tensor make_leaf(const Step& s) {
  return visit_dtype(s.dtype, [&]<class T>(TypeTag<T>) {
    std::vector<T> v;
    for (double x : s.data) v.push_back(static_cast<T>(x));
    return from_vector<T>(v, s.shape);
  });
}

std::string sc(const Scalar& s) {
  std::ostringstream o;
  if (s.category() == DTypeCategory::Bool)
    o << (s.to_int() ? "true" : "false");
  else if (s.category() == DTypeCategory::Integral)
    o << s.to_int();
  else
    o << s.to_double() << "(f)";
  return o.str();
}

// Runs one step; `desc` says what it did (for the reproducer listing); read values and pool
// results go to `pool` and `reads`.
void run_step(const Step& s, Pool& pool, std::vector<std::string>& reads, std::string& desc) {
  auto T = [](int i) { return slot_name(i); };
  auto put = [&](Tensor t) { pool[s.dst] = std::move(t); };
  const int a = pick_any(pool, s.r[0]);
  const Tensor A = a >= 0 ? pool[a] : Tensor();
  const std::string an = a >= 0 ? T(a) + ":" + show(A) : "";
  const int64_t nd = A.defined() ? A.dim() : 0;
  auto dim_of = [&](uint32_t r) { return nd == 0 ? int64_t{0} : static_cast<int64_t>(r % nd); };
  desc = T(s.dst) + " = ";
  switch (s.kind) {
    case Kind::Leaf: {
      desc += "leaf " + std::string(dtype_name(s.dtype)) + shape_str(s.shape);
      put(make_leaf(s));
      return;
    }
    case Kind::Random: {
      desc += "random#" + std::to_string(s.op) + " " + shape_str(s.shape);
      switch (s.op) {
        case 0:
          put(rand(s.shape));
          break;
        case 1:
          put(randn(s.shape));
          break;
        case 2:
          put(rand(s.shape, TensorOptions().dtype(kFloat64)));
          break;
        case 3:
          put(randn(s.shape, TensorOptions().dtype(kFloat64)));
          break;
        default:
          put(randint(-3, 4, s.shape));
          break;
      }
      return;
    }
    case Kind::Seed:
      desc = "manual_seed(" + std::to_string(s.s.to_int()) + ")";
      manual_seed(static_cast<uint64_t>(s.s.to_int()));
      return;
    case Kind::Drop: {
      desc = a >= 0 ? "drop " + T(a) : "drop (none)";
      if (a >= 0) pool[a] = Tensor();
      return;
    }
    case Kind::Sync:
      desc = "sync()";
      sync();
      return;
    case Kind::Toggle:
      desc = "toggle recording";
      return;
    default:
      break;
  }
  if (a < 0) {
    desc = "(no operand)";
    return;
  }
  auto compatible = [&](uint32_t r) {
    return pick(pool, r, [&](const Tensor& t) { return broadcastable(t.sizes(), A.sizes()); });
  };
  switch (s.kind) {
    case Kind::Dropout: {
      static const double ps[] = {0.0, 0.25, 0.5, 1.0};
      const double p = ps[s.op % 4];
      const bool train = s.op < 4 || s.op == 7;
      desc += "dropout(" + an + ", " + std::to_string(p) + (train ? ", train)" : ", eval)");
      put(dropout(A, p, train));
      return;
    }
    case Kind::Unary: {
      static const char* names[] = {
          "neg",   "abs",  "exp",         "log",   "sqrt",     "tanh",   "sigmoid",
          "relu",  "sin",  "floor",       "round", "sign",     "square", "reciprocal",
          "erf",   "silu", "logical_not", "isnan", "gelu",     "expm1",  "log1p",
          "rsqrt", "cos",  "ceil",        "clamp", "gelu_tanh"};
      desc += std::string(names[s.op]) + "(" + an + ")";
      switch (s.op) {
        case 0:
          put(neg(A));
          break;
        case 1:
          put(abs(A));
          break;
        case 2:
          put(exp(A));
          break;
        case 3:
          put(log(A));
          break;
        case 4:
          put(sqrt(A));
          break;
        case 5:
          put(tanh(A));
          break;
        case 6:
          put(sigmoid(A));
          break;
        case 7:
          put(relu(A));
          break;
        case 8:
          put(sin(A));
          break;
        case 9:
          put(floor(A));
          break;
        case 10:
          put(round(A));
          break;
        case 11:
          put(sign(A));
          break;
        case 12:
          put(square(A));
          break;
        case 13:
          put(reciprocal(A));
          break;
        case 14:
          put(erf(A));
          break;
        case 15:
          put(silu(A));
          break;
        case 16:
          put(logical_not(A));
          break;
        case 17:
          put(isnan(A));
          break;
        case 18:
          put(gelu(A));
          break;
        case 19:
          put(expm1(A));
          break;
        case 20:
          put(log1p(A));
          break;
        case 21:
          put(rsqrt(A));
          break;
        case 22:
          put(cos(A));
          break;
        case 23:
          put(ceil(A));
          break;
        case 24:
          desc += " lo=" + std::to_string(s.lo) + " hi=" + std::to_string(s.hi);
          put(clamp(A, s.lo, s.hi));
          break;
        default:
          put(gelu(A, "tanh"));
          break;
      }
      return;
    }
    case Kind::Binary: {
      // One step in eight takes any operand, so that broadcasting errors are compared too.
      const int b = (s.r[2] % 8 == 0) ? pick_any(pool, s.r[1]) : compatible(s.r[1]);
      const Tensor& B = pool[b];
      static const char* names[] = {"add",     "sub", "mul",         "div",       "maximum",
                                    "minimum", "pow", "logical_and", "logical_or"};
      desc += std::string(names[s.op]) + "(" + an + ", " + T(b) + ":" + show(B);
      if (s.op < 2) desc += ", alpha=" + sc(s.s);
      desc += ")";
      switch (s.op) {
        case 0:
          put(add(A, B, s.s));
          break;
        case 1:
          put(sub(A, B, s.s));
          break;
        case 2:
          put(mul(A, B));
          break;
        case 3:
          put(div(A, B));
          break;
        case 4:
          put(maximum(A, B));
          break;
        case 5:
          put(minimum(A, B));
          break;
        case 6:
          put(pow(A, B));
          break;
        case 7:
          put(logical_and(A, B));
          break;
        default:
          put(logical_or(A, B));
          break;
      }
      return;
    }
    case Kind::BinaryScalar: {
      static const char* names[] = {"add",  "sub",  "mul", "div",
                                    "rsub", "rdiv", "pow", "masked_fill"};
      desc += std::string(names[s.op]) + "(" + an + ", " + sc(s.s) + ")";
      switch (s.op) {
        case 0:
          put(add(A, s.s));
          break;
        case 1:
          put(sub(A, s.s));
          break;
        case 2:
          put(mul(A, s.s));
          break;
        case 3:
          put(div(A, s.s));
          break;
        case 4:
          put(rsub(A, s.s));
          break;
        case 5:
          put(rdiv(A, s.s));
          break;
        case 6:
          put(pow(A, s.s));
          break;
        default: {
          const int m = pick(pool, s.r[1], [&](const Tensor& t) {
            return t.dtype() == kBool && broadcastable(t.sizes(), A.sizes());
          });
          if (m < 0) {
            desc = "(no mask)";
            return;
          }
          desc += " mask " + T(m);
          put(masked_fill(A, pool[m], s.s));
        }
      }
      return;
    }
    case Kind::Compare: {
      static const char* names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
      const int which = s.op % 6;
      if (s.op < 6) {
        const int b = compatible(s.r[1]);
        const Tensor& B = pool[b];
        desc += std::string(names[which]) + "(" + an + ", " + T(b) + ")";
        switch (which) {
          case 0:
            put(eq(A, B));
            break;
          case 1:
            put(ne(A, B));
            break;
          case 2:
            put(lt(A, B));
            break;
          case 3:
            put(le(A, B));
            break;
          case 4:
            put(gt(A, B));
            break;
          default:
            put(ge(A, B));
            break;
        }
      } else {
        desc += std::string(names[which]) + "(" + an + ", " + sc(s.s) + ")";
        switch (which) {
          case 0:
            put(eq(A, s.s));
            break;
          case 1:
            put(ne(A, s.s));
            break;
          case 2:
            put(lt(A, s.s));
            break;
          case 3:
            put(le(A, s.s));
            break;
          case 4:
            put(gt(A, s.s));
            break;
          default:
            put(ge(A, s.s));
            break;
        }
      }
      return;
    }
    case Kind::Where: {
      const int c = pick(pool, s.r[1], [&](const Tensor& t) {
        return t.dtype() == kBool && broadcastable(t.sizes(), A.sizes());
      });
      if (c < 0) {
        desc = "(no condition)";
        return;
      }
      const int b = pick(pool, s.r[2], [&](const Tensor& t) {
        return broadcastable(t.sizes(), A.sizes()) && broadcastable(t.sizes(), pool[c].sizes());
      });
      desc += "where(" + T(c) + ", " + an + ", " + T(b) + ")";
      put(where(pool[c], A, pool[b]));
      return;
    }
    case Kind::Reduce: {
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < nd; ++d)
        if ((s.r[1] >> d) & 1) dims.push_back((s.r[2] >> d) & 1 ? d - nd : d);
      const bool keep = s.r[3] & 1;
      static const char* names[] = {"sum",  "mean",      "amax",   "amin",
                                    "prod", "logsumexp", "argmax", "var"};
      desc += std::string(names[s.op]) + "(" + an + ", dims=" + shape_str(dims) +
              (keep ? ", keepdim)" : ")");
      switch (s.op) {
        case 0:
          put(s.r[3] & 2 ? sum(A) : sum(A, dims, keep));
          break;
        case 1:
          put(mean(A, dims, keep));
          break;
        case 2:
          put(amax(A, dims, keep));
          break;
        case 3:
          put(amin(A, dims, keep));
          break;
        case 4:
          put(prod(A, dims, keep));
          break;
        case 5:
          put(logsumexp(A, dims, keep));
          break;
        case 6:
          put(argmax(A, dim_of(s.r[1]), keep));
          break;
        default:
          put(var(A, dims, true, keep));
          break;
      }
      return;
    }
    case Kind::Matmul: {
      const int b = pick(pool, s.r[1], [&](const Tensor& t) {
        if (t.dim() == 0 || nd == 0 || t.dtype() != A.dtype()) return false;
        const int64_t k = A.size(-1);
        return t.dim() == 1 ? t.size(0) == k : t.size(-2) == k;
      });
      if (b < 0) {
        desc = "(no matmul operand)";
        return;
      }
      desc += "matmul(" + an + ", " + T(b) + ":" + show(pool[b]) + ")";
      put(matmul(A, pool[b]));
      return;
    }
    case Kind::Softmax: {
      const int64_t d = dim_of(s.r[1]);
      desc += std::string(s.op ? "log_softmax(" : "softmax(") + an + ", " + std::to_string(d) + ")";
      put(s.op ? log_softmax(A, d) : softmax(A, d));
      return;
    }
    case Kind::View: {
      const int64_t d0 = dim_of(s.r[1]), d1 = dim_of(s.r[2]);
      const int64_t len = nd == 0 ? 1 : A.size(d0);
      switch (s.op) {
        case 0:
          desc += "transpose(" + an + ", " + std::to_string(d0) + ", " + std::to_string(d1) + ")";
          put(A.transpose(d0, d1));
          break;
        case 1: {
          const int64_t start = s.r[3] % (len + 1), step = 1 + (s.r[3] >> 8) % 3;
          const int64_t end = start + (s.r[3] >> 12) % (len + 1 - start + 1);
          desc += "slice(" + an + ", dim=" + std::to_string(d0) + ", " + std::to_string(start) +
                  ":" + std::to_string(end) + ":" + std::to_string(step) + ")";
          put(A.slice(d0, start, end, step));
          break;
        }
        case 2: {
          const int64_t i = len == 0 ? 0 : s.r[3] % len;
          desc += "select(" + an + ", " + std::to_string(d0) + ", " + std::to_string(i) + ")";
          put(A.select(d0, i));
          break;
        }
        case 3: {
          const int64_t d = static_cast<int64_t>(s.r[3] % (nd + 1));
          desc += "unsqueeze(" + an + ", " + std::to_string(d) + ")";
          put(A.unsqueeze(d));
          break;
        }
        case 4: {  // size-1 dims grow to 3, plus maybe a new leading dim
          Shape to = A.sizes();
          for (int64_t& x : to)
            if (x == 1 && (s.r[3] & 1)) x = 3;
          if (s.r[3] & 2) to.insert(to.begin(), 2);
          desc += "expand(" + an + ", " + shape_str(to) + ")";
          put(A.expand(to));
          break;
        }
        case 5:
          desc += "view(" + an + ", [-1])";
          put(A.view({-1}));
          break;
        case 6: {  // reshape to [x, -1] where x divides numel when possible
          const int64_t n = A.numel();
          int64_t x = 1;
          for (int64_t c = 2; c <= 4; ++c)
            if (n % c == 0 && (s.r[3] >> c) & 1) x = c;
          desc += "reshape(" + an + ", [" + std::to_string(x) + ", -1])";
          put(A.reshape({x, -1}));
          break;
        }
        case 7: {
          std::vector<int64_t> perm(nd);
          for (int64_t i = 0; i < nd; ++i) perm[i] = i;
          uint32_t r = s.r[3];
          for (int64_t i = nd - 1; i > 0; --i, r /= 7) std::swap(perm[i], perm[r % (i + 1)]);
          desc += "permute(" + an + ", " + shape_str(perm) + ")";
          put(A.permute(perm));
          break;
        }
        case 8:
          desc += "squeeze(" + an + ")";
          put(A.squeeze());
          break;
        case 9:
          desc += "contiguous(" + an + ")";
          put(A.contiguous());
          break;
        case 10:
          desc += "clone(" + an + ")";
          put(A.clone());
          break;
        case 11: {
          static const DType ds[] = {kFloat32, kFloat64, kInt64, kInt32, kBool};
          const DType d = ds[s.r[3] % 5];
          desc += "to(" + an + ", " + std::string(dtype_name(d)) + ")";
          put(A.to(d));
          break;
        }
        case 12:
          desc += "flatten(" + an + ")";
          put(A.flatten());
          break;
        default: {
          const int64_t start = len == 0 ? 0 : s.r[3] % len;
          const int64_t l = (s.r[3] >> 8) % (len - start + 1);
          desc += "narrow(" + an + ", " + std::to_string(d0) + ", " + std::to_string(start) + ", " +
                  std::to_string(l) + ")";
          put(A.narrow(d0, start, l));
          break;
        }
      }
      return;
    }
    case Kind::InPlace: {
      Tensor target = A;  // a handle: writes go to the storage the pool tensor shares
      // Sources whose dtype the target can hold, except one step in eight (errors compared).
      const bool any_dtype = s.r[3] % 8 == 0;
      const int b = pick(pool, s.r[1], [&](const Tensor& t) {
        return broadcasts_to(t.sizes(), A.sizes()) &&
               (any_dtype || category(t.dtype()) <= category(A.dtype()));
      });
      const std::string bn = b >= 0 ? T(b) + ":" + show(pool[b]) : "";
      static const char* names[] = {"add_",  "sub_",  "mul_",  "div_",   "add_s", "mul_s",
                                    "copy_", "fill_", "zero_", "clamp_", "relu_", "masked_fill_"};
      desc = std::string(names[s.op]) + "(" + an;
      const bool needs_src = s.op <= 3 || s.op == 6;
      if (needs_src && b < 0) {
        desc = "(no in-place source)";
        return;
      }
      switch (s.op) {
        case 0:
          desc += ", " + bn + ", alpha=" + sc(s.s) + ")";
          target.add_(pool[b], s.s);
          break;
        case 1:
          desc += ", " + bn + ", alpha=" + sc(s.s) + ")";
          target.sub_(pool[b], s.s);
          break;
        case 2:
          desc += ", " + bn + ")";
          target.mul_(pool[b]);
          break;
        case 3:
          desc += ", " + bn + ")";
          target.div_(pool[b]);
          break;
        case 4:
          desc += ", " + sc(s.s) + ")";
          target.add_(s.s);
          break;
        case 5:
          desc += ", " + sc(s.s) + ")";
          target.mul_(s.s);
          break;
        case 6:
          desc += ", " + bn + ")";
          target.copy_(pool[b]);
          break;
        case 7:
          desc += ", " + sc(s.s) + ")";
          target.fill_(s.s);
          break;
        case 8:
          desc += ")";
          target.zero_();
          break;
        case 9:
          desc += ", " + std::to_string(s.lo) + ", " + std::to_string(s.hi) + ")";
          target.clamp_(s.lo, s.hi);
          break;
        case 10:
          desc += ")";
          target.relu_();
          break;
        default: {
          const int m = pick(pool, s.r[2], [&](const Tensor& t) {
            return t.dtype() == kBool && broadcasts_to(t.sizes(), A.sizes());
          });
          if (m < 0) {
            desc = "(no mask)";
            return;
          }
          desc += ", mask " + T(m) + ", " + sc(s.s) + ")";
          target.masked_fill_(pool[m], s.s);
        }
      }
      return;
    }
    case Kind::Read: {
      desc = "read " + an;
      reads.push_back(desc + " -> " + read_value(A));
      return;
    }
    default:
      return;
  }
}

struct Outcome {
  std::vector<std::string> log;    // reads and errors, in step order
  std::vector<std::string> pool;   // final pool, one line per slot
  std::vector<std::string> trace;  // what each step did
};

// `segment_limit` > 0 makes recorded runs flush every that many ops (SyncReason::SegmentLimit).
Outcome execute(const Program& p, bool jit, int segment_limit = 0) {
  const int saved_limit = config().jit_segment_limit;
  if (segment_limit > 0) config().jit_segment_limit = segment_limit;
  config().jit = jit;
  manual_seed(p.seed);
  Outcome out;
  Pool pool(kPool);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    std::string desc;
    if (jit && p.steps[i].kind == Kind::Toggle) config().jit = !config().jit;
    try {
      run_step(p.steps[i], pool, out.log, desc);
    } catch (const Error& e) {
      out.log.push_back("step " + std::to_string(i) + " (" + desc + ") error: " + e.what());
    }
    out.trace.push_back(std::to_string(i) + ": " + desc);
  }
  try {
    sync();
  } catch (const Error& e) {
    out.log.push_back(std::string("final sync error: ") + e.what());
  }
  for (int k = 0; k < kPool; ++k) {
    const Tensor& t = pool[k];
    std::string line = slot_name(k);
    line += ": ";
    if (!t.defined()) {
      out.pool.push_back(line + "undefined");
      continue;
    }
    line += show(t) + " strides=" + shape_str(t.strides()) +
            " off=" + std::to_string(t.storage_offset()) + " ";
    try {
      line += bytes_of(t);
    } catch (const Error& e) {
      line += std::string("error: ") + e.what();
    }
    out.pool.push_back(line);
  }
  pool.clear();
  sync();
  config().jit = false;
  config().jit_segment_limit = saved_limit;
  return out;
}

std::string listing(const Program& p, const Outcome& eager) {
  std::ostringstream o;
  o << "Generator(" << p.seed << ", " << p.value_seed << "), canonical shape " << shape_str(p.canon)
    << "\n";
  for (const std::string& line : eager.trace) o << "  " << line << "\n";
  return o.str();
}

// Compares two runs; on a difference, one failure naming the seed with the program listing.
void expect_same(const Program& p, const Outcome& eager, const Outcome& lazy, const char* what) {
  auto first_diff = [](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
      const std::string x = i < a.size() ? a[i] : "(missing)";
      const std::string y = i < b.size() ? b[i] : "(missing)";
      if (x != y) return "eager: " + x + "\n  " + "jit:   " + y;
    }
    return std::string();
  };
  const std::string dl = first_diff(eager.log, lazy.log);
  const std::string dp = first_diff(eager.pool, lazy.pool);
  if (dl.empty() && dp.empty()) return;
  ADD_FAILURE() << what << ": eager and recorded runs differ\n  " << (dl.empty() ? dp : dl)
                << "\nprogram (" << listing(p, eager) << ")";
}

constexpr uint64_t kSeeds = 3000;

TEST(RecordFuzz, RandomProgramsMatchEagerBitwise) {
  JitRestore restore;
  kiln::sync();
  tracer::RegionCache::instance().clear();  // the counts below assume a cold cache
  const tracer::CacheCounters c0 = tracer::RegionCache::instance().counters();
  int failures = 0;
  int64_t errors = 0, reads = 0;
  for (uint64_t seed = 1; seed <= kSeeds && failures < 3; ++seed) {
    const Program p = Generator(seed, seed).make();
    const Outcome eager = execute(p, false);
    const Outcome lazy = execute(p, true);
    // The second recording of the same program hits the region cache; it also flushes every few
    // ops, so values cross segment boundaries.
    const Outcome again = execute(p, true, static_cast<int>(seed % 4 == 0 ? 1 + seed % 7 : 0));
    const int before = ::testing::Test::HasFailure() ? 1 : 0;
    expect_same(p, eager, lazy, "first recording");
    expect_same(p, eager, again, "second recording (cache hit or segment limit)");
    if (::testing::Test::HasFailure() && !before) ++failures;
    for (const std::string& l : eager.log)
      (l.find("error") != std::string::npos ? errors : reads)++;
  }
  // The recorder really ran (regions were made and reused), and the generator produced mostly
  // valid programs that read values; otherwise this test would check little.
  const tracer::CacheCounters c1 = tracer::RegionCache::instance().counters();
  EXPECT_GT(c1.misses - c0.misses, static_cast<int64_t>(kSeeds));
  EXPECT_GT(c1.hits - c0.hits, static_cast<int64_t>(kSeeds / 2));
  EXPECT_GT(reads, static_cast<int64_t>(kSeeds));
  EXPECT_LT(errors, reads * 2);
  // Some flushes repeat the one before them: the segment's follow path (tracer/flush_memo.h)
  // is compared bitwise too.
  EXPECT_GT(c1.repeats - c0.repeats, 0);
  std::printf("[fuzz] %llu programs, %lld reads, %lld errors compared, %lld repeated flushes\n",
              static_cast<unsigned long long>(kSeeds), static_cast<long long>(reads),
              static_cast<long long>(errors), static_cast<long long>(c1.repeats - c0.repeats));
}

// The same program structures with other scalars and data: the region cache promotes the scalars
// that changed to runtime inputs and must still reproduce eager's bits.
TEST(RecordFuzz, ScalarVariantsMatchEagerBitwise) {
  JitRestore restore;
  kiln::sync();
  tracer::RegionCache::instance().clear();  // the counts below assume a cold cache
  const tracer::CacheCounters c0 = tracer::RegionCache::instance().counters();
  int failures = 0;
  for (uint64_t seed = 1; seed <= kSeeds / 4 && failures < 3; ++seed) {
    for (uint64_t variant = 1; variant <= 3; ++variant) {
      const Program p = Generator(seed, seed * 1000 + variant).make();
      const Outcome eager = execute(p, false);
      const Outcome lazy = execute(p, true);
      const bool before = ::testing::Test::HasFailure();
      expect_same(p, eager, lazy, "scalar variant");
      if (::testing::Test::HasFailure() && !before) ++failures;
    }
  }
  EXPECT_GT(tracer::RegionCache::instance().counters().promotions - c0.promotions, 0);
}

}  // namespace
}  // namespace kiln

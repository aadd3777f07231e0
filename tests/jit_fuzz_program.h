// The JIT fuzzer's random programs (tests/test_jit_fuzz.cpp runs them): the step kinds, a
// program's inputs and steps, and the generator that draws one from a seed. A seed always gives
// the same program (the fuzzer's seeds are fixed and named in tests and docs): change the
// generator only by adding draws behind a new flag, as `rows` and `any_dims` did.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "ops/meta_helpers.h"

namespace kiln::jit_fuzz {

using Shape = std::vector<int64_t>;

enum class K {
  Unary,
  Binary,
  ScalarRight,
  ScalarLeft,
  Clamp,
  Pow,
  Where,
  Random,
  Sum,
  InPlace,
  InPlaceView,
  Cast,        // .to(dtype)
  Round,       // floor, ceil, round
  Compare,     // a comparison stored as a Bool tensor
  Logical,     // logical_and / logical_or / logical_not of Bool entries
  MaskedFill,  // masked_fill with a Bool entry as the mask
  WhereMask,   // where with a Bool entry as the condition
  RowReduce,   // sum/mean/amax/amin/prod/var over the last dims of a canonical entry (rows_ only;
               // any_dims_: over any dim set, logsumexp and a softmax over one dim too)
};

inline constexpr DType kDTypes[] = {kBool, kInt32, kInt64, kFloat32, kFloat64};

struct Step {
  K kind;
  int op = 0;
  int a = 0, b = 0, c = 0, d = 0;  // pool operands
  double s = 0, s2 = 0;            // scalars
  bool vary = false;               // the scalar changes with the iteration
  bool integer = false;            // an integral Scalar
  int dim = 0, start = 0, end = 0, step = 1;
  Shape shape;             // Random
  DType dtype = kFloat32;  // Cast
};

struct Input {
  Shape shape;
  int form = 0;  // 0 contiguous, 1 transposed, 2 offset and strided
  uint64_t seed = 0;
  DType dtype = kFloat32;  // the program's float dtype, or (not leaves) Bool or an integer
};

struct Program {
  uint64_t seed = 0;
  DType dtype = kFloat32;
  Shape canon;
  std::vector<Input> inputs;
  std::vector<int> leaves;  // pool indices of inputs with the canonical shape (written in place)
  std::vector<Step> steps;
  std::string text;  // for failure messages
};

class Gen {
 public:
  // `long_rows`: the canonical shape is one or two rows longer than a 65536-element chunk, which
  // the launcher splits across threads (cpu_kernel_reduce.cpp run_row_chunks). `long_cols`
  // (with any_dims): columns of 16 to 100 longer than a 2048-row chunk, whose column kernels'
  // rows the launcher splits across threads by chunks (cpu_kernel_reduce.cpp launch_cols).
  explicit Gen(uint64_t seed, bool rows = false, bool any_dims = false, bool long_rows = false,
               bool long_cols = false)
      : rng_(seed * 0x9e3779b97f4a7c15ull + 12345),
        rows_(rows || any_dims || long_rows),
        any_dims_(any_dims || long_cols),
        long_rows_(long_rows),
        long_cols_(long_cols) {
    p_.seed = seed;
  }

  Program make() {
    p_.dtype = below(2) ? kFloat64 : kFloat32;
    const int rank = 1 + below(3);
    const int64_t dims[] = {1, 2, 3, 5, 7, 8, 16, 17, 33, 64, 100};
    int64_t total = 1;
    for (int d = 0; d < rank; ++d) {
      int64_t s = dims[below(11)];
      if (total * s > 4000) s = 1 + below(3);
      p_.canon.push_back(s);
      total *= s;
    }
    if (below(25) == 0) p_.canon = {300, 131};  // above the parallel grain
    if (long_rows_) {  // past one chunk, sometimes by one element; one or two rows
      const int64_t n = below(3) == 0 ? 65537 : 65537 + below(150000);
      p_.canon = below(2) ? Shape{n} : Shape{1 + below(2), n};
    }
    if (long_cols_) {  // past one 2048-row chunk, sometimes by one row; 16 to 100 columns
      const int64_t cols[] = {16, 17, 33, 64, 100};
      const int64_t n = below(3) == 0 ? 2049 : 2049 + below(4000);
      p_.canon = below(3) == 0 ? Shape{n, cols[below(5)]} : Shape{1, n, cols[below(5)]};
    } else if (any_dims_ && below(2) == 0) {  // at least 16 columns: column kernels launch
      const int64_t cols[] = {16, 17, 33, 64, 100};
      p_.canon.back() = cols[below(5)];
      if (p_.canon.size() > 1 && below(3) == 0) p_.canon[0] = 70 + below(80);  // past 64 rows
    }
    p_.text = fmt::format("seed {} {} canon [{}]\n", p_.seed, dtype_name(p_.dtype),
                          fmt::join(p_.canon, ","));
    const int n_in = 2 + below(3);
    for (int i = 0; i < n_in; ++i) {
      Input in;
      in.shape = i < 2 ? p_.canon : sub_shape();
      in.form = below(3);
      in.seed = rng_();
      in.dtype = p_.dtype;
      if (i >= 1 && below(3) == 0) in.dtype = kDTypes[below(3)];  // Bool, Int32, Int64
      if (in.shape == p_.canon && in.dtype == p_.dtype) p_.leaves.push_back(i);
      shapes_.push_back(in.shape);
      types_.push_back(in.dtype);
      p_.text +=
          fmt::format("  in{} [{}] form {} {}\n", i, fmt::join(in.shape, ","), in.form, in.dtype);
      p_.inputs.push_back(in);
    }
    const int n = 6 + below(35);
    for (int i = 0; i < n; ++i) add_step();
    return p_;
  }

 private:
  int below(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  int pick() { return below(static_cast<int>(shapes_.size())); }
  int pick_not_bool() {  // an entry of a numeric dtype (ops of the Numeric rule reject Bool)
    for (int tries = 0; tries < 20; ++tries) {
      const int i = pick();
      if (types_[i] != kBool) return i;
    }
    return 0;  // input 0 has the program's float dtype
  }
  int pick_typed(DType t) {  // an entry of dtype t, or -1
    std::vector<int> c;
    for (size_t i = 0; i < types_.size(); ++i)
      if (types_[i] == t) c.push_back(static_cast<int>(i));
    return c.empty() ? -1 : c[below(static_cast<int>(c.size()))];
  }
  // The dtype of an op over entries `in` (and a Scalar): the rules the eager meta functions use.
  DType promoted(std::initializer_list<int> in, const Scalar* s = nullptr) const {
    ResultType rt;
    for (int i : in) rt.add(types_[i], shapes_[i].empty());
    if (s != nullptr) rt.add(*s);
    return rt.get();
  }
  DType unary_type(int op, int a) const {
    const DType t = types_[a];
    if (op >= 2 && op <= 4) return to_floating(t);    // sqrt, rsqrt, reciprocal
    if (op >= 8 && op <= 10) return to_floating(t);   // tanh, sigmoid, exp
    if (op == 12 || op == 13) return to_floating(t);  // sin, cos
    if (op == 5 && t == kBool) return kInt64;         // square
    return t;
  }
  static bool bool_ok_unary(int op) { return op != 0 && op != 1 && op != 6 && op != 11; }
  int pick_canon() {  // a pool entry with the canonical shape
    std::vector<int> c;
    for (size_t i = 0; i < shapes_.size(); ++i)
      if (shapes_[i] == p_.canon && types_[i] == p_.dtype) c.push_back(static_cast<int>(i));
    return c[below(static_cast<int>(c.size()))];
  }
  Shape sub_shape() {
    Shape s;
    const int drop = below(static_cast<int>(p_.canon.size()) + 1);  // leading dims dropped
    for (size_t d = static_cast<size_t>(drop); d < p_.canon.size(); ++d)
      s.push_back(below(3) == 0 ? 1 : p_.canon[d]);
    return s;
  }
  static Shape broadcast(const Shape& a, const Shape& b) {
    Shape r(std::max(a.size(), b.size()), 1);
    for (size_t i = 0; i < r.size(); ++i) {
      const int64_t x = i < r.size() - a.size() ? 1 : a[i - (r.size() - a.size())];
      const int64_t y = i < r.size() - b.size() ? 1 : b[i - (r.size() - b.size())];
      r[i] = std::max(x, y);
    }
    return r;
  }
  double scalar(Step& st) {
    static const double values[] = {0.5, -1.25, 2.0, 3.0, 0.0, -0.0, 1e-3, 1e30, 0.1, -7.0};
    st.integer = below(6) == 0;
    if (st.integer) return static_cast<double>(below(7) - 3);
    return values[below(10)];
  }
  void push(Step st, const Shape& out, DType t) {
    p_.steps.push_back(st);
    shapes_.push_back(out);
    types_.push_back(t);
  }
  Scalar scalar_value(const Step& st) const {
    return st.integer ? Scalar(static_cast<int64_t>(st.s)) : Scalar(st.s);
  }
  // A reduction over the last st.dim dims (keepdim: st.start) and, half the time, an entry
  // minus it broadcast back over the rows (a row kernel's epilogue).
  void add_row_reduce() {
    if (any_dims_) return add_any_reduce();
    Step st;
    std::string& t = p_.text;
    const int id = static_cast<int>(shapes_.size());
    st.kind = K::RowReduce;
    st.a = pick_canon();
    st.op = below(7);  // sum mean amax amin prod var var(unbiased)
    st.dim = 1 + below(static_cast<int>(p_.canon.size()));
    st.start = below(2);
    Shape out = p_.canon;
    out.resize(out.size() - static_cast<size_t>(st.dim));
    // Without keepdim only where the result still broadcasts against the canonical shape (the
    // pool's other steps combine any entries).
    for (size_t i = 0; i < out.size() && !st.start; ++i) {
      const int64_t c = p_.canon[p_.canon.size() - out.size() + i];
      if (out[i] != c && out[i] != 1) st.start = 1;
    }
    if (st.start) {
      out = p_.canon;
      for (size_t d = out.size() - static_cast<size_t>(st.dim); d < out.size(); ++d) out[d] = 1;
    }
    t += fmt::format("  %{} = rowreduce{} %{} last {} keepdim {}\n", id, st.op, st.a, st.dim,
                     st.start);
    push(st, out, p_.dtype);
    if (st.start && below(2) == 0) broadcast_back(id);
  }
  // A reduction over a random nonempty set of dims (st.end: the mask; keepdim: st.start, or
  // without keepdim where the result still broadcasts against the canonical shape): sum mean
  // amax amin prod var var(unbiased) logsumexp, (8) a softmax over one dim written from
  // amax / exp / sum / div, (9, 10) argmax / argmin over one dim, (11, 12) all / any; half the
  // time a keepdim float result is broadcast back (x - r).
  void add_any_reduce() {
    Step st;
    std::string& t = p_.text;
    const int id = static_cast<int>(shapes_.size());
    const int rank = static_cast<int>(p_.canon.size());
    st.kind = K::RowReduce;
    st.a = pick_canon();
    st.op = below(13);
    const bool one_dim = st.op == 8 || st.op == 9 || st.op == 10;
    st.end = one_dim ? 1 << below(rank) : 1 + below((1 << rank) - 1);
    if (st.op >= 11) st.end = (1 << rank) - 1;  // all / any: every dim
    st.start = st.op == 8 ? 1 : st.op >= 11 ? 0 : below(2);
    Shape out;
    for (int d = 0; d < rank; ++d)
      if (!((st.end >> d) & 1)) out.push_back(p_.canon[d]);
    for (size_t i = 0; i < out.size() && !st.start; ++i) {
      const int64_t c = p_.canon[p_.canon.size() - out.size() + i];
      if (out[i] != c && out[i] != 1) st.start = 1;
    }
    if (st.start) {
      out = p_.canon;
      for (int d = 0; d < rank; ++d)
        if ((st.end >> d) & 1) out[d] = 1;
    }
    if (st.op == 8) out = p_.canon;
    if (st.op >= 11) out = {};
    t += fmt::format("  %{} = reduce{} %{} dims mask {} keepdim {}\n", id, st.op, st.a, st.end,
                     st.start);
    push(st, out, st.op == 9 || st.op == 10 ? kInt64 : st.op >= 11 ? kBool : p_.dtype);
    if (st.op < 8 && st.start && below(2) == 0) broadcast_back(id);
  }
  // A keepdim reduction `id` broadcast back: a canonical entry minus it.
  void broadcast_back(int id) {
    Step sub;
    sub.kind = K::Binary;
    sub.op = 1;  // sub
    sub.a = pick_canon();
    sub.b = id;
    p_.text += fmt::format("  %{} = binary1 %{} %{}\n", id + 1, sub.a, sub.b);
    push(sub, p_.canon, p_.dtype);
  }
  void add_step() {
    if (rows_ && below(4) == 0) return add_row_reduce();
    Step st;
    const int r = below(100);
    std::string& t = p_.text;
    const int id = static_cast<int>(shapes_.size());
    if (r < 20) {
      st.kind = K::Unary;
      st.op = below(12);
      st.a = bool_ok_unary(st.op) ? pick() : pick_not_bool();
      // Two thirds of op 11 become sin (12) and cos (13), chosen without a draw: each seed keeps
      // the program it made before they were added, but for those ops.
      if (st.op == 11 && id % 3 != 0) st.op = 11 + id % 3;
      t += fmt::format("  %{} = unary{} %{}\n", id, st.op, st.a);
      push(st, shapes_[st.a], unary_type(st.op, st.a));
    } else if (r < 42) {
      st.kind = K::Binary;
      st.op = below(6);
      st.a = pick();
      st.b = st.op == 1 && types_[st.a] == kBool ? pick_not_bool() : pick();  // no Bool - Bool
      t += fmt::format("  %{} = binary{} %{} %{}\n", id, st.op, st.a, st.b);
      const DType pt = promoted({st.a, st.b});
      push(st, broadcast(shapes_[st.a], shapes_[st.b]), st.op == 3 ? to_floating(pt) : pt);
    } else if (r < 57) {
      st.kind = below(2) ? K::ScalarRight : K::ScalarLeft;
      st.op = below(4);
      st.a = pick();
      st.s = scalar(st);
      st.vary = below(3) == 0;
      t += fmt::format("  %{} = scalar{}{} %{} {}{}{}\n", id, st.kind == K::ScalarLeft ? "L" : "R",
                       st.op, st.a, st.s, st.integer ? " (integer)" : "",
                       st.vary ? " (varies)" : "");
      const Scalar sv = scalar_value(st);
      const DType pt = promoted({st.a}, &sv);
      if (st.op == 1 && pt == kBool) st.op = 0;  // no Bool - Bool
      push(st, shapes_[st.a], st.op == 3 ? to_floating(pt) : pt);
    } else if (r < 62) {
      st.kind = K::Clamp;
      st.a = pick_not_bool();
      st.s = -0.5 - below(3);
      st.s2 = below(4) == 0 ? st.s - 1 : 0.25 + below(3);  // sometimes lo > hi
      st.vary = below(3) == 0;
      t += fmt::format("  %{} = clamp %{} {} {}\n", id, st.a, st.s, st.s2);
      push(st, shapes_[st.a], to_floating(types_[st.a]));  // the bounds are floats
    } else if (r < 67) {
      // op 0: pow(tensor, scalar); 1: pow(tensor, tensor); 2: pow(scalar, tensor).
      st.kind = K::Pow;
      st.op = below(4) == 0 ? 1 : below(5) == 0 ? 2 : 0;
      st.a = pick_not_bool();
      st.b = pick_not_bool();
      const double es[] = {2.0, 0.5, 1.0, 3.0, -1.5, 2.5, 0.0, -2.0, 7.0, 1e-3};
      st.s = es[below(10)];
      // int_pow: integral exponents >= 0 (a negative one is an error for integer tensors)
      st.integer =
          is_integral(types_[st.a]) && st.s >= 0 && st.s == std::floor(st.s) && below(2) == 0;
      st.vary = st.op != 1 && below(4) == 0;
      t += fmt::format("  %{} = pow{} %{} %{} {}{}{}\n", id, st.op, st.a, st.b, st.s,
                       st.integer ? " (integer)" : "", st.vary ? " (varies)" : "");
      const Scalar sv = scalar_value(st);
      push(st, st.op == 1 ? broadcast(shapes_[st.a], shapes_[st.b]) : shapes_[st.a],
           st.op == 1 ? promoted({st.a, st.b}) : promoted({st.a}, &sv));
    } else if (r < 74) {
      st.kind = K::Where;
      st.op = below(6);
      st.a = pick();
      st.b = below(3) == 0 ? -1 : pick();
      st.s = scalar(st);
      st.c = pick();
      st.d = pick();
      t += fmt::format("  %{} = where cmp{} %{} %{} ({}) ? %{} : %{}\n", id, st.op, st.a, st.b,
                       st.s, st.c, st.d);
      Shape out = broadcast(broadcast(shapes_[st.a], st.b < 0 ? Shape{} : shapes_[st.b]),
                            broadcast(shapes_[st.c], shapes_[st.d]));
      push(st, out, promoted({st.c, st.d}));
    } else if (r < 79) {
      st.kind = K::Random;
      st.op = below(3);  // randn, rand, dropout
      if (st.op == 2) {
        st.a = pick_typed(p_.dtype);
        const double ps[] = {0.1, 0.5, 0.7, 0.25};
        st.s = ps[below(4)];
        st.vary = below(3) == 0;
        t += fmt::format("  %{} = dropout %{} {}{}\n", id, st.a, st.s, st.vary ? " (varies)" : "");
        push(st, shapes_[st.a], p_.dtype);
      } else {
        st.shape = below(2) ? p_.canon : sub_shape();
        t += fmt::format("  %{} = rand{} [{}]\n", id, st.op, fmt::join(st.shape, ","));
        push(st, st.shape, p_.dtype);
      }
    } else if (r < 82) {
      st.kind = K::Sum;
      st.a = pick();
      t += fmt::format("  %{} = sum %{}\n", id, st.a);
      push(st, Shape{}, is_floating(types_[st.a]) ? types_[st.a] : kInt64);
    } else if (r < 88) {
      st.kind = K::InPlace;
      st.a = p_.leaves[below(static_cast<int>(p_.leaves.size()))];
      st.op = below(8);
      st.b = pick_typed(p_.dtype);  // (a wider operand would not write back into the leaf)
      st.s = scalar(st);
      st.s2 = 2.0;
      st.vary = below(3) == 0;
      t += fmt::format("  in-place{} %{} with %{} {}{}{}\n", st.op, st.a, st.b, st.s,
                       st.integer ? " (integer)" : "", st.vary ? " (varies)" : "");
      p_.steps.push_back(st);
    } else if (r < 91) {
      st.kind = K::InPlaceView;
      st.a = p_.leaves[below(static_cast<int>(p_.leaves.size()))];
      st.b = pick_canon();
      st.op = below(5);
      st.s = scalar(st);
      st.dim = below(static_cast<int>(p_.canon.size()));
      const int64_t len = p_.canon[st.dim];
      st.start = below(static_cast<int>(len));
      st.end = st.start + 1 + below(static_cast<int>(len - st.start));
      st.step = 1 + below(2);
      t += fmt::format("  view-in-place{} %{}.slice({}, {}, {}, {}) with %{} {}\n", st.op, st.a,
                       st.dim, st.start, st.end, st.step, st.b, st.s);
      p_.steps.push_back(st);
    } else {
      add_typed_step();
    }
  }

  // The steps that mix dtypes (about a fifth of all steps, besides the typed inputs).
  void add_typed_step() {
    Step st;
    std::string& t = p_.text;
    const int id = static_cast<int>(shapes_.size());
    const int r = below(6);
    if (r == 0 || r == 5) {
      st.kind = K::Cast;
      st.a = pick();
      st.dtype = kDTypes[below(5)];
      t += fmt::format("  %{} = %{}.to({})\n", id, st.a, st.dtype);
      push(st, shapes_[st.a], st.dtype);
    } else if (r == 1) {
      st.kind = K::Round;
      st.op = below(3);
      st.a = pick_not_bool();
      t += fmt::format("  %{} = round{} %{}\n", id, st.op, st.a);
      push(st, shapes_[st.a], types_[st.a]);
    } else if (r == 2) {
      st.kind = K::Compare;
      st.op = below(6);
      st.a = pick();
      st.b = below(3) == 0 ? -1 : pick();
      st.s = scalar(st);
      t += fmt::format("  %{} = cmp{} %{} %{} ({})\n", id, st.op, st.a, st.b, st.s);
      push(st, broadcast(shapes_[st.a], st.b < 0 ? Shape{} : shapes_[st.b]), kBool);
    } else {
      const int m = pick_typed(kBool);
      if (m < 0) return;  // no mask yet
      st.a = m;
      if (r == 3) {
        st.kind = K::Logical;
        st.op = below(3);
        st.b = pick_typed(kBool);
        t += fmt::format("  %{} = logical{} %{} %{}\n", id, st.op, st.a, st.b);
        push(st, st.op == 2 ? shapes_[st.a] : broadcast(shapes_[st.a], shapes_[st.b]), kBool);
      } else if (below(2)) {
        st.kind = K::MaskedFill;
        st.b = pick_not_bool();
        st.s = scalar(st);
        if (is_integral(types_[st.b])) {  // the value must fit the dtype (1e30 would not)
          st.integer = true;
          if (std::fabs(st.s) > 1e9) st.s = 3.0;  // (no draw: the other programs stay the same)
        }
        t += fmt::format("  %{} = %{}.masked_fill(%{}, {})\n", id, st.b, st.a, st.s);
        push(st, broadcast(shapes_[st.b], shapes_[st.a]), types_[st.b]);
      } else {
        st.kind = K::WhereMask;
        st.c = pick();
        st.d = pick();
        t += fmt::format("  %{} = where %{} ? %{} : %{}\n", id, st.a, st.c, st.d);
        push(st, broadcast(shapes_[st.a], broadcast(shapes_[st.c], shapes_[st.d])),
             promoted({st.c, st.d}));
      }
    }
  }

  std::mt19937_64 rng_;
  bool rows_ = false;  // row reductions too (a separate test: the other seeds keep their programs)
  bool any_dims_ = false;   // reductions over any dims instead (a third test)
  bool long_rows_ = false;  // rows longer than a chunk (a fourth)
  bool long_cols_ = false;  // columns longer than a chunk (a fifth)
  Program p_;
  std::vector<Shape> shapes_;
  std::vector<DType> types_;
};

}  // namespace kiln::jit_fuzz

#include "fuzz/run_step.h"

namespace kiln::fuzz {

bool run_pointwise_step(const StepContext& ctx) {
  const Step& s = ctx.s;
  const Pool& pool = ctx.pool;
  std::string& desc = ctx.desc;
  const Tensor& A = ctx.A;
  const std::string& an = ctx.an;
  auto T = [](int i) { return slot_name(i); };
  auto put = [&](Tensor t) { ctx.put(std::move(t)); };
  auto compatible = [&](uint32_t r) { return ctx.compatible(r); };
  switch (s.kind) {
    case Kind::Dropout: {
      static const double ps[] = {0.0, 0.25, 0.5, 1.0};
      const double p = ps[s.op % 4];
      const bool train = s.op < 4 || s.op == 7;
      desc += "dropout(" + an + ", " + std::to_string(p) + (train ? ", train)" : ", eval)");
      put(dropout(A, p, train));
      return true;
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
      return true;
    }
    case Kind::Binary: {
      // One step in eight takes any operand, so that broadcasting errors are compared too.
      int b = (s.r[2] % 8 == 0) ? pick_any(pool, s.r[1]) : compatible(s.r[1]);
      if (b >= 0 && broadcast_too_big(pool[b].sizes(), A.sizes())) b = compatible(s.r[1]);
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
      return true;
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
            return true;
          }
          desc += " mask " + T(m);
          put(masked_fill(A, pool[m], s.s));
        }
      }
      return true;
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
      return true;
    }
    case Kind::Where: {
      const int c = pick(pool, s.r[1], [&](const Tensor& t) {
        return t.dtype() == kBool && broadcastable(t.sizes(), A.sizes());
      });
      if (c < 0) {
        desc = "(no condition)";
        return true;
      }
      const int b = pick(pool, s.r[2], [&](const Tensor& t) {
        return broadcastable(t.sizes(), A.sizes()) && broadcastable(t.sizes(), pool[c].sizes());
      });
      desc += "where(" + T(c) + ", " + an + ", " + T(b) + ")";
      put(where(pool[c], A, pool[b]));
      return true;
    }
    default:
      return false;
  }
}

}  // namespace kiln::fuzz

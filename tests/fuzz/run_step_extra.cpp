// The fuzzer's Extra and Backward kinds: shape ops (cat, stack, split, chunk), index ops
// (index_select, gather, scatter_add, embedding, one_hot), nn ops (layer_norm, cross_entropy,
// scaled_dot_product_attention), the reductions the Reduce kind leaves out (argmin, std, all,
// any), factories, and backward steps. Index tensors are made from the step's raw numbers, so
// both runs build the same ones.
#include "fuzz/run_step.h"

namespace kiln::fuzz {
namespace {

// Int64 indices in [0, bound) (-100, cross_entropy's ignore index, one in 7 where
// `ignore_some`), from a seed.
Tensor indices(uint32_t seed, Shape shape, int64_t bound, bool ignore_some = false) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> v;
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t r = x >> 33;
    v.push_back(ignore_some && r % 7 == 0 ? -100 : bound > 0 ? static_cast<int64_t>(r % bound) : 0);
  }
  return from_vector<int64_t>(v, shape);
}

std::string piece_desc(const char* op, const std::string& an, int64_t arg, int64_t dim, size_t i) {
  return std::string(op) + "(" + an + ", " + std::to_string(arg) + ", dim=" + std::to_string(dim) +
         ")[" + std::to_string(i) + "]";
}

}  // namespace

bool run_extra_step(const StepContext& ctx) {
  const Step& s = ctx.s;
  const Pool& pool = ctx.pool;
  std::string& desc = ctx.desc;
  const Tensor& A = ctx.A;
  const std::string& an = ctx.an;
  auto T = [](int i) { return slot_name(i); };
  auto put = [&](Tensor t) { ctx.put(std::move(t)); };
  const int64_t nd = A.dim();
  auto dim_of = [&](uint32_t r) { return nd == 0 ? int64_t{0} : static_cast<int64_t>(r % nd); };
  const int64_t d0 = dim_of(s.r[1]);
  const int64_t len = nd == 0 ? 1 : A.size(d0);
  // A second operand of the same rank and dtype (sizes may differ: errors are compared too).
  auto same_rank = [&](uint32_t r) {
    return pick(pool, r, [&](const Tensor& t) { return t.dim() == nd && t.dtype() == A.dtype(); });
  };
  if (s.kind == Kind::Backward) {
    if (!is_floating(A.dtype())) {
      desc = "(backward: no floating operand)";
      return true;
    }
    static const char* names[] = {
        "sum(relu(x) * x)",      "mean(abs(x) + clamp(x))",   "sum(floor(x) + sign(x) * x)",
        "sum(softmax(x) * x)",   "sum(tanh(x) * sigmoid(x))", "var(x) + std(x)",
        "sum(maximum(x, x.t)) ", "mse(layer_norm(x), x)"};
    desc += "grad of " + std::string(names[s.op]) + " at " + an;
    Tensor x = A.detach().clone().requires_grad_();
    Tensor loss;
    const int64_t last = nd == 0 ? 0 : -1;
    switch (s.op) {
      case 0:
        loss = sum(relu(x) * x);
        break;
      case 1:
        loss = mean(abs(x) + clamp(x, s.lo, s.hi));
        break;
      case 2:
        loss = sum(floor(x) + sign(x) * x);
        break;
      case 3:
        loss = sum(softmax(x, last) * x);
        break;
      case 4:
        loss = sum(tanh(x) * sigmoid(x));
        break;
      case 5:
        loss = sum(var(x, {}) + kiln::std(x, {}));
        break;
      case 6:
        loss =
            sum(maximum(x, nd >= 2 && !broadcast_too_big(x.sizes(), x.transpose(0, nd - 1).sizes())
                               ? x.transpose(0, nd - 1)
                               : x * 0.5));
        break;
      default:
        loss = mse_loss(layer_norm(x, {nd == 0 ? 1 : A.size(-1)}), x.detach());
        break;
    }
    // A non-scalar root gets a gradient of ones; recorded runs record the backward ops too.
    loss.backward();
    put(x.grad());
    return true;
  }
  if (s.kind != Kind::Extra) return false;
  // Index values are checked by the kernels, and a recorded run reports a bad one at the sync
  // point, not at the op (docs/tracer.md): the generator only makes valid indices, so index ops
  // over an empty dim are skipped.
  const bool index_op =
      s.op == 4 || s.op == 5 || s.op == 7 || s.op == 8 || s.op == 16 || s.op == 17;
  if (index_op && (len == 0 || A.numel() == 0)) {
    desc = "(index op over an empty dim)";
    return true;
  }
  switch (s.op) {
    case 0: {  // cat along d0 with another tensor of the same rank
      const int b = same_rank(s.r[2]);
      if (b < 0) {
        desc = "(no cat operand)";
        return true;
      }
      desc += "cat([" + an + ", " + T(b) + ":" + show(pool[b]) + "], " + std::to_string(d0) + ")";
      put(cat({A, pool[b], A}, d0));
      return true;
    }
    case 1: {
      const int b = pick(pool, s.r[2], [&](const Tensor& t) { return t.sizes() == A.sizes(); });
      const int64_t d = static_cast<int64_t>(s.r[3] % (nd + 1));
      desc += "stack([" + an + ", " + T(b) + "], " + std::to_string(d) + ")";
      put(stack({A, b >= 0 ? pool[b] : A}, d));
      return true;
    }
    case 2:
    case 3: {
      const int64_t arg = 1 + s.r[2] % 4;
      std::vector<Tensor> parts = s.op == 2 ? split(A, arg, d0) : chunk(A, arg, d0);
      if (parts.empty()) {
        desc = "(no pieces)";
        return true;
      }
      const size_t i = s.r[3] % parts.size();
      desc += piece_desc(s.op == 2 ? "split" : "chunk", an, arg, d0, i);
      put(parts[i]);
      return true;
    }
    case 4: {
      Tensor index = indices(s.r[2], {static_cast<int64_t>(1 + s.r[3] % 6)}, len);
      desc += "index_select(" + an + ", " + std::to_string(d0) + ", seed " +
              std::to_string(s.r[2]) + ")";
      put(index_select(A, d0, index));
      return true;
    }
    case 5: {
      Shape is = A.sizes();
      if (nd > 0) is[d0] = 1 + s.r[3] % 5;
      desc += "gather(" + an + ", " + std::to_string(d0) + ", seed " + std::to_string(s.r[2]) + ")";
      put(gather(A, d0, indices(s.r[2], is, len)));
      return true;
    }
    case 6: {
      desc += "layer_norm(" + an + ", last dim)";
      put(layer_norm(A, {nd == 0 ? 1 : A.size(-1)}));
      return true;
    }
    case 7: {  // logits [N, C]: A viewed as 2-D
      Tensor logits = nd >= 2 ? A.flatten().view({-1, A.size(-1)}) : A.reshape({1, -1});
      Tensor target = indices(s.r[2], {logits.size(0)}, logits.size(1), true);
      desc += "cross_entropy(" + an + " as 2-D, seed " + std::to_string(s.r[2]) + ")";
      put(cross_entropy(logits, target));
      return true;
    }
    case 8: {
      Tensor w = nd >= 2 ? A.flatten().view({-1, A.size(-1)}) : A.reshape({-1, 1});
      desc += "embedding(" + an + " as 2-D, seed " + std::to_string(s.r[2]) + ")";
      put(embedding(w, indices(s.r[2], {2, static_cast<int64_t>(1 + s.r[3] % 4)}, w.size(0))));
      return true;
    }
    case 9: {
      const bool causal = s.r[3] & 1;
      const int b = pick(pool, s.r[2], [&](const Tensor& t) {
        return t.dim() == nd && nd >= 2 && t.dtype() == A.dtype() && t.size(-1) == A.size(-1);
      });
      const Tensor& kv = b >= 0 ? pool[b] : A;
      if (nd >= 2 && static_cast<double>(A.numel()) / A.size(-1) * kv.size(-2) > kMaxElements) {
        desc = "(attention scores too big)";
        return true;
      }
      desc += "sdpa(" + an + ", " + (b >= 0 ? T(b) : std::string("same")) +
              (causal ? ", causal)" : ")");
      put(scaled_dot_product_attention(A, kv, kv, causal));
      return true;
    }
    case 10:
      desc += "argmin(" + an + ", " + std::to_string(d0) + ")";
      put(argmin(A, d0, s.r[3] & 1));
      return true;
    case 11: {
      std::vector<int64_t> dims;
      for (int64_t d = 0; d < nd; ++d)
        if ((s.r[2] >> d) & 1) dims.push_back(d);
      desc += "std(" + an + ", dims=" + shape_str(dims) + ")";
      put(kiln::std(A, dims, s.r[3] & 1, s.r[3] & 2));
      return true;
    }
    case 12:
      desc += "all(" + an + ")";
      put(all(A));
      return true;
    case 13:
      desc += "any(" + an + ")";
      put(any(A));
      return true;
    case 14: {
      static const DType ds[] = {kFloat32, kFloat64, kInt64, kInt32, kBool};
      const DType d = ds[s.r[2] % 5];
      const TensorOptions o = TensorOptions().dtype(d);
      const std::string dn(dtype_name(d));
      const Shape& sh = A.sizes();
      switch (s.r[3] % 8) {
        case 0:
          desc += "zeros(" + shape_str(sh) + ", " + dn + ")";
          put(zeros(sh, o));
          break;
        case 1:
          desc += "ones(" + shape_str(sh) + ", " + dn + ")";
          put(ones(sh, o));
          break;
        case 2:
          desc += "full(" + shape_str(sh) + ", " + sc(s.s) + ", " + dn + ")";
          put(full(sh, s.s, o));
          break;
        case 3:
          desc += "arange(" + std::to_string(len) + ", " + dn + ")";
          put(arange(len, o));
          break;
        case 4:
          desc += "linspace(" + std::to_string(s.lo) + ", " + std::to_string(s.hi) + ", " +
                  std::to_string(len) + ")";
          put(linspace(s.lo, s.hi, len, TensorOptions().dtype(is_floating(d) ? d : kFloat32)));
          break;
        case 5:
          desc += "eye(" + std::to_string(std::min<int64_t>(len, 64)) + ", " + dn + ")";
          put(eye(std::min<int64_t>(len, 64), o));
          break;
        case 6:
          desc += "zeros_like(" + an + ")";
          put(zeros_like(A));
          break;
        default:
          desc += "full_like(" + an + ", " + sc(s.s) + ")";
          put(full_like(A, s.s));
          break;
      }
      return true;
    }
    case 15: {
      const int64_t k = static_cast<int64_t>(s.r[2] % 5) - 2;
      desc += std::string(s.r[3] & 1 ? "triu(" : "tril(") + an + ", " + std::to_string(k) + ")";
      put(s.r[3] & 1 ? triu(A, k) : tril(A, k));
      return true;
    }
    case 16: {
      Shape is = A.sizes();
      if (nd > 0) is[d0] = 1 + s.r[3] % 5;
      const int b = pick(pool, s.r[2], [&](const Tensor& t) { return t.dtype() == A.dtype(); });
      desc += "scatter_add(" + an + ", " + std::to_string(d0) + ", src " + T(b) + ")";
      put(scatter_add(A, d0, indices(s.r[2], is, len), b >= 0 ? pool[b].expand(is) : A));
      return true;
    }
    case 17:
      desc += "one_hot(seed " + std::to_string(s.r[2]) + ", " + std::to_string(len) + ")";
      put(one_hot(indices(s.r[2], {static_cast<int64_t>(1 + s.r[3] % 5)}, len), len));
      return true;
    case 18: {  // a chain through several of the above: layer_norm of a cat, then softmax
      desc += "softmax(layer_norm(cat([" + an + ", " + an + "], -1)))";
      Tensor c = cat({A, A}, nd == 0 ? 0 : -1);
      put(softmax(layer_norm(c, {nd == 0 ? 2 : c.size(-1)}), nd == 0 ? 0 : -1));
      return true;
    }
    default: {
      if (nd >= 2 && static_cast<double>(A.numel()) / A.size(-1) * A.size(-2) > kMaxElements) {
        desc = "(A A^T too big)";
        return true;
      }
      desc += "matmul(" + an + ", " + an + ".t)";
      put(matmul(A, nd >= 2 ? A.transpose(-1, -2) : A));
      return true;
    }
  }
}

}  // namespace kiln::fuzz

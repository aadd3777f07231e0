#include "fuzz/run_step.h"

namespace kiln::fuzz {

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
  if (run_pointwise_step(StepContext{s, pool, desc, A, an})) return;
  if (run_extra_step(StepContext{s, pool, desc, A, an})) return;
  switch (s.kind) {
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
      int b = pick(pool, s.r[1], [&](const Tensor& t) {
        if (t.dim() == 0 || nd == 0 || t.dtype() != A.dtype()) return false;
        const int64_t k = A.size(-1);
        return t.dim() == 1 ? t.size(0) == k : t.size(-2) == k;
      });
      const auto numel_of = [](const Shape& sh) {
        double n = 1;
        for (int64_t d : sh) n *= static_cast<double>(d);
        return n;
      };
      if (b >= 0 && numel_of(A.sizes()) / std::max<int64_t>(1, A.size(-1)) *
                            numel_of(pool[b].sizes()) / std::max<int64_t>(1, pool[b].size(-2)) >
                        kMaxElements)
        b = -1;  // an outer product of two long operands: too big
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
      // The target is the pool tensor (a handle: writes go to the storage it shares) or, in
      // about a third of the steps, a strided or offset view of it: a step-2 slice from 1, a
      // transpose, a select, or a narrow from 1 (the write must reach the base's storage).
      Tensor target = A;
      std::string tn = an;
      const uint32_t v = (s.r[3] >> 16) % 12;
      if (nd > 0 && v < 4) {
        const int64_t d0 = dim_of(s.r[2]);
        const int64_t len = A.size(d0);
        if (v == 0) target = A.slice(d0, len > 1 ? 1 : 0, len, 2), tn += ".slice(1::2)";
        if (v == 1) target = A.transpose(0, nd - 1), tn += ".transpose";
        if (v == 2 && len > 0) target = A.select(d0, len - 1), tn += ".select(last)";
        if (v == 3 && len > 1) target = A.narrow(d0, 1, len - 1), tn += ".narrow(1)";
        if (target.dim() != nd || v != 1) tn += "[dim " + std::to_string(d0) + "]";
      }
      // Sources whose dtype the target can hold, except one step in eight (errors compared).
      const bool any_dtype = s.r[3] % 8 == 0;
      const int b = pick(pool, s.r[1], [&](const Tensor& t) {
        return broadcasts_to(t.sizes(), target.sizes()) &&
               (any_dtype || category(t.dtype()) <= category(A.dtype()));
      });
      const std::string bn = b >= 0 ? T(b) + ":" + show(pool[b]) : "";
      static const char* names[] = {"add_",  "sub_",  "mul_",  "div_",   "add_s", "mul_s",
                                    "copy_", "fill_", "zero_", "clamp_", "relu_", "masked_fill_"};
      desc = std::string(names[s.op]) + "(" + tn;
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
            return t.dtype() == kBool && broadcasts_to(t.sizes(), target.sizes());
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

}  // namespace kiln::fuzz

#include "fuzz/hop_execute.h"

#include <atomic>
#include <cmath>
#include <sstream>

#include "fuzz/hop_body.h"
#include "fuzz/run_step.h"
#include "runtime/autograd/grad_mode.h"

namespace kiln::fuzz {
namespace {

using Carry = std::pair<TensorList, TensorList>;

bool numeric(const Tensor& t) { return t.dtype() != kBool; }

Tensor float_leaf(const Shape& shape, const std::vector<double>& data) {
  std::vector<float> v(data.begin(), data.end());
  return from_vector<float>(v, shape);
}

// What one higher-order step sees; `desc` collects the listing line.
struct HopContext {
  const HopStep& h;
  Pool& pool;
  const Tensor& w;
  const std::vector<Region>& regions;
  std::string& desc;

  std::string name(int slot) const { return slot_name(slot) + ":" + show(pool[slot]); }
  Tensor capture() const {
    const int c = pick_any(pool, h.r[3]);
    return h.pool_capture && c >= 0 ? pool[c] : w;
  }
  // A detached Float64 copy that requires grad (the gradient fallback), or t itself.
  Tensor operand(const Tensor& t, Tensor& leaf) const {
    if (!h.grad) return t;
    leaf = t.to(kFloat64).detach();
    leaf.requires_grad_(true);
    return leaf;
  }
  // The result's sum backward, the leaf's gradient into dst2 (after the results are stored).
  void backward(const Tensor& result, const Tensor& leaf) const {
    if (!h.grad) return;
    desc += " backward";
    // Stored detached, so that later steps trace again.
    for (int slot : {h.dst, h.dst2})
      if (pool[slot].defined()) pool[slot] = pool[slot].detach();
    sum(result).backward();
    pool[h.dst2] = leaf.grad();
  }
  Tensor predicate(const Tensor& a, const Tensor& b) const {
    switch (h.op % 4) {
      case 0:
        return gt(sum(a), h.x);
      case 1:
        return lt(amax(b), h.x);
      case 2:
        return ge(mean(a.to(kFloat64)), h.x);
      default:
        return ne(sum(b), h.x);
    }
  }
  // xs with a leading dim: the step's own [T, canon] data or a pool tensor of rank >= 1.
  int xs_slot() const {
    return pick(pool, h.r[2], [](const Tensor& t) { return numeric(t) && t.dim() > 0; });
  }
};

void run_hop_step(const HopContext& c, const Shape& canon) {
  const HopStep& h = c.h;
  Pool& pool = c.pool;
  std::string& desc = c.desc;
  const int a = pick(pool, h.r[0], numeric);
  if (h.kind == HopStep::MutateCapture) {
    desc = "w." + std::string(h.op % 2 ? "mul_(" : "add_(") + std::to_string(h.x) + ")";
    Tensor w = c.w;
    h.op % 2 ? w.mul_(h.x) : w.add_(h.x);
    return;
  }
  if (a < 0) {
    desc = "(no operand)";
    return;
  }
  const Tensor& A0 = pool[a];
  const int b = pick(pool, h.r[1], [&](const Tensor& t) {
    return numeric(t) && broadcastable(t.sizes(), A0.sizes());
  });
  if (b < 0) {  // A0 past kMaxElements is not even broadcastable with itself (seed 12119571)
    desc = "(no operand)";
    return;
  }
  const Tensor B = pool[b];
  Tensor leaf;
  const Tensor A = c.operand(A0, leaf);
  const Tensor cap = c.capture();
  desc = slot_name(h.dst) + " = ";
  const std::string grad = h.grad ? " (grad)" : "";
  switch (h.kind) {
    case HopStep::Cond: {
      desc += "cond#" + std::to_string(h.op % 4) + "(" + c.name(a) + ", " + c.name(b) +
              ", x=" + std::to_string(h.x) + ")" + grad + " " + describe(h.bodies[0]) + " | " +
              describe(h.bodies[1]);
      if (h.two_outputs) desc += " + " + describe(h.bodies[2]) + " | " + describe(h.bodies[3]);
      auto branch = [&](int first) {
        return [&, first](const TensorList& ops) {
          TensorList out{eval_body(h.bodies[first], ops, cap)};
          if (h.two_outputs) out.push_back(eval_body(h.bodies[first + 2], ops, cap));
          return out;
        };
      };
      TensorList out = cond(c.predicate(A, B), branch(0), branch(1), {A, B});
      pool[h.dst] = out[0];
      if (h.two_outputs) pool[h.dst2] = out[1];
      c.backward(out[0], leaf);
      return;
    }
    case HopStep::Scan:
    case HopStep::Map: {
      Shape xs_shape{h.steps};
      xs_shape.insert(xs_shape.end(), canon.begin(), canon.end());
      const int xi = h.data.empty() ? c.xs_slot() : -1;
      if (h.data.empty() && xi < 0) {
        desc = "(no xs)";
        return;
      }
      const Tensor xs = xi >= 0 ? pool[xi] : float_leaf(xs_shape, h.data);
      const std::string xn = xi >= 0 ? c.name(xi) : "own " + shape_str(xs_shape);
      if (h.kind == HopStep::Map) {
        desc += "map(" + xn + ")" + " " + describe(h.bodies[0]);
        if (h.two_outputs) desc += " + " + describe(h.bodies[1]);
        TensorList out = map(
            [&](const TensorList& x) {
              TensorList o{eval_body(h.bodies[0], x, cap)};
              if (h.two_outputs) o.push_back(eval_body(h.bodies[1], x, cap));
              return o;
            },
            {xs});
        pool[h.dst] = out[0];
        if (h.two_outputs) pool[h.dst2] = out[1];
        return;
      }
      Shape slice = xs.sizes();
      slice.erase(slice.begin());
      if (!broadcastable(A.sizes(), slice)) {
        desc = "(no carry)";
        return;
      }
      const Tensor init = A.to(h.dtype).expand(broadcast_shape(A.sizes(), slice));
      desc += "scan(init " + c.name(a) + " as " + std::string(dtype_name(h.dtype)) +
              shape_str(init.sizes()) + ", " + xn + ")" + grad + " " + describe(h.bodies[0]) +
              " ys " + describe(h.bodies[1]);
      auto [carry, ys] = scan(
          [&](const TensorList& cr, const TensorList& x) {
            Tensor next = eval_body(h.bodies[0], {cr[0], x[0]}, cap);
            return Carry{{next}, {eval_body(h.bodies[1], {next, x[0]}, cap)}};
          },
          {init}, {xs});
      pool[h.dst] = carry[0];
      pool[h.dst2] = ys[0];
      c.backward(carry[0], leaf);
      return;
    }
    case HopStep::While: {
      desc += "while(" + c.name(a) + " as " + std::string(dtype_name(h.dtype)) + ", count < " +
              std::to_string(h.steps) + ", pred#" + std::to_string(h.op % 3) +
              " x=" + std::to_string(h.x) + ")" + grad + " " + describe(h.bodies[0]);
      const TensorList init{zeros({}, TensorOptions().dtype(kInt64)), A.to(h.dtype).clone()};
      TensorList out = while_loop(
          [&](const TensorList& s) {
            const Tensor& v = s[1];
            Tensor p = h.op % 3 == 0   ? lt(sum(v), h.x)
                       : h.op % 3 == 1 ? lt(amax(abs(v)), std::abs(h.x) + 1.0)
                                       : gt(mean(v), h.x);
            return logical_and(lt(s[0], Scalar(static_cast<int64_t>(h.steps))), p);
          },
          [&](const TensorList& s) {
            return TensorList{add(s[0], Scalar(int64_t{1})), eval_body(h.bodies[0], {s[1]}, cap)};
          },
          init);
      pool[h.dst] = out[1];
      pool[h.dst2] = out[0];
      c.backward(out[1], leaf);
      return;
    }
    case HopStep::RegionCall: {
      const bool two = h.r[3] & 1;
      desc += "region" + std::to_string(h.region) + "(" + c.name(a) +
              (two ? ", " + c.name(b) : "") + ")";
      pool[h.dst] = c.regions[h.region](two ? TensorList{A, B} : TensorList{A})[0];
      return;
    }
    case HopStep::Checkpoint: {
      desc +=
          "checkpoint(" + c.name(a) + ", " + c.name(b) + ")" + grad + " " + describe(h.bodies[0]);
      auto fn = [&](const TensorList& args) {
        return TensorList{eval_body(h.bodies[0], args, cap)};
      };
      if (h.grad) {
        const Tensor out = checkpoint(fn, {A, B})[0];
        pool[h.dst] = out.detach();
        c.backward(out, leaf);
      } else {
        NoGradGuard no_grad;
        pool[h.dst] = checkpoint(fn, {A, B})[0];
      }
      return;
    }
    default:
      return;
  }
}

std::atomic<int> g_runs{0};

}  // namespace

HopRun execute_hop(const HopProgram& p) {
  manual_seed(p.seed);
  HopRun run;
  Pool pool(kPool);
  const Tensor w = float_leaf(p.capture_shape, p.capture_data);
  // Region names are unique per run: a region's trace holds the tensors its body captured (w),
  // which must be this run's.
  const std::string prefix =
      "fuzz_hop." + std::to_string(p.seed) + "." + std::to_string(g_runs++) + ".";
  std::vector<Region> regions;
  for (size_t k = 0; k < p.regions.size(); ++k) {
    const Body* body = &p.regions[k];
    regions.push_back(region(prefix + std::to_string(k), [body, w](const TensorList& args) {
      return TensorList{eval_body(*body, args, w)};
    }));
  }
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const HopStep& h = p.steps[i];
    std::string desc;
    try {
      if (h.kind == HopStep::Plain) {
        run_step(h.plain, pool, run.outcome.log, desc);
      } else {
        run_hop_step(HopContext{h, pool, w, regions, desc}, p.canon);
        if (h.kind != HopStep::MutateCapture && desc.front() != '(') ++run.hop_calls;
      }
    } catch (const Error& e) {
      run.outcome.log.push_back("step " + std::to_string(i) + " (" + desc + ") error: " + e.what());
    }
    run.outcome.trace.push_back(std::to_string(i) + ": " + desc);
  }
  try {
    sync();
  } catch (const Error& e) {
    run.outcome.log.push_back(std::string("final sync error: ") + e.what());
  }
  pool.push_back(w);
  run.outcome.pool = pool_lines(pool);
  pool.clear();
  regions.clear();
  sync();
  return run;
}

std::string hop_listing(const HopProgram& p, const Outcome& eager) {
  std::ostringstream o;
  o << "make_hop_program(" << p.seed << "), canonical shape " << shape_str(p.canon) << ", w "
    << shape_str(p.capture_shape) << "\n";
  for (size_t k = 0; k < p.regions.size(); ++k)
    o << "  region" << k << " = " << describe(p.regions[k]) << "\n";
  for (const std::string& line : eager.trace) o << "  " << line << "\n";
  return o.str();
}

}  // namespace kiln::fuzz

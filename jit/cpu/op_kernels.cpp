#include "jit/cpu/op_kernels.h"

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "jit/cpu/code_memory.h"
#include "jit/cpu/cpu_target.h"
#include "jit/loop/kernel_cache.h"
#include "runtime/config.h"
#include "runtime/logging.h"
#include "tracer/region_runner.h"

namespace kiln::jit {

namespace {

KernelCache<KernelFn>& op_cache() {
  static auto* c = new KernelCache<KernelFn>();  // never destroyed: planning may run during exit
  return *c;
}

// The variant an op kernel renders as: the CPU target's (its unroll and pipelining) with the
// given layout.
KernelVariant op_variant(const LoopKernel& source, std::span<const InnerLayout> layout,
                         JitIsa isa) {
  KernelVariant v = cpu_target_variant(source, isa);
  v.layout.assign(layout.begin(), layout.end());
  return v;
}

// The source's encoding and everything its rendering depends on, as render_cache.cpp keys a
// kernel (a hit compares every word).
std::vector<uint64_t> op_key(const LoopKernel& source, const KernelVariant& v) {
  std::vector<uint64_t> key = encode(source);
  key.push_back(0x6f703a0000000000ull | static_cast<uint64_t>(v.isa));  // "op:" + isa
  key.push_back(static_cast<uint64_t>(v.unroll));
  key.push_back(v.pipeline);
  key.push_back(config().jit_assembler);
  for (InnerLayout l : v.layout) key.push_back(static_cast<uint64_t>(l));
  return key;
}

// Requests queued for the planning thread and not rendered yet (each key once).
struct Pending {
  std::mutex mu;
  std::set<std::vector<uint64_t>> keys;
};
Pending& pending() {
  static auto* p = new Pending();
  return *p;
}

LoopKernel unary_source(ExprOp op, DType t) {
  LoopKernel s;
  s.inputs = {t};
  s.stores = {s.unary(op, s.load(0))};
  return s;
}

// (Loads made in order, as op_kernel_source makes them: arguments of one call are evaluated in
// an unspecified order, and GCC's right to left gave another encoding of the same kernel.)
LoopKernel binary_source(ExprOp op, DType t) {
  LoopKernel s;
  s.inputs = {t, t};
  const int32_t a = s.load(0), b = s.load(1);
  s.stores = {s.binary(op, a, b)};
  return s;
}

// select(mask, a, b) of t.
LoopKernel select_source(DType t) {
  LoopKernel s;
  s.inputs = {DType::Bool, t, t};
  const int32_t m = s.load(0), a = s.load(1), b = s.load(2);
  s.stores = {s.select(m, a, b)};
  return s;
}

}  // namespace

LoopKernel op_kernel_source(const LoopKernel& k, int32_t e) {
  const Expr& x = k.exprs[static_cast<size_t>(e)];
  const int n = expr_arity(x.op);
  const int32_t from[3] = {x.a, x.b, x.c};
  int32_t to[3] = {-1, -1, -1};
  LoopKernel s;
  for (int i = 0; i < n; ++i) {
    const Expr& operand = k.exprs[static_cast<size_t>(from[i])];
    if (x.op == ExprOp::Pow && i == 1 && operand.op == ExprOp::Const) {
      to[i] = static_cast<int32_t>(s.exprs.size());
      s.exprs.push_back(operand);  // the exponent's class decides the rendering (pow_scalar)
      continue;
    }
    s.inputs.push_back(operand.type);
    to[i] = s.load(static_cast<int32_t>(s.inputs.size()) - 1);
  }
  Expr y = x;
  y.a = to[0];
  y.b = to[1];
  y.c = to[2];
  s.exprs.push_back(y);
  s.stores = {static_cast<int32_t>(s.exprs.size()) - 1};
  return s;
}

LoopKernel copy_kernel_source(DType t) {
  LoopKernel s;
  s.inputs = {t};
  s.stores = {s.load(0)};
  return s;
}

KernelFn find_op_kernel(const LoopKernel& source, std::span<const InnerLayout> layout, JitIsa isa) {
  return op_cache().lookup(op_key(source, op_variant(source, layout, isa)), nullptr);
}

int render_op_kernels(const std::vector<OpKernelRequest>& requests, JitIsa isa) {
  const RenderPath path = config().jit_assembler ? RenderPath::Auto : RenderPath::Compiler;
  int rendered = 0;
  for (const OpKernelRequest& r : requests) {
    const KernelVariant v = op_variant(r.source, r.layout, isa);
    const std::vector<uint64_t> key = op_key(r.source, v);
    if (op_cache().lookup(key, nullptr) == nullptr) {
      try {
        // Outside the cache's lock, so that lookups never wait on a render (two threads may
        // render one op kernel: the second's code is kept unused).
        r.source.verify();
        const RenderedKernel made = render_cpu_kernel(cpu_code_runtime(), r.source, v, false, path);
        op_cache().put(key, made.fn);
        ++rendered;
      } catch (const std::exception& e) {
        KILN_DEBUG(Jit, "cpu op kernel: not rendered ({}):\n{}", e.what(), to_text(r.source));
      }
    }
    std::lock_guard lock(pending().mu);
    pending().keys.erase(key);
  }
  return rendered;
}

void render_op_kernels_in_background(std::vector<OpKernelRequest> requests, JitIsa isa) {
  std::vector<OpKernelRequest> fresh;
  {
    std::lock_guard lock(pending().mu);
    for (OpKernelRequest& r : requests)
      if (pending().keys.insert(op_key(r.source, op_variant(r.source, r.layout, isa))).second)
        fresh.push_back(std::move(r));
  }
  if (fresh.empty()) return;
  tracer::run_in_background(
      [fresh = std::move(fresh), isa] { (void)render_op_kernels(fresh, isa); });
}

std::vector<OpKernelRequest> common_op_kernels() {
  using L = InnerLayout;
  constexpr L C = L::Contiguous;
  std::vector<OpKernelRequest> out;
  const CpuTarget& target = cpu_target();
  const DType f = DType::Float32;
  for (ExprOp op : {ExprOp::Mul, ExprOp::Add, ExprOp::Sub, ExprOp::Div, ExprOp::Maximum,
                    ExprOp::Minimum, ExprOp::Pow})
    out.push_back({binary_source(op, f), {C, C, C}});
  for (ExprOp op :
       {ExprOp::Tanh,  ExprOp::Exp,        ExprOp::Erf,      ExprOp::Neg,   ExprOp::Sigmoid,
        ExprOp::Silu,  ExprOp::Gelu,       ExprOp::GeluTanh, ExprOp::Relu,  ExprOp::Sqrt,
        ExprOp::Rsqrt, ExprOp::Reciprocal, ExprOp::Square,   ExprOp::Abs,   ExprOp::Log,
        ExprOp::Log1p, ExprOp::Expm1,      ExprOp::Sign,     ExprOp::Floor, ExprOp::Ceil,
        ExprOp::Round})
    if (target.supports(op, f)) out.push_back({unary_source(op, f), {C, C}});
  for (ExprOp op : {ExprOp::Gt, ExprOp::Lt, ExprOp::Ge, ExprOp::Le, ExprOp::Eq, ExprOp::Ne})
    out.push_back({binary_source(op, f), {C, C, C}});
  out.push_back({select_source(f), {C, C, C, C}});
  // Losses and cross-entropy (2026-12-05, kiln-perf's mlp_train missed these): Float64
  // arithmetic of the means, labels compared as integers.
  for (ExprOp op : {ExprOp::Mul, ExprOp::Add, ExprOp::Sub, ExprOp::Div})
    out.push_back({binary_source(op, DType::Float64), {C, C, C}});
  for (DType t : {DType::Int64, DType::Int32})
    for (ExprOp op : {ExprOp::Eq, ExprOp::Ne}) out.push_back({binary_source(op, t), {C, C, C}});
  out.push_back({select_source(DType::Float64), {C, C, C, C}});
  out.push_back({binary_source(ExprOp::And, DType::Bool), {C, C, C}});
  out.push_back({binary_source(ExprOp::Or, DType::Bool), {C, C, C}});
  out.push_back({unary_source(ExprOp::Not, DType::Bool), {C, C}});
  for (auto [from, to] : {std::pair{DType::Bool, f},
                          {f, DType::Float64},
                          {DType::Float64, f},
                          {DType::Int64, f},
                          {DType::Int32, f},
                          {DType::Int64, DType::Int32},
                          {DType::Bool, DType::Int64}}) {
    LoopKernel s;
    s.inputs = {from};
    s.stores = {s.cast(s.load(0), to)};
    out.push_back({s, {C, C}});
  }
  for (DType t : {f, DType::Bool, DType::Float64, DType::Int64, DType::Int32})
    for (auto [o, i] : {std::pair{C, C}, {C, L::Broadcast}, {C, L::Strided}, {L::Strided, C}})
      out.push_back({copy_kernel_source(t), {o, i}});
  return out;
}

size_t op_kernel_count() { return op_cache().size(); }

}  // namespace kiln::jit

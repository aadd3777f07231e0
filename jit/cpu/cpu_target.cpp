#include "jit/cpu/cpu_target.h"

#include <fmt/format.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/cpu_kernel.h"
#include "jit/cpu/math.h"
#include "jit/cpu/render.h"
#include "runtime/config.h"
#include "tracer/dump.h"

namespace kiln::jit {

namespace {

// KILN_JIT_PIPELINE=0 turns off the software-pipelined loops (docs/jit.md "Kernels"), read
// once per process: for measuring them against the plain unrolled loop.
bool pipeline_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("KILN_JIT_PIPELINE");
    return v == nullptr || std::string(v) != "0";
  }();
  return on;
}

}  // namespace

std::vector<InnerLayout> all_contiguous(const LoopKernel& k) {
  return std::vector<InnerLayout>(static_cast<size_t>(k.num_operands() + (k.uses_index() ? 1 : 0)),
                                  InnerLayout::Contiguous);
}

KernelVariant cpu_target_variant(const LoopKernel& k, JitIsa isa) {
  KernelVariant v;
  v.isa = isa;
  v.layout = all_contiguous(k);
  v.unroll = config().jit_unroll > 0 && cpu_kernel_unrolls(k) ? int{config().jit_unroll}
                                                              : cpu_kernel_unroll(k, isa);
  v.pipeline = pipeline_enabled();
  return v;
}

const char* CpuTarget::name() const {
  switch (active_jit_isa()) {
    case JitIsa::Avx512:
      return "cpu-avx512";
    case JitIsa::Avx2:
      return "cpu-avx2";
    default:
      return "cpu-sse2";
  }
}

bool CpuTarget::supports(ExprOp op, DType dtype) const {
  if (op == ExprOp::Cast || expr_is_compare(op)) return true;  // from every type
  // Reductions and RowSize exist in row kernels only (the planner's row groups, rendered by
  // row_passes.cpp for Float32 and Float64): a pointwise kernel never has them.
  if (expr_is_reduce(op) || op == ExprOp::RowSize) return false;
  if (!expr_accepts(op, dtype)) return false;
  return !expr_is_transcendental(op) || cpu_math_supported(op);
}

std::shared_ptr<CompiledKernel> CpuTarget::compile(const LoopKernel& k) { return compile(k, {}); }

bool CpuTarget::launches_column_reduction(const DimVector& sizes, int reduced_dims,
                                          int inner_dims) const {
  return column_reduction_launches(sizes, reduced_dims, inner_dims);
}

std::shared_ptr<CompiledKernel> CpuTarget::compile(const LoopKernel& k, const CpuLaunchHint& hint) {
  k.verify();
  if (tracer::dump_settings().wants(tracer::DumpKind::Code))  // KILN_DUMP=code
    tracer::dump_text(tracer::DumpKind::Code,
                      fmt::format("kernel-{:016x}.txt", hash_words(encode(k))), to_text(k));
  auto kernel = std::make_shared<CpuKernel>(k, active_jit_isa(), hint);
  kernel->start_tier_up();
  return kernel;
}

CpuTarget& cpu_target() {
  static CpuTarget t;
  return t;
}

}  // namespace kiln::jit

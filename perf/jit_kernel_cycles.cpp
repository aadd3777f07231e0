// kiln-jit-cycles: the compute cost of one CPU JIT kernel per element, apart from memory and
// from other load on the machine. The kernel is kiln-perf's gelu workload as the planner fuses
// it (tanh-approximate GELU out of primitives, Float32), rendered for each ISA the host runs and
// each unroll 1-4 (KernelVariant::unroll). For each rendering it prints:
//   - instructions per element of the vector loop (the unrolled one), counted in the rendered
//     assembly with the loop's compare, branches and pointer updates: no load disturbs it;
//   - the rendering time (asmjit Compiler and JitRuntime::add, the fastest of 30);
//   - TSC cycles and ns per element on one thread, over n elements that stay in L1 (default 2048:
//     16 KiB in and out), the minimum over many timed launches (a launch that another process
//     interrupts is slower, never faster, so the minimum is the undisturbed figure).
// Usage: kiln-jit-cycles [n] [trials]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/render.h"
#include "jit/loop/loop_kernel.h"
#include "perf/tsc.h"

using namespace kiln;
using namespace kiln::jit;

namespace {

// ((0.5 * x) * (1 + tanh((x + ((0.044715 * x) * x) * x) * 0.79788456))), as
// perf/workloads/gelu.cpp.
LoopKernel gelu_kernel() {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 1);
  const int32_t x = k.load(0);
  auto c = [&](double v) { return k.constant(v, DType::Float32); };
  auto mul = [&](int32_t a, int32_t b) { return k.binary(ExprOp::Mul, a, b); };
  auto add = [&](int32_t a, int32_t b) { return k.binary(ExprOp::Add, a, b); };
  const int32_t cube = mul(mul(mul(c(0.044715), x), x), x);
  const int32_t t = k.unary(ExprOp::Tanh, mul(add(x, cube), c(0.79788456)));
  k.stores = {mul(mul(c(0.5), x), add(c(1.0), t))};
  return k;
}

// The instructions of the first innermost loop of an asmjit listing closed by a `jmp` back to
// its label (the unrolled loop where there is one, else the one-vector loop), counting its
// compare and branches.
int loop_instructions(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#' && line[0] != '.') lines.push_back(line);
  int since_label = -1;
  std::string label;
  for (const std::string& l : lines) {
    if (l.back() == ':') {
      label = l.substr(0, l.size() - 1);
      since_label = 0;
      continue;
    }
    if (since_label < 0) continue;
    ++since_label;
    if (l == "jmp " + label) return since_label;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 2048;
  const int trials = argc > 2 ? std::atoi(argv[2]) : 4000;
  const LoopKernel k = gelu_kernel();
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[i] = -6.0f + 12.0f * static_cast<float>(i) / n;

  const double ticks_per_ns = kiln::perf::tsc_ticks_per_ns();

  std::printf(
      "gelu (tanh form, out of primitives), Float32, n = %lld (2048: in L1), min of %d launches, "
      "TSC %.2f GHz\n",
      static_cast<long long>(n), trials, ticks_per_ns);
  std::printf("%-7s %6s %14s %16s %12s %10s %11s\n", "isa", "unroll", "insts/element",
              "TSC cycles/elem", "ns/element", "code bytes", "compile us");
  struct Row {
    JitIsa isa;
    bool pipeline;
  };
  for (Row row : {Row{JitIsa::Avx512, false}, Row{JitIsa::Avx512, true}, Row{JitIsa::Avx2, false},
                  Row{JitIsa::Sse2, false}}) {
    const JitIsa isa = row.isa;
    if (isa > host_jit_isa()) continue;
    const int lanes = cpu_kernel_lanes(k, isa);
    asmjit::JitRuntime rt;
    std::vector<RenderedKernel> r;
    std::vector<int> insts;
    std::vector<double> compile_us;
    for (int unroll = 1; unroll <= 4; ++unroll) {
      const KernelVariant v{isa,   {InnerLayout::Contiguous, InnerLayout::Contiguous},
                            false, unroll,
                            false, row.pipeline};
      r.push_back(render_cpu_kernel(rt, k, v, true));
      insts.push_back(loop_instructions(r.back().assembly));
      // Rendering time (no listing), the fastest of 30: what a compile costs undisturbed.
      double best = 1e30;
      for (int i = 0; i < 30; ++i) {
        asmjit::JitRuntime scratch;
        const auto t0 = std::chrono::steady_clock::now();
        render_cpu_kernel(scratch, k, v, false);
        best = std::min(
            best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                      .count());
      }
      compile_us.push_back(best);
    }
    for (int unroll = 1; unroll <= 4; ++unroll) {
      char* ptrs[2] = {reinterpret_cast<char*>(y.data()), reinterpret_cast<char*>(x.data())};
      const int64_t inner[2] = {4, 4}, outer[2] = {0, 0};
      const uint64_t best = kiln::perf::min_tsc_ticks(
          trials, [&] { r[unroll - 1].fn(ptrs, inner, outer, n, 1, nullptr); });
      const double cyc = double(best) / n;
      std::printf("%-7s %6d %14.2f %16.3f %12.3f %10zu %11.1f\n",
                  row.pipeline ? "avx512p" : jit_isa_name(isa), unroll,
                  double(insts[unroll - 1]) / (unroll * lanes), cyc, cyc / ticks_per_ns,
                  r[unroll - 1].code_bytes, compile_us[unroll - 1]);
    }
  }
  return 0;
}

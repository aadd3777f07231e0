// kiln-jit-compile: the rendering time of CPU JIT kernels, warm and cold. kiln-perf's
// `compile µs` are renders right after a job streamed hundreds of MB and ran its eager code;
// this tool reproduces those conditions on its own: a "warm" render follows another render of
// a kernel; a "cold" one follows a pass over a 256 MiB buffer; an "other" one follows that pass
// and some eager work (a product through OpenBLAS, a softmax, a gelu, sums: other code through
// the core's caches and branch predictors). Measured 2026-12-03 (docs/performance.md): flushing
// every loaded object's code from the caches (clflush) before a render changed nothing against
// "cold", while the eager work raised renders 1-3x over it; kiln-perf's in-situ renders are
// slower still (a job's first render 3-5x "cold"), so "other" approaches, not reproduces, them.
// An "idle" render follows 50 ms of sleep: measured 2026-12-03 evening, an idle of 10 ms or more
// made renders 2-3x slower than warm ones, as slow as after the 256 MiB stream or slower (the
// core's caches and predictors lost while the vCPU idles), 0.1-1 ms changed nothing.
// Kernels: gelu's (tanh form out of primitives, Float32, as the planner fuses
// perf/workloads/gelu.cpp) in its contiguous and streaming variants, a short add-mul chain,
// softmax's and layer_norm's row kernels, a pow, a random draw, sin + cos (a call in the body)
// and an integer pow (a loop in the body). Prints median and worst per kernel and state.
// Usage: kiln-jit-compile [renders] [warm|cold|other|idle|all] [auto|compiler|assembler|baseline]
// (default 40 per kernel and state, all states, the target's own choice of emitter: render.h
// RenderPath; the `path` column says which emitter rendered the kernels). `baseline` times the
// baseline tier's code instead (baseline_kernel.h, baseline_row_kernel.h: its op kernels rendered
// first, as the warm-up renders them); a kernel it declines prints `declined`.
// Measured 2026-12-05 (2-core Zen 5; docs/jit.md "The baseline tier"): baseline code in 1.5-15 µs
// warm, 7-35 cold, against renders of 3-70 and 20-130.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "jit/cpu/baseline_kernel.h"
#include "jit/cpu/baseline_row_kernel.h"
#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/op_kernels.h"
#include "jit/cpu/render.h"
#include "jit/cpu/sample_kernels.h"
#include "jit/loop/loop_kernel.h"
#include "kiln/kiln.h"

using namespace kiln;
using namespace kiln::jit;

namespace {

// Touches every cache line of a buffer larger than the caches, as a workload's job does.
void stream(std::vector<char>& buf) {
  for (size_t i = 0; i < buf.size(); i += 64) buf[i] = static_cast<char>(buf[i] + 1);
}

// Eager work between renders: other code through the core's caches and branch predictors.
void other_code() {
  static kiln::Tensor x = kiln::randn({512, 256});
  static kiln::Tensor w = kiln::randn({256, 256});
  kiln::Tensor y = kiln::softmax(x.matmul(w), -1);
  kiln::Tensor z = kiln::gelu(y) + kiln::sum(x, {0});
  volatile float s = z.sum().item<float>();
  (void)s;
}

}  // namespace

int main(int argc, char** argv) {
  const int renders = argc > 1 ? std::atoi(argv[1]) : 40;
  const std::string only = argc > 2 && std::string(argv[2]) != "all" ? argv[2] : "";
  const std::string path_name = argc > 3 ? argv[3] : "auto";
  const bool baseline = path_name == "baseline";
  const RenderPath path = path_name == "compiler"    ? RenderPath::Compiler
                          : path_name == "assembler" ? RenderPath::Assembler
                                                     : RenderPath::Auto;
  const JitIsa isa = host_jit_isa();
  if (baseline) (void)render_op_kernels(common_op_kernels(), isa);
  std::vector<char> big(size_t{256} << 20, 1);
  asmjit::JitRuntime rt;
  struct Case {
    const char* name;
    LoopKernel (*make)(double);
    bool streaming;
  };
  std::printf("isa %s, %d renders per row (each a kernel with new constants: no cache)\n",
              jit_isa_name(isa), renders);
  std::printf("%-18s %-5s %6s %10s %10s %10s %9s\n", "kernel", "state", "unroll", "bytes",
              "median us", "worst us", "path");
  int serial = 0;
  for (const Case& c :
       {Case{"gelu", sample_kernels::gelu, false},
        Case{"gelu streaming", sample_kernels::gelu, true},
        Case{"add-mul", sample_kernels::axpb, false},
        Case{"softmax row", sample_kernels::softmax_row, false},
        Case{"layernorm row", sample_kernels::layernorm_row, false},
        Case{"pow", sample_kernels::pow, false}, Case{"rand", sample_kernels::rand, false},
        Case{"sin + cos", sample_kernels::sin_cos, false},
        Case{"int pow", sample_kernels::int_pow, false}}) {
    for (int state : {0, 1, 2, 3}) {
      const bool cold = state == 1 || state == 2;
      const char* state_name = state == 0   ? "warm"
                               : state == 1 ? "cold"
                               : state == 2 ? "other"
                                            : "idle";
      if (!only.empty() && only != state_name) continue;
      std::vector<double> us;
      size_t bytes = 0;
      int unroll = 1;
      bool assembled = true;
      for (int i = 0; i < renders; ++i) {
        const double c0 = 0.044715 + 1e-6 * ++serial;
        const LoopKernel k = c.make(c0);
        unroll = cpu_kernel_unroll(k, isa);
        KernelVariant v{isa, all_contiguous(k), c.streaming, unroll};
        if (cold) stream(big);
        if (state == 2) other_code();
        if (state == 3) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        const auto t0 = std::chrono::steady_clock::now();
        if (baseline) {
          const bool made = k.has_reduce() ? BaselineRowKernel::make(k, isa) != nullptr
                                           : BaselineKernel::make(k, isa) != nullptr;
          us.push_back(
              std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                  .count());
          assembled = assembled && made;
          continue;
        }
        RenderedKernel r = render_cpu_kernel(rt, k, v, false, path);
        assembled = assembled && r.assembler;
        us.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
        bytes = r.code_bytes;
        rt.release(r.fn);
      }
      std::sort(us.begin(), us.end());
      std::printf("%-18s %-5s %6d %10zu %10.1f %10.1f %9s\n", c.name, state_name, unroll, bytes,
                  us[us.size() / 2], us.back(),
                  baseline ? (assembled ? "baseline" : "declined")
                           : (assembled ? "assembler" : "compiler"));
    }
  }
  return 0;
}

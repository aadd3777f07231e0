// kiln-jit-compile: the rendering time of CPU JIT kernels, warm and cold. kiln-perf's
// `compile µs` are renders right after a job streamed hundreds of MB (caches and TLBs cold);
// this tool reproduces both conditions on its own: a "warm" render follows another render of
// a kernel; a "cold" one follows a pass over a 256 MiB buffer. Kernels: gelu's (tanh form out
// of primitives, Float32, as the planner fuses perf/workloads/gelu.cpp) in its contiguous and
// streaming variants, a short add-mul chain, softmax's and layer_norm's row kernels, a pow and a
// random draw. Prints median and worst per kernel and state.
// Usage: kiln-jit-compile [renders] [warm|cold|both] [auto|compiler|assembler]
// (default 40 per kernel and state, both states, the target's own choice of emitter: render.h
// RenderPath; the `path` column says which emitter rendered the kernels)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/render.h"
#include "jit/loop/loop_kernel.h"

using namespace kiln;
using namespace kiln::jit;

namespace {

LoopKernel gelu_kernel(double c0) {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 1);
  const int32_t x = k.load(0);
  auto c = [&](double v) { return k.constant(v, DType::Float32); };
  auto mul = [&](int32_t a, int32_t b) { return k.binary(ExprOp::Mul, a, b); };
  auto add = [&](int32_t a, int32_t b) { return k.binary(ExprOp::Add, a, b); };
  const int32_t cube = mul(mul(mul(c(c0), x), x), x);
  const int32_t t = k.unary(ExprOp::Tanh, mul(add(x, cube), c(0.79788456)));
  k.stores = {mul(mul(c(0.5), x), add(c(1.0), t))};
  return k;
}

LoopKernel axpb_kernel(double c0) {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 2);
  const int32_t x = k.load(0), y = k.load(1);
  k.stores = {k.binary(ExprOp::Add, k.binary(ExprOp::Mul, x, k.constant(c0, DType::Float32)), y)};
  return k;
}

// softmax's row kernel, as the planner fuses perf/workloads/softmax.cpp: max, exp(x - max), sum,
// exp(x - max) * (1 / sum) (c0: a scale on x, new per render).
LoopKernel softmax_kernel(double c0) {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 1);
  const int32_t x = k.binary(ExprOp::Mul, k.load(0), k.constant(c0, DType::Float32));
  const int32_t e = k.unary(ExprOp::Exp, k.binary(ExprOp::Sub, x, k.reduce(ExprOp::ReduceMax, x)));
  const int32_t r =
      k.binary(ExprOp::Div, k.constant(1.0, DType::Float32), k.reduce(ExprOp::ReduceSum, e));
  k.stores = {k.binary(ExprOp::Mul, e, r)};
  return k;
}

// layer_norm's row kernel without affine parameters: (x - mean) * rsqrt(var + eps).
LoopKernel layernorm_kernel(double eps) {
  const DType f = DType::Float32;
  LoopKernel k = LoopKernel::uniform(f, 1);
  const int32_t x = k.load(0);
  const int32_t m = k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, x), k.row_size(f));
  const int32_t d = k.binary(ExprOp::Sub, x, m);
  const int32_t v = k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, k.binary(ExprOp::Mul, d, d)),
                             k.row_size(f));
  k.stores = {k.binary(ExprOp::Mul, d,
                       k.unary(ExprOp::Rsqrt, k.binary(ExprOp::Add, v, k.constant(eps, f))))};
  return k;
}

// x ** y + c0 (Float32): the double-T log and exp of vecmath::pow, 6-7 KB of code.
LoopKernel pow_kernel(double c0) {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 2);
  k.stores = {k.binary(ExprOp::Add, k.binary(ExprOp::Pow, k.load(0), k.load(1)),
                       k.constant(c0, DType::Float32))};
  return k;
}

// A uniform draw plus an input times c0 (Float32): Philox4x32-10.
LoopKernel rand_kernel(double c0) {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 1, 4);
  k.params = {DType::Int32, DType::Int32, DType::Int32, DType::Int32};
  k.stores = {k.binary(ExprOp::Add, k.rand_uniform(0, DType::Float32),
                       k.binary(ExprOp::Mul, k.load(0), k.constant(c0, DType::Float32)))};
  return k;
}

// Touches every cache line of a buffer larger than the caches, as a workload's job does.
void stream(std::vector<char>& buf) {
  for (size_t i = 0; i < buf.size(); i += 64) buf[i] = static_cast<char>(buf[i] + 1);
}

}  // namespace

int main(int argc, char** argv) {
  const int renders = argc > 1 ? std::atoi(argv[1]) : 40;
  const std::string only = argc > 2 && std::string(argv[2]) != "both" ? argv[2] : "";
  const std::string path_name = argc > 3 ? argv[3] : "auto";
  const RenderPath path = path_name == "compiler"    ? RenderPath::Compiler
                          : path_name == "assembler" ? RenderPath::Assembler
                                                     : RenderPath::Auto;
  const JitIsa isa = host_jit_isa();
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
       {Case{"gelu", gelu_kernel, false}, Case{"gelu streaming", gelu_kernel, true},
        Case{"add-mul", axpb_kernel, false}, Case{"softmax row", softmax_kernel, false},
        Case{"layernorm row", layernorm_kernel, false}, Case{"pow", pow_kernel, false},
        Case{"rand", rand_kernel, false}}) {
    for (bool cold : {false, true}) {
      if (!only.empty() && only != (cold ? "cold" : "warm")) continue;
      std::vector<double> us;
      size_t bytes = 0;
      int unroll = 1;
      bool assembled = true;
      for (int i = 0; i < renders; ++i) {
        const double c0 = 0.044715 + 1e-6 * ++serial;
        const LoopKernel k = c.make(c0);
        unroll = cpu_kernel_unroll(k, isa);
        KernelVariant v{isa,
                        std::vector<InnerLayout>(
                            static_cast<size_t>(k.num_operands() + (k.uses_index() ? 1 : 0)),
                            InnerLayout::Contiguous),
                        c.streaming, unroll};
        if (cold) stream(big);
        const auto t0 = std::chrono::steady_clock::now();
        RenderedKernel r = render_cpu_kernel(rt, k, v, false, path);
        assembled = assembled && r.assembler;
        us.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
        bytes = r.code_bytes;
        rt.release(r.fn);
      }
      std::sort(us.begin(), us.end());
      std::printf("%-18s %-5s %6d %10zu %10.1f %10.1f %9s\n", c.name, cold ? "cold" : "warm",
                  unroll, bytes, us[us.size() / 2], us.back(),
                  assembled ? "assembler" : "compiler");
    }
  }
  return 0;
}

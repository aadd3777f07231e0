// kiln-jit-row-cycles: the compute cost of the CPU JIT's row kernels per element, apart from
// memory and from other load on the machine: softmax (amax/exp/sum/div) and layer norm
// (mean/var/sqrt, w and b) built as the planner fuses perf/workloads/{softmax,layernorm}.cpp,
// rendered for each ISA the host runs, launched on `rows` rows of `n` Float32 elements that stay
// in L1/L2 (default 4 x 1024: 16 KiB in, 16 KiB out), one thread, normal stores. Prints TSC
// cycles per element, the minimum over many launches (an interrupted launch is slower, never
// faster), and the rendering's code size.
// Usage: kiln-jit-row-cycles [n] [rows] [trials] [asm|stream]   (asm: also print each AVX-512
// listing; stream: non-temporal element stores where the launcher would take them, for rows
// that do not fit the caches: 8192 rows of 1024 are kiln-perf's softmax, on one thread)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/render.h"
#include "jit/cpu/render_reduce.h"
#include "jit/loop/loop_kernel.h"
#include "jit/loop/row_program.h"
#include "perf/tsc.h"
#include "runtime/config.h"

using namespace kiln;
using namespace kiln::jit;

namespace {

// exp(x - amax(x)) / sum(exp(x - amax(x))), as the planner fuses perf/workloads/softmax.cpp.
LoopKernel softmax_kernel() {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 1);
  const int32_t x = k.load(0);
  const int32_t m = k.reduce(ExprOp::ReduceMax, x);
  const int32_t e = k.unary(ExprOp::Exp, k.binary(ExprOp::Sub, x, m));
  const int32_t s = k.reduce(ExprOp::ReduceSum, e);
  k.stores = {k.binary(ExprOp::Div, e, s)};
  return k;
}

// (x - mean) / sqrt(var + 1e-5) * w + b, as the planner fuses perf/workloads/layernorm.cpp
// (the mean's sum appears twice: once for the mean, once inside var).
LoopKernel layernorm_kernel() {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 3);
  const int32_t x = k.load(0);
  auto mean_of = [&](int32_t v) {
    return k.binary(ExprOp::Div, k.reduce(ExprOp::ReduceSum, v), k.row_size(DType::Float32));
  };
  const int32_t mu = mean_of(x);
  const int32_t d = k.binary(ExprOp::Sub, x, mean_of(x));
  const int32_t var = mean_of(k.binary(ExprOp::Mul, d, d));
  const int32_t sd =
      k.unary(ExprOp::Sqrt, k.binary(ExprOp::Add, var, k.constant(1e-5, DType::Float32)));
  const int32_t y = k.binary(ExprOp::Div, k.binary(ExprOp::Sub, x, mu), sd);
  k.stores = {k.binary(ExprOp::Add, k.binary(ExprOp::Mul, y, k.load(1)), k.load(2))};
  return k;
}

// Parts of softmax's work, to see where its cycles go: the max pass alone; the sum of exps
// alone (row values, stored once per row); the sum alone; x / sum(x) (the sum, then the
// element pass's division). One Reduce of x, or of exp(x):
LoopKernel reduce_kernel(ExprOp op, bool of_exp) {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 1);
  const int32_t x = k.load(0);
  k.stores = {k.reduce(op, of_exp ? k.unary(ExprOp::Exp, x) : x)};
  return k;
}

LoopKernel div_sum_kernel() {
  LoopKernel k = LoopKernel::uniform(DType::Float32, 1);
  const int32_t x = k.load(0);
  k.stores = {k.binary(ExprOp::Div, x, k.reduce(ExprOp::ReduceSum, x))};
  return k;
}

struct Case {
  const char* name;
  LoopKernel k;
};

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 1024;
  const int64_t rows = argc > 2 ? std::atoll(argv[2]) : 4;
  const int trials = argc > 3 ? std::atoi(argv[3]) : 2000;
  const bool listing = argc > 4 && std::string(argv[4]) == "asm";
  const bool stream = argc > 4 && std::string(argv[4]) == "stream";
  // x and y from a cache line on (64 more floats each), as the launcher's streaming needs.
  std::vector<float> xbuf(static_cast<size_t>(n * rows) + 64), ybuf(xbuf.size()), w(n), b(n);
  auto line = [](std::vector<float>& v) {
    return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t{63});
  };
  const std::span<float> x(line(xbuf), static_cast<size_t>(n * rows)), y(line(ybuf), x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = -8.0f + 16.0f * static_cast<float>(i) / x.size();
  for (int64_t i = 0; i < n; ++i) w[i] = 0.5f + static_cast<float>(i) / n, b[i] = -w[i];

  const double ticks_per_ns = kiln::perf::tsc_ticks_per_ns();
  std::printf("row kernels, Float32, %lld rows of %lld, min of %d launches, TSC %.2f GHz\n",
              static_cast<long long>(rows), static_cast<long long>(n), trials, ticks_per_ns);
  std::printf("%-10s %-7s %16s %12s %10s\n", "kernel", "isa", "TSC cycles/elem", "ns/element",
              "code bytes");
  for (Case c :
       {Case{"softmax", softmax_kernel()}, Case{"layernorm", layernorm_kernel()},
        Case{"amax", reduce_kernel(ExprOp::ReduceMax, false)},
        Case{"sum(exp)", reduce_kernel(ExprOp::ReduceSum, true)},
        Case{"sum", reduce_kernel(ExprOp::ReduceSum, false)}, Case{"x/sum", div_sum_kernel()}}) {
    const LoopKernel& k = c.k;
    for (JitIsa isa : {JitIsa::Avx512, JitIsa::Avx2, JitIsa::Sse2}) {
      if (isa > host_jit_isa()) continue;
      asmjit::JitRuntime rt;
      // `stream`: non-temporal element stores where the launcher would take them (8 MiB of
      // output or more, rows vector-aligned, a pipelined kernel's carrying pass in aligned pieces).
      bool streaming = stream && !k.row_values()[k.stores[0]] &&
                       n * rows * 4 >= (int64_t{8} << 20) && n % 16 == 0;
      if (const int fuse = row_pipelined_pass(k, isa); streaming && fuse >= 0) {
        int r = 0;
        for (const Expr& e : k.exprs)
          if (expr_is_reduce(e.op) && r++ == fuse)
            streaming = row_pieces_aligned(row_program(e.op, e.type, n), cpu_kernel_lanes(k, isa));
      }
      const KernelVariant v{
          isa,
          std::vector<InnerLayout>(static_cast<size_t>(k.num_operands()), InnerLayout::Contiguous),
          streaming,
          config().jit_unroll > 0 ? int(config().jit_unroll) : cpu_kernel_unroll(k, isa)};
      const RenderedKernel r = render_cpu_kernel(rt, k, v, listing && isa == JitIsa::Avx512);
      if (!r.assembly.empty()) std::printf("%s\n", r.assembly.c_str());
      // The launcher's params (cpu_kernel_reduce.cpp): each Reduce's row program, then the scratch.
      std::vector<std::vector<int64_t>> programs;
      for (const Expr& e : k.exprs)
        if (expr_is_reduce(e.op)) programs.push_back(row_program(e.op, e.type, n));
      std::vector<uint64_t> words;
      for (const auto& p : programs) words.push_back(reinterpret_cast<uintptr_t>(p.data()));
      std::vector<uint64_t> scratch(row_scratch_words(k, isa, n) + 8);
      words.push_back((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
      std::vector<char*> ptrs = {reinterpret_cast<char*>(y.data()),
                                 reinterpret_cast<char*>(x.data())};
      if (k.num_inputs() == 3) {
        ptrs.push_back(reinterpret_cast<char*>(w.data()));
        ptrs.push_back(reinterpret_cast<char*>(b.data()));
      }
      const std::vector<int64_t> inner(ptrs.size(), 4);
      std::vector<int64_t> outer(ptrs.size(), n * 4);
      if (k.num_inputs() == 3) outer[2] = outer[3] = 0;
      if (k.row_values()[k.stores[0]]) outer[0] = 4;  // one element per row
      const uint64_t best = kiln::perf::min_tsc_ticks(
          trials, [&] { r.fn(ptrs.data(), inner.data(), outer.data(), n, rows, words.data()); });
      const double cyc = double(best) / double(n * rows);
      std::printf("%-10s %-7s %16.3f %12.3f %10zu\n", c.name, jit_isa_name(isa), cyc,
                  cyc / ticks_per_ns, r.code_bytes);
    }
  }
  return 0;
}

// Renders one loop kernel to x86 machine code with asmjit's Compiler, for one ISA and one inner
// layout (how each operand moves along the innermost dim). The function walks a 2-D index space:
//   for o in [0, n_outer): for i in [0, n_inner): out_k[o, i] = expr_k(in_j[o, i], ...)
// with byte strides per operand for both dims (the launcher, cpu_kernel.cpp, coalesces any rank to
// this). Contiguous and broadcast inner operands get a vector loop (optionally unrolled, with
// the copies interleaved: KernelVariant::unroll) with a masked (AVX-512) or scalar (AVX2, SSE2)
// tail; any strided operand makes the inner loop scalar. Operands may have
// any dtype (Bool as bytes 0 / 1); the lane count is set by the kernel's widest type.
#pragma once
#include <asmjit/x86.h>

#include <cstdint>
#include <string>
#include <vector>

#include "jit/cpu/call_targets.h"
#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/kernel_compiler.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

enum class InnerLayout : uint8_t { Contiguous, Broadcast, Strided };

using KernelFn = void (*)(char* const* ptrs, const int64_t* inner_strides,
                          const int64_t* outer_strides, int64_t n_inner, int64_t n_outer,
                          const void* params);

struct RenderedKernel {
  KernelFn fn = nullptr;
  size_t code_bytes = 0;
  std::string assembly;    // filled when asked (KILN_DUMP=...asm)
  bool assembler = false;  // rendered by the fast path (RenderPath)
  std::string fallback;    // why the fast path gave the kernel up, when it did
  // The code runs at any address once each of `addresses` holds its target's address there
  // (the fast path's code, without relocations: disk_cache.h); the Compiler's: false.
  bool relocatable = false;
  std::vector<CodeAddress> addresses;  // the callees' addresses in the code (call_targets.h)
};

// How a kernel is rendered. Kernels are emitted once, by the same code, onto one of two emitters:
//   - asmjit's x86::Compiler: virtual registers, its register allocator (~70% of a render),
//     calls and spills handled; every kernel can take it;
//   - the fast path: the instructions recorded on virtual registers, registers assigned by a
//     linear scan (reg_alloc.h), encoded by asmjit's Assembler (recording_assembler.h). It takes
//     every kernel (loops in bodies, sin/cos's call through call_block included), and gives up
//     (Unsupported: registers running out, a form it does not encode) by throwing before
//     anything reaches the runtime.
// Auto: the fast path, the Compiler when it gives up (RenderedKernel::fallback says why). Compiler
// and Assembler force one (Assembler throws when the fast path gives up; for tests and
// kiln-jit-compile).
enum class RenderPath : uint8_t { Auto, Compiler, Assembler };

// Testing hook: while non-zero, the next that many fast-path renders give up after recording
// the kernel (as when registers run out), so that Auto falls back to the Compiler.
void inject_assembler_faults(int count);

// How one rendering differs from another of the same kernel: the ISA, each operand's inner
// layout, whether full-vector stores of outputs are non-temporal (`streaming`: the caller
// guarantees every output row starts aligned to the vector width; a fence ends the function),
// and how many vectors one iteration of the vector loop computes (`unroll`: the bodies of that
// many vectors, interleaved instruction by instruction, then a one-vector loop for what is
// left, then the tail; each element is computed by the same instructions whatever the unroll).
// `columns`: a kernel with Reduce expressions rendered as a column kernel (render_cols.h), its
// layouts along the columns.
struct KernelVariant {
  JitIsa isa = JitIsa::Sse2;
  std::vector<InnerLayout> layout;
  bool streaming = false;
  int unroll = 1;
  bool columns = false;
  // Software-pipeline the unrolled loop (AVX-512, Assembler path; KILN_JIT_PIPELINE=0: off).
  bool pipeline = true;
};

// The elements one vector iteration of `k` computes on `isa` (the widest type sets it).
int cpu_kernel_lanes(const LoopKernel& k, JitIsa isa);

// The target's choice of KernelVariant::unroll for `k` on `isa`: kRowUnroll for row kernels, 3
// for other kernels with vector math (row kernels with math per element on AVX2 and SSE2:
// kUnrollMathFewRegisters)
// (long dependency chains; measured by perf/jit_kernel_cycles.cpp on every ISA, docs/jit.md) of
// at most kUnrollMaxMath vector-math and kUnrollMaxExprs expressions, else 1 (short chains are
// memory-bound; every unrolled body adds compile time: gelu's 51 -> 96 µs).
// Row kernels (render_reduce.h) take kRowUnroll whatever their math: a row program's pieces
// are at most 128 elements (8 AVX-512 Float32 vectors: two iterations of 4), and even the
// plain sums and the division of layer norm gained from it (perf/jit_row_cycles.cpp: softmax
// 1.50 / 1.43 / 1.44 / 1.37 TSC cycles per element at unroll 1 / 2 / 3 / 4, 1.39 at 8; layer
// norm 0.81 at 1, 0.77 at 3 and 4).
// With 16 vector registers (AVX2, SSE2) a row kernel with vector math on its elements takes
// kUnrollMathFewRegisters instead: four copies of an exp (softmax's row) or two registers per
// copy (xent's Float64 logsumexp over Float32 rows) spill, and the stack traffic ate the gain
// (AVX2 on the Zen 3 VM, 2026-11-30: kiln-perf xent 32-50 ms at unroll 4, 30-35 at 2; softmax
// 5.5-5.7 / 4.8-6.1; kiln-jit-row-cycles on SSE2: softmax 7.7 -> 6.5, sum(exp) 6.6 -> 5.0 TSC
// cycles per element). Pointwise kernels keep 3: gelu's AVX2 path on the Intel VM ran 1.96 /
// 1.60 TSC cycles per element at 2 / 3 (on Zen 3 2.13 / 2.29 / 2.08 at 2 / 3 / 4).
inline constexpr int kUnrollMathFewRegisters = 2;
// Pointwise kernels that draw (RandUniform: Philox rounds of integer products per element) take
// kUnrollDraw on AVX-512 and 1 on the 16-register ISAs. Until 2026-12-02 they took 2 everywhere
// (a dropout of 2^22 Float32, `dropout(x * 1.5 + 0.25, 0.1, true) * 2`, Zen 3 VM, 2026-11-30:
// 11.6-11.9 ms at 1, 9.3-9.8 at 2, 8.7-11.5 at 3 on AVX2; 33.4 / 23.6 / 37.8 ms at 1 / 2 / 3 on
// SSE2). Since Float32 words are held as even and odd halves (philox_emitter.h), a copy's state
// takes twice the registers: `dropout(x, 0.1, true)` of 4096x1024 Float32 (Zen 1, 2026-12-02)
// ran 16.0 / 17.6 / 22.6 ms at unroll 1 / 2 / 3 on AVX2 (140 stack references at 2) and 20.6 /
// 23.2 at 1 / 2 on SSE2. AVX-512's 32 registers hold two copies (not measured since).
inline constexpr int kUnrollDraw = 2;
inline constexpr int kUnrollMaxMath = 4;
inline constexpr int kRowUnroll = 4;
inline constexpr size_t kUnrollMaxExprs = 64;
int cpu_kernel_unroll(const LoopKernel& k, JitIsa isa);
// Whether the body of `k` may be unrolled at all (KILN_JIT_UNROLL included). Not: a kernel whose
// body branches or calls out (sin/cos past the Cody-Waite range, integer pow's loop over a
// runtime exponent), whose copies cannot be interleaved (unrolling would only add bodies), nor
// a row kernel that draws. Pointwise kernels that draw unroll (kUnrollDraw on AVX-512), each copy
// drawing at its own index offset. (Until 2026-11-30 drawing kernels did not: unrolled, they had
// given wrong results in the differential fuzzer on SSE2 in an earlier renderer; 36000 fuzz seeds
// at unroll 2, 3 and 4 on AVX2 and SSE2 and 24000 at 2 and 3 on AVX-512, JitSinCosHuge's kernel
// among them, pass today.)
bool cpu_kernel_unrolls(const LoopKernel& k);

// Throws kiln::Error when asmjit reports an error (the caller falls back to eager kernels).
// `ordinary_twin`: for a streaming variant that the fast path renders, also the same variant
// with ordinary stores (v.streaming false), made from the same recording and registers by a
// second encoding (RecordingAssembler::encode_ordinary_twin): its code is byte for byte what
// rendering that variant makes, for a fraction of a render (a streaming launch's StoreChoice
// trial runs both, so each large pointwise or row kernel was rendered twice). Left empty (fn
// null) otherwise: the Compiler renders no twin.
RenderedKernel render_cpu_kernel(asmjit::JitRuntime& rt, const LoopKernel& k,
                                 const KernelVariant& v, bool want_assembly,
                                 RenderPath path = RenderPath::Auto,
                                 RenderedKernel* ordinary_twin = nullptr);

// The layout with every operand (and the index, when `k` uses it) contiguous.
std::vector<InnerLayout> all_contiguous(const LoopKernel& k);

// What the CPU target (cpu_kernel.h) renders `k` as on `isa` before any launch: every operand
// contiguous, its unroll (KILN_JIT_UNROLL, else cpu_kernel_unroll) and pipelining
// (KILN_JIT_PIPELINE); not streaming, not columns.
KernelVariant cpu_target_variant(const LoopKernel& k, JitIsa isa);

// Renders `k` as the CPU target does (its JitRuntime, the path KILN_JIT_ASSEMBLER selects) and
// frees the code again, outside every cache and counter: the renderer's warm-up (warm_up.h).
void render_and_discard_cpu_kernel(const LoopKernel& k, const KernelVariant& v);

}  // namespace kiln::jit

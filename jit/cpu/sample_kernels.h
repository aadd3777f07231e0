// Representative CPU kernels, built as the planner fuses kiln-perf's workloads: what the
// renderer's warm-up renders (warm_up.h) and what kiln-jit-compile times
// (perf/jit_compile_time.cpp). `c0` is a constant folded into each kernel, so that a caller can
// make every rendering a new kernel (no cache hit).
#pragma once
#include "jit/loop/loop_kernel.h"

namespace kiln::jit::sample_kernels {

// gelu, tanh form out of primitives, Float32 (perf/workloads/gelu.cpp): c0 is the cube's 0.044715.
LoopKernel gelu(double c0);
// x * c0 + y, Float32: a short chain (memory-bound, not unrolled).
LoopKernel axpb(double c0);
// softmax's row kernel (perf/workloads/softmax.cpp): max, exp(x - max), sum, exp(x - max) *
// (1 / sum), with c0 a scale on x. The exps are kept in a scratch row.
LoopKernel softmax_row(double c0);
// layer_norm's row kernel without affine parameters: (x - mean) * rsqrt(var + c0).
LoopKernel layernorm_row(double c0);
// x ** y + c0, Float32: vecmath::pow's double-T log and exp.
LoopKernel pow(double c0);
// sin(x * c0) + cos(x), Float32 (rotary and sinusoidal position encodings): a call out of the
// body for huge lanes (the exact reduction).
LoopKernel sin_cos(double c0);
// x ** n + c0 with n an Int32 tensor (integer pow: a loop over the exponent's bits), Int32.
LoopKernel int_pow(double c0);
// sum(x * c0) over the reduced dim, Float32: rendered as a column kernel where the rows are
// reduced (mlp_train's bias gradients), as a row kernel otherwise.
LoopKernel column_sum(double c0);
// A uniform draw (Philox4x32-10) plus an input times c0, Float32.
LoopKernel rand(double c0);

}  // namespace kiln::jit::sample_kernels

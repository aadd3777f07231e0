// BLAS steps of a JIT plan (docs/jit.md "Matmul steps"): a matmul node runs as GEMM calls on
// its operands as they are (a transposed or permuted view becomes BLAS's transpose flag and
// leading dim through ops/cpu/blas_gemm.h, never a copy), and the pointwise kernel that
// consumes the product (bias, activation, residual, scaling: its epilogue) runs over each row
// block right after that block's GEMM, while the block is in cache.
//
// Contract: the product's bits are eager matmul's (the same GEMM calls: row blocks over kiln's
// threads, or column blocks for a small product from 4 threads, exactly where eager makes them,
// ops/cpu/blas_gemm.h); the epilogue is the same compiled kernel launched on row ranges,
// so its results are the unblocked kernel's. Whatever a run cannot block (Float64, a small or
// batched product, an epilogue whose index space is not the product's, an epilogue output that
// shares memory with an operand) runs the GEMM whole, then the epilogue step as usual. A product
// computed before its step (rows of a product batch's or a scan's stacked product:
// product_batch.h, scan_products.h) is not computed again: the step runs its epilogue alone.
#pragma once
#include <vector>

#include "jit/plan/jit_plan.h"
#include "tracer/graph.h"

namespace kiln::jit {

// Whether node n of g is a matmul of CPU tensors (a BLAS step's kind; CUDA products are not).
bool is_cpu_matmul(const tracer::Graph& g, const tracer::Node& n);

// Marks the plan's CPU matmul steps as BLAS steps, and a BLAS step's epilogue where the next step
// is a pointwise kernel (no reduction, no random draws) that reads the product.
void mark_blas_steps(const tracer::Graph& g, std::vector<Step>& steps);

}  // namespace kiln::jit

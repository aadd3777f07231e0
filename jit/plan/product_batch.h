// Product batches of a JIT plan (docs/jit.md "Product batches"): the products of a region whose
// left operands are consecutive row slices of one tensor and whose right operand is one value,
// such as a recorded RNN loop's input projections (x[t] @ W^T for every step t), run together
// when the first of them runs; each product's value is then its rows of the result (a view),
// and the later products' steps run only their epilogues.
//
// Contract: bits. One GEMM over the stacked rows runs only where it gives every product eager's
// bits: the product of (n * M) rows is computed the way eager computes a 2-D product of that
// size (blas::gemm_2d), and whether its rows equal n separate products of M rows (eager's calls
// for each) depends on the BLAS kernels of the CPU, so it is probed once per shape, thread count
// and layout in a process, on pseudo-random operands (a GEMM's order of operations does not
// depend on the data: operands that tell two orders apart for n * M * N sums tell them apart for
// good). Where the probe finds a difference, each product's own calls run in one parallel loop
// (the same calls: the same bits), where eager makes them on kiln's threads or on one OpenBLAS
// thread; otherwise, or where this run's operands are not consecutive slices of one storage
// (plans are size-generic: every run checks), each product runs as its own BLAS step.
#pragma once
#include <cstdint>
#include <vector>

#include "jit/plan/jit_plan.h"
#include "runtime/dtype.h"
#include "tracer/graph.h"

namespace kiln::jit {

// The plan's batches: each a list of at least two BLAS steps (indices into `steps`, in order;
// the first runs the batch) whose matmul nodes read one right operand and, on the left, graph
// inputs of equal recorded sizes [M, K] (M > 1), and whose products are no graph output. Sets
// Step::batch of each member.
std::vector<ProductBatch> find_product_batches(const tracer::Graph& g, std::vector<Step>& steps);

// The product of n slices of M rows each, stacked (`stacked` is [n * M, K]), with b [K, N]: one
// GEMM where that gives every slice eager's bits for its own product (batch_keeps_bits); else,
// where eager splits each product into blocks over kiln's threads (row or column blocks:
// blas::plan_split_2d), those very calls for all n products in one parallel loop; an undefined
// tensor otherwise (one call per product, perhaps on OpenBLAS's threads: the caller computes
// them one by one), or past the size cap (64 MiB: it lives as long as its last slice).
Tensor stacked_product(const Tensor& stacked, int64_t n, const Tensor& b);
// Rows [t * M, (t + 1) * M) of a stacked product, as a view.
Tensor rows_of(const Tensor& product, int64_t t, int64_t M);
// A [rows, cols] view of `base`'s storage: rows `row_stride` elements apart from element
// `offset`, unit stride along a row (n slices of M rows stacked as one matrix, no copy).
Tensor row_view(const Tensor& base, int64_t rows, int64_t cols, int64_t row_stride, int64_t offset);

// One batched product's shape and the context that picks eager's calls for it.
struct BatchShape {
  DType dtype = DType::Float32;
  int64_t n = 0, M = 0, N = 0, K = 0;  // n products of M x N x K
  bool trans_b = false;                // the right operand is a transposed view
  int threads = 0;                     // KILN_NUM_THREADS (the row blocks, OpenBLAS threads)
  bool nested = false;                 // inside a kiln parallel region (one BLAS thread)
  bool operator==(const BatchShape&) const = default;
};

// Whether one product of n * M rows gives the bits of n products of M rows for this shape
// (probed the first time it is asked in a process; the answers are kept).
bool batch_keeps_bits(const BatchShape& s);

// Testing hooks: how many probes ran in this process, and forgetting the answers.
int64_t batch_probes();
void forget_batch_probes();
// While set, every probe answers no (the tests' way to the blocked loop on any CPU).
void set_batch_probe_says_no(bool no);
// How many stacked products were computed as one GEMM (a batch's run, a scan's products), since
// the process started.
int64_t batched_product_runs();
// How many were computed as the products' own blocks in one parallel loop instead.
int64_t blocked_product_runs();

}  // namespace kiln::jit

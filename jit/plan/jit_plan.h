// A region's plan: steps in execution order, each a fused kernel (loop IR compiled by a kernel
// target), a BLAS step (a matmul as GEMM calls, jit/plan/blas_step.h) or an eager step (one node
// run by its eager kernel, with its metadata derived from the actual inputs: plans are
// size-generic; a higher-order node's step runs its bodies through their own plans where the
// planner made them: body_plans.h), over a table of values indexed like the graph's. Values live
// from their step to their last use; buffers exist only at step boundaries (a kernel's
// intermediates stay in registers).
//
// run() follows the RegionPlan contract (tracer/backend.h): run arguments only, destinations
// written directly where safe, per-output errors (a failed step poisons what depends on it).
#pragma once
#include <atomic>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "jit/passes/arg_map.h"
#include "jit/plan/body_plans.h"
#include "jit/plan/scan_products.h"
#include "jit/target.h"
#include "tracer/backend.h"
#include "tracer/graph.h"
#include "tracer/interpreter.h"

namespace kiln::jit {

struct KernelStep {
  std::shared_ptr<CompiledKernel> kernel;
  std::vector<tracer::ValueId> inputs;   // kernel input j reads this value
  std::vector<tracer::ValueId> outputs;  // kernel output k writes this value
  // Kernel param p is RunArgs::scalars[params[p]], or for a negative entry one 32-bit word of
  // a random node's Philox seed and counter (philox_param).
  std::vector<int32_t> params;
  std::vector<int32_t> nodes;  // the fused nodes (run eagerly if a launch fails)
  // Per node, run eagerly: the values only this step reads that it reads last (JitPlan fills
  // it; run_nodes_eagerly).
  std::vector<std::vector<tracer::ValueId>> dying;
  // The index space is the broadcast of the inputs' shapes and, for a kernel with a node that
  // has no inputs (rand: its shape is its attrs', fixed in the region's key), of this shape.
  DimVector sizes;
  // A row kernel: it reduces the last `reduced_dims` dims of its index space; per output, 0 for
  // an element value, else a row value of the index space's shape with those dims 1 (keepdim)
  // or, with 2, dropped.
  int reduced_dims = 0;
  // A column kernel (loop_kernel.h): the reduced dims are the `reduced_dims` before the last
  // `inner_dims` (0: a row kernel); row values then drop or keep those dims.
  int inner_dims = 0;
  std::vector<uint8_t> row_output;
  std::atomic<bool> broken{false};  // a launch failed: the nodes run eagerly from now on

  // Whether the kernel draws random numbers (a Philox word among its params).
  bool draws() const {
    for (int32_t p : params)
      if (p < 0) return true;
    return false;
  }
};

// KernelStep::params entry for word w (0, 1: seed low and high; 2, 3: counter low and high) of
// RunArgs::random[r], and back.
constexpr int32_t philox_param(int32_t r, int32_t w) { return -(4 * r + w) - 1; }
Scalar philox_word(const tracer::RunArgs& args, int32_t param);

// Where an eager step's runtime values come from.
struct EagerPatch {
  int32_t scalar_index;  // Attrs::scalars index
  int32_t run_scalar;    // RunArgs::scalars index
};

struct Step {
  int32_t node = -1;  // an eager step: this node
  // A BLAS step (jit/plan/blas_step.h): `node` is a matmul, run as GEMM calls on its operands'
  // strides; with `epilogue`, the next step is a pointwise kernel over the product that runs
  // per row block right after that block's GEMM.
  bool blas = false;
  bool epilogue = false;
  // A member of a product batch (jit/plan/product_batch.h): the index into the plan's batches,
  // or -1. The batch's first step computes every member's product in one GEMM where it can.
  int32_t batch = -1;
  // A gather whose row kernel is the next step (jit/plan/gathered_step.h): the two run per
  // block of rows, the gathered value never stored whole.
  bool gathered = false;
  // Of a gathered step: how many pointwise kernels after the row kernel may run per block with
  // it (gathered_step.cpp decides per run; the rest run as steps of their own).
  int gathered_tail = 0;
  std::unique_ptr<KernelStep> kernel;    // a kernel step
  std::vector<tracer::ValueId> release;  // values that die after this step
};

// BLAS steps whose products run as one GEMM over stacked rows (jit/plan/product_batch.h).
struct ProductBatch {
  std::vector<int32_t> steps;  // in plan order; steps[0] computes the batch
};

class JitPlan final : public tracer::RegionPlan {
 public:
  JitPlan(tracer::Graph g, std::vector<Step> steps, std::vector<std::vector<EagerPatch>> patches,
          std::vector<int32_t> random_index);
  tracer::InterpretResult run(const tracer::RunArgs& args) override;

  // For tests and stats: the kernel steps and how many nodes each fused.
  int num_kernels() const;
  int num_eager_steps() const;
  const std::vector<Step>& steps() const { return steps_; }
  const tracer::Graph& graph() const { return graph_; }

  // Runs every node eagerly (KILN_JIT_VALIDATE's reference), with no destinations: the
  // original graph when the plan runs a graph the passes rewrote.
  tracer::InterpretResult run_reference(const tracer::RunArgs& args);

  // The plan runs a graph the passes rewrote (jit/passes/): run() maps each run's arguments,
  // indexed by the region's original graph, through `m` first.
  void set_arg_map(std::shared_ptr<const passes::ArgMap> m) { arg_map_ = std::move(m); }

  // Plans of the higher-order nodes' bodies (jit/plan/body_plans.h), per node and subgraph;
  // a null plan (or none set) interprets that body.
  void set_body_plans(BodyPlans plans) { body_plans_ = std::move(plans); }
  // Product batches (product_batch.h), found by the planner.
  void set_product_batches(std::vector<ProductBatch> b) { batches_ = std::move(b); }
  const std::vector<ProductBatch>& product_batches() const { return batches_; }

  // Products whose right operand is made from graph inputs by views alone (scan_products.h),
  // the operand of one computed from this run's arguments, and a run given such products (their
  // BLAS steps run only their epilogues).
  const std::vector<InvariantProduct>& invariant_products() const { return invariant_products_; }
  Tensor invariant_operand(const InvariantProduct& c, const tracer::RunArgs& args);
  tracer::InterpretResult run_with_products(
      const tracer::RunArgs& args, std::span<const std::pair<tracer::ValueId, Tensor>> products);

  // For tests and stats: the body plans, and how many distinct ones this plan runs.
  const BodyPlans& body_plans() const { return body_plans_; }
  int num_body_plans() const;

 private:
  struct Frame;
  // `dying`: values this node reads for the last time (run_nodes_eagerly), whose buffers an
  // elementwise node may write its result into.
  void run_eager_node(Frame& f, int32_t node, int32_t step_index = -1,
                      std::span<const tracer::ValueId> dying = {});
  // The body plan of scan or map node j when it has invariant products (scan_products.h).
  JitPlan* loop_body_plan(int32_t j) const;
  // A kernel step's nodes, run eagerly (its launch declined or failed).
  void run_nodes_eagerly(Frame& f, const KernelStep& k);
  void find_dying(KernelStep& k) const;  // KernelStep::dying, from last_step_
  void run_kernel(Frame& f, KernelStep& k, size_t step_index);
  // run_kernel in three parts, for a BLAS step that launches its epilogue per row block:
  // outputs allocated (or taken over) and LaunchArgs built, false when the step was handled
  // otherwise (poisoned, broken, no layout for these sizes: nodes run eagerly); the launch
  // (try_launch: declined where this run's strides have no machine code); the results stored
  // (or, after a declined launch or a failed one of a broken kernel, its nodes run eagerly).
  struct KernelLaunch {
    LaunchArgs la;
    std::vector<Tensor> outs;
    SmallVector<Scalar, 4> params;
    void clear() {  // empty, keeping the buffers' room (a run reuses one for its kernels)
      la.sizes.clear();
      la.reduced_dims = la.inner_dims = 0;
      la.ptrs.clear();
      la.strides.clear();
      la.params = {};
      outs.clear();
      params.clear();
    }
  };
  // `fallback` false: nothing is run or poisoned when it returns false (a BLAS step then runs
  // the kernel as its own step).
  bool prepare_kernel(Frame& f, KernelStep& k, size_t step_index, KernelLaunch& kl,
                      bool fallback = true);
  // Yes; Declined (the layout has no machine code by design: the nodes run eagerly, no
  // warning); No (failed: the kernel is marked broken, or the outputs poisoned).
  enum class Launched { Yes, Declined, No };
  Launched launch_kernel(Frame& f, KernelStep& k, const LaunchArgs& la);
  void finish_kernel(Frame& f, KernelStep& k, KernelLaunch& kl, Launched launched);
  // A BLAS step (blas_step.cpp); returns 1 when it also ran the next step (its epilogue).
  size_t run_blas(Frame& f, size_t step_index);
  // The products of batch `b` as one GEMM (product_batch.cpp), run by its first step: their
  // values are set to its rows, or left unset where this run cannot batch (each product then
  // runs as its own BLAS step).
  void run_product_batch(Frame& f, int32_t b);
  // A gather and its row kernel (gathered_step.cpp); returns how many steps after the gather it
  // ran too (1: the row kernel; more: pointwise steps after it that ran per block as well).
  size_t run_gathered(Frame& f, size_t step_index);
  // A pointwise step after a gathered step's row kernel, run per block with it.
  struct GatheredTail;
  // Prepares the steps after the row kernel (launch `klr`) of gathered step s that join its
  // blocks this run, into `tail` (empty where none can); `src` is the gathered leaf.
  void prepare_gathered_tail(Frame& f, size_t s, const KernelLaunch& klr, const TensorImpl& src,
                             std::vector<GatheredTail>& tail);
  // The destination (RunArgs::destinations) that value v may be computed into at this step, or
  // an undefined tensor: v is a graph output once, the destination has v's sizes and dtype, and
  // nothing reads the destination's old contents after this step (at it only through the very
  // same geometry: an elementwise step may write over what it reads at the same index).
  Tensor destination_for(const Frame& f, tracer::ValueId v, int32_t step_index,
                         const DimVector& sizes, DType dtype) const;
  // Whether value v (read by this step, which is its last reader) holds a buffer the step may
  // write its result of `sizes` x `dtype` into: produced by this plan (not the user's memory),
  // row-major, reached by nothing but the value table and `extra_handles` argument slots.
  bool donatable(const Frame& f, tracer::ValueId v, int32_t step_index, const DimVector& sizes,
                 DType dtype, int32_t extra_handles) const;
  // donatable's test of the buffer alone (v's value is dying: no later reader).
  bool buffer_free(const Frame& f, tracer::ValueId v, const DimVector& sizes, DType dtype,
                   int32_t extra_handles) const;
  tracer::InterpretResult run_mapped(
      const tracer::RunArgs& args, std::span<const std::pair<tracer::ValueId, Tensor>> given = {});

  tracer::Graph graph_;  // the first recording (never the current one: its ops and attrs)
  std::vector<Step> steps_;
  std::vector<std::vector<EagerPatch>> patches_;  // per node: promoted scalars
  std::vector<int32_t> random_index_;             // per node: its RunArgs::random index, or -1
  std::vector<tracer::BodyPlans> bodies_;  // per node: hop body plans (shared: body_plans_of)
  BodyPlans body_plans_;            // per node: the bodies' own plans (run instead where not null)
  std::vector<int32_t> last_step_;  // per value: the last step reading it (-2: an output)
  std::vector<int32_t> input_last_step_;  // per graph input
  std::vector<uint8_t> donor_ok_;         // per value: produced by a node whose buffer it owns
  std::shared_ptr<const passes::ArgMap> arg_map_;  // null: RunArgs index graph_ itself
  std::vector<ProductBatch> batches_;
  std::vector<InvariantProduct> invariant_products_;
};

}  // namespace kiln::jit

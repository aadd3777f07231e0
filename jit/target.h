// The narrow interface between the planner and a kernel target (asmjit on the CPU now, NVRTC on
// CUDA next): compile a loop kernel; launch it over an index space with sizes, strides, pointers
// and parameters. Everything device-specific (ISA, vector width, threads, streams) lives behind
// it, in jit/cpu/ and jit/cuda/ (matching file names for matching concepts).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "jit/loop/loop_kernel.h"
#include "runtime/scalar.h"
#include "runtime/small_vector.h"

namespace kiln::jit {

// One launch: the index space (sizes, innermost last), and per operand (outputs first, then
// inputs, as LoopKernel numbers them) a base pointer and strides in bytes per dim (0 where the
// operand broadcasts), in the operand's storage dtype. `params` holds the kernel's runtime
// parameters (converted to each param's value type at launch with Scalar::to, as the eager
// kernels convert a Scalar operand).
// A row kernel (one with Reduce expressions) reduces the last `reduced_dims` dims of `sizes`;
// the strides of an output that stores a row value are 0 over them. With `inner_dims` > 0 it is
// launched as a column kernel (loop_kernel.h): the `reduced_dims` dims before the last
// `inner_dims` are reduced, the inner ones kept. A target that renders no column kernels
// declines such a launch (can_launch false).
struct LaunchArgs {
  DimVector sizes;
  int reduced_dims = 0;
  int inner_dims = 0;
  SmallVector<char*, 8> ptrs;
  std::vector<DimVector> strides;
  std::span<const Scalar> params;
  // A launch over one part of a larger index space (a blocked run's per-block launch,
  // jit/plan/gathered_step.cpp): the elements of the whole, which decide whether its outputs
  // are large enough to go around the caches; 0: this launch is the whole.
  int64_t whole_elements = 0;
};

class CompiledKernel {
 public:
  virtual ~CompiledKernel() = default;
  virtual const LoopKernel& source() const = 0;
  // Runs the kernel. Throws kiln::Error if machine code for this launch's layout cannot be made
  // (the planner then runs the step's nodes eagerly).
  virtual void launch(const LaunchArgs& args) = 0;
  // False where this launch's layout has no machine code by design, not by failure (a row
  // kernel whose row is strided in some operand): the caller runs the step's nodes eagerly this
  // time, without a warning, and launches again next time.
  virtual bool can_launch(const LaunchArgs& args) const {
    (void)args;
    return true;
  }
  // can_launch and launch in one: false, having run nothing, where can_launch is false (a
  // target overrides it to decide from what the launch itself computes).
  virtual bool try_launch(const LaunchArgs& args) {
    if (!can_launch(args)) return false;
    launch(args);
    return true;
  }
  // The same question asked of the launch's sizes and dims alone, before its buffers are made:
  // false where can_launch would be false whatever the strides and pointers (the planner then
  // runs the step's nodes eagerly without allocating the kernel's outputs); true leaves the
  // answer to can_launch.
  virtual bool may_launch(const DimVector& sizes, int reduced_dims, int inner_dims) const {
    (void)sizes, (void)reduced_dims, (void)inner_dims;
    return true;
  }
};

class KernelTarget {
 public:
  virtual ~KernelTarget() = default;
  virtual const char* name() const = 0;  // "cpu-avx512", "cuda-sm90": in stats, logs, dumps
  // Interpreted runs a region gets before it is planned for this target (the CPU: 0).
  virtual int threshold() const = 0;
  // Whether the target can render this expression op with this value type (for a compare or a
  // Cast: its operand's type; else the planner keeps the node out of kernels).
  virtual bool supports(ExprOp op, DType dtype) const = 0;
  // Compiles `k` (verified). Throws on failure: the planner warns once and runs the step's
  // nodes eagerly.
  virtual std::shared_ptr<CompiledKernel> compile(const LoopKernel& k) = 0;
  // Whether a column kernel of row values only (a sum over the `reduced_dims` dims before the
  // last `inner_dims`) would launch at these recorded sizes: the column var split asks before
  // rewriting (jit/passes/column_split.h). Default: the target runs no column kernels.
  virtual bool launches_column_reduction(const DimVector& sizes, int reduced_dims,
                                         int inner_dims) const {
    (void)sizes, (void)reduced_dims, (void)inner_dims;
    return false;
  }
};

}  // namespace kiln::jit

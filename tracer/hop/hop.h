// Higher-order ops (API.md "Higher-order ops, regions and compile"; docs/control_flow.md): ops
// that take callables. In eager mode (KILN_JIT=0) each validates its arguments and runs its
// callables (tracer/hop/eager.h); when recording, their bodies will be traced into subgraphs,
// falling back to exactly those eager functions when a body cannot be captured.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor.h"

namespace kiln {

using TensorList = std::vector<Tensor>;
using Fn = std::function<TensorList(const TensorList&)>;

// Runs true_fn(operands) if pred (one element, any dtype: nonzero is true) holds, else
// false_fn(operands). Reading pred is a sync point.
TensorList cond(const Tensor& pred, Fn true_fn, Fn false_fn, const TensorList& operands);

// carried = body_fn(carried) while cond_fn(carried) holds; the body must keep the count, dtypes
// and shapes of the carried values. Forward only: backward through its outputs raises.
TensorList while_loop(std::function<Tensor(const TensorList&)> cond_fn, Fn body_fn,
                      const TensorList& carried);

// fn(carry, x_t) -> {new_carry, y_t} for t in [0, T), x_t = xs[i].select(0, t); returns
// {final carry, ys stacked along dim 0}. Differentiable.
std::pair<TensorList, TensorList> scan(
    std::function<std::pair<TensorList, TensorList>(const TensorList& carry, const TensorList& x)>
        fn,
    const TensorList& init, const TensorList& xs);

// fn over slices along dim 0 of xs, results stacked along dim 0. Differentiable.
TensorList map(Fn fn, const TensorList& xs);

// fn(args), keeping only args for backward: the body is run again in backward to rebuild the
// activations it needs (with the same random numbers).
TensorList checkpoint(Fn fn, const TensorList& args);

// A named repeated subgraph: every call runs the same body; the tracer traces it once per
// (name, input metadata).
class Region {
 public:
  TensorList operator()(const TensorList& args) const;
  const std::string& name() const { return *name_; }
  const Fn& fn() const { return *fn_; }

 private:
  friend Region region(std::string name, Fn fn);
  Region(std::string name, Fn fn);
  std::shared_ptr<const std::string> name_;
  std::shared_ptr<const Fn> fn_;
};
Region region(std::string name, Fn fn);

// A host callback: fn runs eagerly on materialized args (a sync point when recording).
TensorList opaque(Fn fn, const TensorList& args);

namespace hop {
class CompileCache;
}

// Explicit whole-function capture. Eagerly (KILN_JIT=0) a call runs fn. Recording, the first call
// with given argument metadata (dtypes, sizes, strides, devices: the guards) traces fn into one
// call node; later calls that pass the guards record that node again without running fn (the
// tensors fn captured are read as they are at each call). A guard miss traces again, up to
// KILN_JIT_RECOMPILE_LIMIT traces per function; past it, and for a body that cannot be traced,
// calls run fn (recorded op by op). Copies share one cache.
class CompiledFn {
 public:
  TensorList operator()(const TensorList& args) const;
  const Fn& fn() const { return *fn_; }
  // Bodies traced so far (one per distinct guard signature).
  size_t traces() const;

 private:
  friend CompiledFn compile(Fn fn);
  explicit CompiledFn(Fn fn);
  std::shared_ptr<const Fn> fn_;
  std::shared_ptr<hop::CompileCache> cache_;
};
CompiledFn compile(Fn fn);

}  // namespace kiln

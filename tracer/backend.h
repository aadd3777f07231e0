// The hand-off to the JIT (DESIGN.md, "JIT"): a backend turns a region's canonical graph into a
// runnable plan. The recorder and the region cache only know this interface; the CPU (asmjit)
// and CUDA (NVRTC) backends register themselves in kiln::init() and plug in here.
//
// Contract:
// - compile() may run on a background thread (KILN_JIT_ASYNC=1, the default), concurrently with
//   recording and interpretation on other threads; it must not dispatch ops into the caller's
//   segment (the compile thread has no recorder installed, so any op it runs is eager).
// - A plan is run with the *current* recording of the region: structurally equal to the graph it
//   was compiled from, except for runtime values, which the plan reads from `current`: the
//   Attrs scalars at the positions listed in RuntimeScalars, and the Philox seed and counter of
//   random nodes (Attrs ints[0] and ints[1]), which change on every run.
// - run() returns the graph outputs in order, as fresh row-major tensors of the output metadata
//   (or views of inputs where the output is a view; the recorder copies those).
// - Throwing from compile() (a kiln::Error or anything else) is a compile failure: the region
//   warns once and stays interpreted. Throwing from run() propagates to the sync point as the
//   interpreter's errors do.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "runtime/tensor.h"
#include "tracer/graph.h"

namespace kiln::tracer {

// A scalar of the graph that is a runtime input of the plan: node index and Attrs::scalars index.
struct ScalarPosition {
  int32_t node;
  int32_t index;
  friend bool operator==(const ScalarPosition&, const ScalarPosition&) = default;
};
using RuntimeScalars = std::vector<ScalarPosition>;

class CompiledRegion {
 public:
  virtual ~CompiledRegion() = default;
  virtual std::vector<Tensor> run(const Graph& current, std::span<const Tensor> inputs) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;  // "cpu-asmjit", "cuda-nvrtc": shown in stats and logs
  // Whether the backend wants to compile this graph at all (e.g. its device). A region it
  // declines stays interpreted, silently.
  virtual bool accepts(const Graph& g) const = 0;
  virtual std::unique_ptr<CompiledRegion> compile(const Graph& g,
                                                  const RuntimeScalars& runtime_scalars) = 0;
};

// Installs the backend regions are compiled with (nullptr: none, interpretation only). Not owned.
// Regions that already hold a plan keep it.
void set_backend(Backend* backend);
Backend* current_backend();

}  // namespace kiln::tracer

// The baseline tier of CPU pointwise kernels: code for a new kernel in microseconds, made of op
// kernels rendered once per process (op_kernels.h), while the kernel's own rendering (render.h,
// 30-400 µs in situ: docs/jit.md "Compile time") runs on the planning thread; the CpuKernel
// swaps the rendered code in when it is ready (cpu_kernel.h, KILN_JIT_BASELINE).
//
// A baseline kernel runs the loop kernel's expressions one at a time over a tile of up to
// kTileElements elements (one row's stretch, or several short rows), each a call of its op kernel
// from tiles in a per-thread scratch (contiguous along the row) to a tile, and the stores last;
// then the next tile. The tiles stay in the core's caches, so the kernel reads its inputs and
// writes its outputs once, as the fused kernel does, and pays per expression a pass over L1/L2 and
// a call: slower than the fused code (docs/jit.md "The baseline tier" has figures), much faster
// than running the ops eagerly.
//
// Contract (what run() guarantees):
//   - run() has KernelFn's signature and meaning (render.h): any inner and outer byte strides per
//     operand, read at run time (an input's inner stride 0 is a broadcast, anything but its
//     element size a strided operand: copied into a tile first; an output's likewise, through a
//     tile).
//   - Every element gets the bits the rendered kernel gives it: each expression is computed by
//     its op kernel, the instructions it gets inside the fused kernel (op_kernels.h), and no
//     expression is reassociated or contracted with another.
//   - Outputs may be the inputs themselves (an in-place update, the same strides): an output is
//     written straight by its op kernel only after the tile's last in-place read of an input (an
//     input stored as it is is copied into a tile), else from a tile at the tile's end.
//   - Reentrant: threads run tiles of their own rows with scratch of their own.
// make() declines (null) kernels with a Reduce, a RowSize or a RandUniform (a position-dependent
// leaf), and kernels whose op kernels are not all rendered yet (it queues those renders).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "jit/cpu/cpu_isa.h"
#include "jit/cpu/render.h"
#include "jit/loop/loop_kernel.h"

namespace kiln::jit {

class BaselineKernel {
 public:
  // Elements per tile: with the few live tiles of a chain, within L1 and L2.
  static constexpr int64_t kTileElements = 1024;

  // Timed (cpu_jit_baseline_times), traced under KILN_PROFILE and counted
  // (CpuJitCounters::baseline_kernels) where it makes one.
  static std::unique_ptr<BaselineKernel> make(const LoopKernel& k, JitIsa isa);

  // The same, neither timed nor counted: a part of a row or column kernel's baseline code
  // (baseline_cut.h), which is counted whole.
  static std::unique_ptr<BaselineKernel> make_part(const LoopKernel& k, JitIsa isa) {
    return build(k, isa);
  }

  void run(char* const* ptrs, const int64_t* inner, const int64_t* outer, int64_t n_inner,
           int64_t n_outer, const void* params) const;

  struct Scratch;  // a thread's tiles (baseline_kernel.cpp)

 private:
  // A value of one tile: contiguous along the row, `outer` bytes from one row to the next (0: the
  // same row for every row of the tile).
  struct Tile {
    char* p = nullptr;
    int64_t outer = 0;
  };
  struct Step {
    ExprOp op{};                     // Load, Param, Const, or the operation its op kernel computes
    DType type{};                    // its value type (the tile's elements)
    int32_t operand = 0;             // Load: the operand (outputs first); Param: the param
    int32_t args[3] = {-1, -1, -1};  // an operation's operands its op kernel loads (expressions)
    int32_t slot = -1;      // its tile in the scratch (Load: when copied; a Const: its own)
    int32_t direct = -1;    // the output it writes in place of a tile where that is contiguous
    bool dead = false;      // an operation nothing reads or stores
    KernelFn fn = nullptr;  // the op kernel
    KernelFn copy_broadcast = nullptr;  // Load, Param: a broadcast row into a tile
    KernelFn copy_strided = nullptr;    // Load: a strided row into a tile
    KernelFn copy = nullptr;            // Load of a stored input: a contiguous row into a tile
  };
  struct Store {
    int32_t expr = 0;
    KernelFn copy = nullptr, copy_strided = nullptr;  // a tile into a contiguous, strided output
  };
  static std::unique_ptr<BaselineKernel> build(const LoopKernel& k, JitIsa isa);
  void run_tile(char* scratch, char* const* ptrs, const int64_t* inner, const int64_t* outer,
                int64_t o, int64_t rows, int64_t i0, int64_t width, const void* params,
                Tile* at) const;

  int32_t num_outputs_ = 0;
  std::vector<Step> steps_;  // one per expression, in order
  std::vector<Store> stores_;
  int32_t slots_ = 0;  // tiles of kTileElements * 8 bytes in the scratch
  struct Constant {
    int32_t expr;
    uint64_t bits;  // its value in its storage type (low bytes)
  };
  std::vector<Constant> consts_;  // tiles slots_.. of the scratch, filled by each run()
};

// Whether baseline code pays for a launch of `k` over `elements` elements: its passes over them
// (about one per operation and store) cost what a render costs past kMaxBaselineWork
// element-passes, and then the launch runs it only until the rendering lands (a progressive
// launch: CpuKernel::baseline_until_rendered), or waits for it. Measured (2026-12-04,
// 2-core Zen 5, kiln-perf's gelu, 2^24 Float32, 10 passes): its first call took 9.3 ms on
// baseline code against 4.1 rendered (the render 0.19 ms): ~0.03 ns per element-pass on two
// threads, against renders of 0.1-0.4 ms in situ.
inline constexpr int64_t kMaxBaselineWork = int64_t{1} << 22;
bool baseline_pays(const LoopKernel& k, int64_t elements);

// Counts, times and traces a baseline kernel of `k` made from t0 to t1 (ns: profiler::now_ns).
void note_baseline_made(const LoopKernel& k, JitIsa isa, int64_t t0, int64_t t1);

// Each baseline kernel's making time in ns, in the order they were made, from index `first` on
// (as cpu_jit_compile_times does for renders).
std::vector<int64_t> cpu_jit_baseline_times(size_t first = 0);
size_t cpu_jit_baseline_count();

}  // namespace kiln::jit

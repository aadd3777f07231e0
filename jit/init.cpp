// kiln::init(): the top of the library registers every layer's implementations of the seams the
// lower layers define. It must not dispatch ops (the dispatcher calls it before the first one).
#include "runtime/init.h"
#include "jit/cpu/warm_up.h"
#include "jit/cuda/eager_ops.h"
#include "jit/plan/planner.h"
#include "ops/op_registry.h"
#include "runtime/config.h"
#include "runtime/profiler.h"
#include "tracer/recorder.h"

namespace kiln {

void init() {
  register_all_ops();
  jit::cuda::register_cuda_kernels();  // the CUDA forms of the ops (docs/cuda.md)
  tracer::register_recorder();
  tracer::set_planner(&jit::planner());
  profiler::start_from_config();                        // KILN_PROFILE, KILN_STATS
  if (config().jit) jit::start_cpu_renderer_warm_up();  // KILN_JIT=1 at start-up
}

}  // namespace kiln

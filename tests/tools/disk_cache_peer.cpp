// kiln-disk-cache-peer: another program than kiln-tests, linking the same kiln library, for
// test_jit_disk_cache.cpp's AnotherProgramLoadsTheKernels. Runs disk_cache_program.h's program
// eagerly, then compiled with the CPU kernel disk cache in `folder`, and prints
// `renders R loads L equal E`: the kernels it rendered and loaded, and 1 when the compiled
// results are bitwise the eager ones. The JIT settings are the test's (threshold 0, synchronous,
// the Assembler path); the ISA is KILN_JIT_ISA's, as the test hands it down.
//
//   kiln-disk-cache-peer <folder>     (exit status 0 when it ran, whatever it found)
#include <cstdio>
#include <cstring>

#include "disk_cache_program.h"
#include "jit/cpu/cpu_target.h"
#include "jit/cpu/disk_cache.h"
#include "runtime/config.h"

int main(int argc, char** argv) {
  using namespace kiln;
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln-disk-cache-peer <folder>\n");
    return 2;
  }
  config().jit_threshold = 0;
  config().jit_async = false;
  config().jit_eager_tier = false;
  config().jit_assembler = true;
  config().jit_disk_cache = true;
  jit::set_cpu_kernel_disk_root(argv[1]);
  const Tensor x = testing::disk_cache_program_input();
  config().jit = false;
  const TensorList want = testing::disk_cache_program(x);
  config().jit = true;
  const int64_t renders = jit::cpu_jit_counters().kernels.load();
  const int64_t loads = jit::cpu_jit_counters().disk_loads.load();
  const TensorList got = testing::disk_cache_program(x);
  kiln::sync();
  bool equal = got.size() == want.size();
  for (size_t i = 0; equal && i < got.size(); ++i) {
    const Tensor a = got[i].contiguous(), b = want[i].contiguous();
    equal = a.numel() == b.numel() &&
            std::memcmp(a.data_ptr<float>(), b.data_ptr<float>(), a.numel() * sizeof(float)) == 0;
  }
  std::printf("renders %lld loads %lld equal %d\n",
              static_cast<long long>(jit::cpu_jit_counters().kernels.load() - renders),
              static_cast<long long>(jit::cpu_jit_counters().disk_loads.load() - loads), equal);
  return 0;
}

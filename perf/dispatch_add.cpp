// kiln-dispatch-bench: the fixed cost of one eager op. Times `c = a + b` on two 16-element
// Float32 tensors and prints the median over batches of 100000 calls, in ns per op (budget:
// < 500 ns per eager op). Wall time is inflated when the machine is oversubscribed (another
// process takes the core mid-batch), so the thread's CPU time is printed too.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kiln/kiln.h"

namespace {
double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  using clock = std::chrono::steady_clock;
  // Optional: batches and calls per batch (smaller for callgrind).
  const int batches = argc > 1 ? std::atoi(argv[1]) : 31;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 100000;
  kiln::Tensor a = kiln::full({16}, 1.5f), b = kiln::full({16}, 0.25f);
  kiln::Tensor c = a + b;  // warm-up: op table, allocator, caches
  for (int i = 0; i < calls; ++i) c = a + b;
  std::vector<double> wall, cpu;
  for (int batch = 0; batch < batches; ++batch) {
    auto t0 = clock::now();
    double c0 = thread_cpu_ns();
    for (int i = 0; i < calls; ++i) c = a + b;
    double c1 = thread_cpu_ns();
    auto t1 = clock::now();
    wall.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / calls);
    cpu.push_back((c1 - c0) / calls);
  }
  std::printf(
      "c = a + b (16 x Float32): median %.1f ns/op wall, %.1f ns/op thread CPU time "
      "(%d batches of %d calls)\n",
      median(wall), median(cpu), batches, calls);
  return c.numel() == 16 ? 0 : 1;
}

// kiln-dispatch-bench: the fixed cost of one eager op. Times `c = a + b` on two 16-element
// Float32 tensors and prints the median over batches of 100000 calls, in ns per op (budget:
// < 500 ns per eager op).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kiln/kiln.h"

int main(int argc, char** argv) {
  using clock = std::chrono::steady_clock;
  kiln::Tensor a = kiln::full({16}, 1.5f), b = kiln::full({16}, 0.25f);
  // Optional: batches and calls per batch (smaller for callgrind).
  const int kBatches = argc > 1 ? std::atoi(argv[1]) : 31;
  const int kCalls = argc > 2 ? std::atoi(argv[2]) : 100000;
  kiln::Tensor c = a + b;  // warm-up: op table, allocator, caches
  for (int i = 0; i < kCalls; ++i) c = a + b;
  std::vector<double> ns;
  for (int batch = 0; batch < kBatches; ++batch) {
    auto t0 = clock::now();
    for (int i = 0; i < kCalls; ++i) c = a + b;
    auto t1 = clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kCalls);
  }
  std::sort(ns.begin(), ns.end());
  std::printf(
      "c = a + b (16 x Float32): median %.1f ns/op (min %.1f, max %.1f; %d batches of %d)\n",
      ns[ns.size() / 2], ns.front(), ns.back(), kBatches, kCalls);
  return c.numel() == 16 ? 0 : 1;
}

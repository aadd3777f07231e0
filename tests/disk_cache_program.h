// The program that kiln-tests and kiln-disk-cache-peer (tests/tools/disk_cache_peer.cpp) both
// run, so that the peer, another program linking the same library, asks for exactly the kernels
// the test rendered into the disk cache (test_jit_disk_cache.cpp, AnotherProgramLoadsTheKernels):
// a pointwise chain with vector math, and a sin with huge arguments (a kernel that calls out).
// The input is made from host data, the same bits in both programs.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::testing {

inline Tensor disk_cache_program_input() {
  std::vector<float> v(37 * 301);
  uint32_t s = 12345u;
  for (float& f : v) {  // a linear congruential generator: uniform in [-4, 4)
    s = s * 1664525u + 1013904223u;
    f = static_cast<float>(s >> 8) * (8.0f / 16777216.0f) - 4.0f;
  }
  return from_vector(v, {37, 301});
}

inline TensorList disk_cache_program(const Tensor& x) {
  const Tensor y = x * 0.8125;
  return TensorList{(y / ((y * -1.0).exp() + 1.0) + 0.0234375).tanh(), (x * 65536.046875).sin()};
}

}  // namespace kiln::testing

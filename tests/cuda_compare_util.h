// Helpers of the GPU tests that compare CUDA results with the CPU's (with cuda_device_util.h's
// skip without a usable GPU): bitwise comparison of a CUDA tensor with a CPU one, and ulps between
// floats.
#pragma once
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "cuda_device_util.h"
#include "kiln/kiln.h"

namespace kiln::testing {

// The same shape, dtype and bytes (a CUDA result against the CPU's; any layouts).
inline void expect_bitwise(const Tensor& cpu, const Tensor& gpu, const std::string& label) {
  ASSERT_TRUE(gpu.device().is_cuda()) << label;
  ASSERT_TRUE(cpu.device().is_cpu()) << label;
  ASSERT_EQ(cpu.dtype(), gpu.dtype()) << label;
  ASSERT_EQ(cpu.sizes(), gpu.sizes()) << label;
  const Tensor a = cpu.contiguous(), b = gpu.to(Device::cpu()).contiguous();
  const size_t bytes = static_cast<size_t>(a.numel()) * itemsize(a.dtype());
  if (bytes == 0) return;
  const bool same = std::memcmp(a.impl()->data(), b.impl()->data(), bytes) == 0;
  EXPECT_TRUE(same) << label << "\ncpu: " << cpu << "\ncuda: " << b;
}

// ulps between two finite values of one float type.
inline double ulps_apart(double a, double b, DType d) {
  if (a == b) return 0;
  if (!std::isfinite(a) || !std::isfinite(b)) return 1e30;
  auto ord = [&](double x) -> int64_t {
    if (d == DType::Float32) {
      const int32_t i = std::bit_cast<int32_t>(static_cast<float>(x));
      return i < 0 ? INT32_MIN - int64_t{i} : i;
    }
    const int64_t i = std::bit_cast<int64_t>(x);
    return i < 0 ? INT64_MIN - i : i;
  };
  return std::fabs(static_cast<double>(ord(a) - ord(b)));
}

}  // namespace kiln::testing

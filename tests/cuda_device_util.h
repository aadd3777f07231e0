// What the CUDA tests share about the device: the GPU they run on, every dtype, and a skip that
// names why when no GPU is usable (a CI without one shows the reason).
#pragma once
#include <gtest/gtest.h>

#include "kiln/kiln.h"

namespace kiln::testing {

inline const Device kGpu = Device::cuda(0);
inline constexpr DType kAll[] = {DType::Bool, DType::Int32, DType::Int64, DType::Float32,
                                 DType::Float64};

}  // namespace kiln::testing

#define KILN_SKIP_WITHOUT_GPU()                                        \
  do {                                                                 \
    if (!::kiln::cuda_is_available())                                  \
      GTEST_SKIP() << "no GPU: " << ::kiln::cuda_unavailable_reason(); \
  } while (0)

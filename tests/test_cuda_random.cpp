// On a GPU: the random ops draw the CPU's Philox numbers (docs/random.md). rand, randint and
// dropout masks are bitwise the CPU's over many sizes and call after call; randn is within the
// bound docs/random.md states (CUDA's double log/cos against glibc's); the generator state
// advances alike on both devices. Every test skips, saying why, without a usable GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "cuda_compare_util.h"
#include "cuda_device_util.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using testing::kGpu;

using testing::expect_bitwise;

TensorOptions on(Device d, DType t) { return TensorOptions().device(d).dtype(t); }

// Runs `draw` on the CPU and on the GPU from the same seed; the generator state advances alike.
template <class F>
std::pair<Tensor, Tensor> both(uint64_t seed, F&& draw) {
  manual_seed(seed);
  Tensor cpu = draw(Device::cpu());
  const PhiloxState after_cpu = philox_state();
  manual_seed(seed);
  Tensor gpu = draw(kGpu);
  const PhiloxState after_gpu = philox_state();
  EXPECT_EQ(after_cpu.seed, after_gpu.seed);
  EXPECT_EQ(after_cpu.offset, after_gpu.offset);
  return {cpu, gpu};
}

TEST(CudaRandom, RandIsBitwiseTheCpusOverSizes) {
  KILN_SKIP_WITHOUT_GPU();
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n <= 300; ++n) sizes.push_back(n);
  for (int64_t n : {511, 512, 513, 4095, 4096, 4097, 65535, 65536, 65537, 69999, 70000})
    sizes.push_back(n);
  for (DType t : {DType::Float32, DType::Float64}) {
    // One program drawing every size in turn: each call's counters follow the last one's.
    auto [cpu, gpu] = both(1234, [&](Device d) {
      std::vector<Tensor> all;
      for (int64_t n : sizes) all.push_back(rand({n}, on(d, t)));
      return cat(all);
    });
    expect_bitwise(cpu, gpu, fmt::format("rand {} sizes 1..70000", t));
  }
  // A counter whose low word wraps inside the call (the carry into the high word), and a seed
  // with both halves set.
  const PhiloxState s{0x0123456789abcdefull, (uint64_t{1} << 32) - 100};
  for (DType t : {DType::Float32, DType::Float64}) {
    Tensor cpu, gpu;
    {
      PhiloxReplayGuard g(s);
      cpu = rand({300}, on(Device::cpu(), t));
    }
    {
      PhiloxReplayGuard g(s);
      gpu = rand({300}, on(kGpu, t));
    }
    expect_bitwise(cpu, gpu, fmt::format("rand {} across the 2^32 counter boundary", t));
  }
}

TEST(CudaRandom, ProgramsDrawTheSameNumbersCallAfterCall) {
  KILN_SKIP_WITHOUT_GPU();
  auto program = [](Device d) {
    std::vector<Tensor> out;
    out.push_back(rand({3, 5}, on(d, DType::Float32)));
    out.push_back(randint(-5, 17, {7, 2}, on(d, DType::Int64)).to(DType::Float64));
    Tensor x = ones({4, 6}, on(d, DType::Float64));
    out.push_back(dropout(x, 0.25, true).flatten());
    out.push_back(rand({1}, on(d, DType::Float64)));
    out.push_back(dropout(x.t(), 0.5, true).flatten());  // a strided input: row-major order
    out.push_back(rand({2, 3, 4}, on(d, DType::Float64)).flatten());
    std::vector<Tensor> flat;
    for (const Tensor& t : out) flat.push_back(t.to(DType::Float64).flatten());
    return cat(flat);
  };
  auto [cpu, gpu] = both(42, program);
  expect_bitwise(cpu, gpu, "a program of rand, randint and dropout calls");
  // manual_seed between calls takes effect on the next one, on either device.
  auto [c2, g2] = both(42, [](Device d) {
    Tensor a = rand({10}, on(d, DType::Float32));
    manual_seed(99);
    return cat({a, rand({10}, on(d, DType::Float32))});
  });
  expect_bitwise(c2, g2, "manual_seed between calls");
}

TEST(CudaRandom, DropoutMasksAreTheCpus) {
  KILN_SKIP_WITHOUT_GPU();
  for (DType t : {DType::Float32, DType::Float64}) {
    manual_seed(3);
    const Tensor x = randn({37, 41}, on(Device::cpu(), t));
    const Tensor xg = x.to(kGpu);
    for (double p : {0.1, 0.5, 0.9, 1.0 / 3.0}) {
      auto [cpu, gpu] = both(11, [&](Device d) {
        const Tensor in = d.is_cpu() ? x : xg;
        return cat({dropout(in, p, true).flatten(), dropout(in.t(), p, true).flatten(),
                    dropout(in.slice(1, 1, 41, 3), p, true).flatten()});
      });
      expect_bitwise(cpu, gpu, fmt::format("dropout {} p={}", t, p));
    }
    // No counters consumed, the input or x * 0 returned.
    auto [c0, g0] = both(11, [&](Device d) {
      const Tensor in = d.is_cpu() ? x : xg;
      return cat({dropout(in, 0.0, true), dropout(in, 1.0, true), dropout(in, 0.5, false)});
    });
    expect_bitwise(c0, g0, fmt::format("dropout {} p=0, p=1, eval", t));
  }
}

TEST(CudaRandom, RandintIsBitwiseTheCpus) {
  KILN_SKIP_WITHOUT_GPU();
  struct Case {
    DType t;
    int64_t low, high;
  };
  const Case cases[] = {{DType::Int64, 0, 10},
                        {DType::Int64, INT64_MIN, INT64_MAX},
                        {DType::Int64, -(int64_t{1} << 40), int64_t{1} << 62},
                        {DType::Int32, INT32_MIN, INT32_MAX},
                        {DType::Int32, -3, 4},
                        {DType::Bool, 0, 2},
                        {DType::Float32, -(int64_t{1} << 24), int64_t{1} << 24},
                        {DType::Float64, -(int64_t{1} << 53), int64_t{1} << 53},
                        {DType::Float64, 5, 6}};
  for (const Case& c : cases) {
    auto [cpu, gpu] = both(5, [&](Device d) { return randint(c.low, c.high, {3001}, on(d, c.t)); });
    expect_bitwise(cpu, gpu, fmt::format("randint {} [{}, {})", c.t, c.low, c.high));
  }
}

// randn: Box-Muller in double; CUDA's double log and cos (1 and 2 ulp) against glibc's may move
// the double result by a few ulps: the contract is 8 ulps (Float64) and 1 ulp (Float32, after
// the rounding; nearly always 0).
TEST(CudaRandom, RandnIsWithinTheBound) {
  KILN_SKIP_WITHOUT_GPU();
  for (DType t : {DType::Float32, DType::Float64}) {
    auto [cpu, gpu] = both(8, [&](Device d) { return randn({200003}, on(d, t)); });
    const std::vector<double> a = cpu.to(DType::Float64).to_vector<double>();
    const std::vector<double> b = gpu.to(Device::cpu()).to(DType::Float64).to_vector<double>();
    ASSERT_EQ(a.size(), b.size());
    double worst = 0;
    int64_t differ = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const double u = testing::ulps_apart(a[i], b[i], t);
      worst = std::max(worst, u);
      differ += u > 0;
    }
    std::printf("  randn %s: max %.0f ulp, %lld of %zu differ\n",
                std::string(dtype_name(t)).c_str(), worst, static_cast<long long>(differ),
                a.size());
    EXPECT_LE(worst, t == DType::Float32 ? 1.0 : 8.0) << dtype_name(t);
  }
}

}  // namespace
}  // namespace kiln

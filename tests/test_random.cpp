// Random ops (ops/random.cpp, docs/random.md): Philox4x32-10 known answers from an independent
// reference written here, the exact counter scheme and number formulas, statistics,
// reproducibility, dtypes and errors.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <numbers>

#include "expect_error.h"
#include "kiln/kiln.h"
#include "runtime/dispatcher.h"
#include "runtime/philox_block.h"

using namespace kiln;
using kiln::testing::expect_error;

namespace {

// ---- an independent Philox4x32-10 (Salmon et al. 2011, Random123's philox4x32) ----
using U4 = std::array<uint32_t, 4>;

U4 ref_philox(U4 ctr, std::array<uint32_t, 2> key) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {  // key schedule: bump by the Weyl constants between rounds
      key[0] += 0x9E3779B9u;
      key[1] += 0xBB67AE85u;
    }
    uint64_t p0 = uint64_t(0xD2511F53u) * ctr[0];
    uint64_t p1 = uint64_t(0xCD9E8D57u) * ctr[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

// kiln's mapping: 64-bit counter -> words 0,1 (words 2,3 zero); 64-bit seed -> key words 0,1.
U4 ref_draw(uint64_t seed, uint64_t counter) {
  return ref_philox({uint32_t(counter), uint32_t(counter >> 32), 0, 0},
                    {uint32_t(seed), uint32_t(seed >> 32)});
}

float ref_rand_f(uint64_t seed, uint64_t c) {
  return float(ref_draw(seed, c)[0] >> 8) / 16777216.0f;
}
double ref_rand_d(uint64_t seed, uint64_t c) {
  U4 r = ref_draw(seed, c);
  return double(((uint64_t(r[0]) << 32) | r[1]) >> 11) / 9007199254740992.0;
}
float ref_randn_f(uint64_t seed, uint64_t c) {
  U4 r = ref_draw(seed, c);
  double u1 = (double(r[0] >> 8) + 1.0) / 16777216.0, u2 = double(r[1] >> 8) / 16777216.0;
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}
double ref_randn_d(uint64_t seed, uint64_t c) {
  U4 r = ref_draw(seed, c);
  double u1 = (double(((uint64_t(r[0]) << 32) | r[1]) >> 11) + 1.0) / 9007199254740992.0;
  double u2 = double(((uint64_t(r[2]) << 32) | r[3]) >> 11) / 9007199254740992.0;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

TEST(Philox, ReferenceMatchesRandom123KnownAnswers) {
  // Random123's kat_vectors for philox4x32 with 10 rounds.
  EXPECT_EQ(ref_philox({0, 0, 0, 0}, {0, 0}), (U4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(ref_philox({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (U4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(ref_philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (U4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, KilnDrawMatchesReference) {
  EXPECT_EQ(Philox::draw(0, 0), (U4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  for (uint64_t seed : {0ull, 1ull, 42ull, 0x123456789abcdef0ull, ~0ull})
    for (uint64_t c : {0ull, 1ull, 7ull, 0xffffffffull, 0x100000000ull, 0xfedcba9876543210ull})
      EXPECT_EQ(Philox::draw(seed, c), ref_draw(seed, c)) << seed << " " << c;
}

// The four-counter draw of eager's loops (runtime/philox_block.h) against the reference, over
// seeds and counters whose low word wraps inside the four (its carry into the high word).
TEST(Philox, FourCounterDrawMatchesReference) {
  for (uint64_t seed : {0ull, 1ull, 42ull, 0x123456789abcdef0ull, ~0ull})
    for (uint64_t c : {0ull, 5ull, 0xfffffffdull, 0xfffffffeull, 0x1fffffffeull,
                       0xfedcba9876543210ull, ~0ull - 1}) {
      const PhiloxWords4 w = philox_draw4(seed, c);
      for (uint64_t j = 0; j < 4; ++j) {
        const U4 want = ref_draw(seed, c + j);
        EXPECT_EQ(w.r0[j], want[0]) << seed << " " << c << " + " << j;
        EXPECT_EQ(w.r1[j], want[1]) << seed << " " << c << " + " << j;
      }
    }
}

TEST(Random, CounterSchemeAndFormulas) {
  // manual_seed resets the counter to 0; each op takes numel consecutive counters.
  const uint64_t seed = 1234;
  manual_seed(seed);
  auto a = rand({2, 3}).to_vector<float>();              // counters 0..5
  auto b = rand({4}, kFloat64).to_vector<double>();      // 6..9
  auto c = randn({3}).to_vector<float>();                // 10..12
  auto d = randn({3}, kFloat64).to_vector<double>();     // 13..15
  auto e = randint(-5, 1000, {4}).to_vector<int64_t>();  // 16..19
  for (int i = 0; i < 6; ++i) EXPECT_EQ(a[i], ref_rand_f(seed, i));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(b[i], ref_rand_d(seed, 6 + i));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c[i], ref_randn_f(seed, 10 + i));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(d[i], ref_randn_d(seed, 13 + i));
  for (int i = 0; i < 4; ++i) {
    U4 r = ref_draw(seed, 16 + i);
    EXPECT_EQ(e[i], -5 + int64_t(((uint64_t(r[0]) << 32) | r[1]) % 1005));
  }
  // Empty tensors reserve nothing.
  EXPECT_EQ(rand({0, 4}).numel(), 0);
  EXPECT_EQ(rand({1}).to_vector<float>()[0], ref_rand_f(seed, 20));
}

TEST(Random, LargeParallelMatchesSequentialReference) {
  // Above the parallel grain: every element must still be the one of its own counter.
  const uint64_t seed = 99;
  manual_seed(seed);
  const int64_t n = 60000;
  auto v = rand({n}).to_vector<float>();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v[i], ref_rand_f(seed, i)) << i;
  auto w = randn({300, 200}, kFloat64).to_vector<double>();
  for (int64_t i = 0; i < n; i += 997) ASSERT_EQ(w[i], ref_randn_d(seed, n + i)) << i;
}

TEST(Random, Reproducibility) {
  manual_seed(7);
  Tensor a = rand({5, 5}), b = randn({10}, kFloat64), c = randint(0, 100, {8});
  manual_seed(7);
  EXPECT_TRUE(equal(rand({5, 5}), a));
  EXPECT_TRUE(equal(randn({10}, kFloat64), b));
  EXPECT_TRUE(equal(randint(0, 100, {8}), c));
  // The next call continues the stream; another seed gives another stream.
  EXPECT_FALSE(equal(rand({5, 5}), a));
  manual_seed(8);
  EXPECT_FALSE(equal(rand({5, 5}), a));
  // A rejected call consumes no counters.
  manual_seed(7);
  EXPECT_THROW(rand({3}, kInt64), Error);
  EXPECT_TRUE(equal(rand({5, 5}), a));
}

TEST(Random, OpIsPureFunctionOfAttrs) {
  // What the recorder relies on: replaying the op with the same attrs gives the same numbers,
  // whatever the global generator did since.
  EXPECT_TRUE(op_def(OpId::Rand).flags & kIsRandom);
  EXPECT_TRUE(op_def(OpId::Randn).flags & kIsRandom);
  EXPECT_TRUE(op_def(OpId::Randint).flags & kIsRandom);
  Attrs a;
  a.dims = {4, 3};
  a.dtype = kFloat32;
  a.ints = {5, 100, 12, 0};  // seed 5, counters 100..111
  Tensor x = dispatch(OpId::Randn, {}, a);
  manual_seed(3);
  rand({10});
  Tensor y = dispatch(OpId::Randn, {}, a);
  EXPECT_TRUE(equal(x, y));
  EXPECT_EQ(x.to_vector<float>()[11], ref_randn_f(5, 111));
}

TEST(Random, Statistics) {
  // n = 100000 samples; tolerances are 5 standard errors of each statistic:
  //   uniform mean 0.5 (se sqrt(1/12/n) = 9.1e-4 -> 0.0046), var 1/12 (se 2.4e-4 -> 0.0012);
  //   normal mean 0 (se 1/sqrt(n) -> 0.016), var 1 (se sqrt(2/n) -> 0.0224),
  //   P(|z| < 1) = 0.6827 (se 1.47e-3 -> 0.0074); randint bucket freq 0.1 (se 9.5e-4 -> 0.0047).
  manual_seed(2024);
  const int64_t n = 100000;
  auto stats = [](const std::vector<double>& v) {
    double m = 0, q = 0;
    for (double x : v) m += x;
    m /= double(v.size());
    for (double x : v) q += (x - m) * (x - m);
    return std::pair{m, q / double(v.size() - 1)};
  };
  for (DType dt : {kFloat32, kFloat64}) {
    auto u = rand({n}, dt).to_vector<double>();
    auto [um, uv] = stats(u);
    EXPECT_NEAR(um, 0.5, 0.0046) << dtype_name(dt);
    EXPECT_NEAR(uv, 1.0 / 12, 0.0012) << dtype_name(dt);
    for (double x : u) ASSERT_TRUE(x >= 0.0 && x < 1.0);

    auto z = randn({n}, dt).to_vector<double>();
    auto [zm, zv] = stats(z);
    EXPECT_NEAR(zm, 0.0, 0.016) << dtype_name(dt);
    EXPECT_NEAR(zv, 1.0, 0.0224) << dtype_name(dt);
    int64_t inside = 0;
    for (double x : z) {
      ASSERT_TRUE(std::isfinite(x));
      inside += std::fabs(x) < 1.0;
    }
    EXPECT_NEAR(double(inside) / n, 0.682689, 0.0074) << dtype_name(dt);
  }
  auto k = randint(0, 10, {n}).to_vector<int64_t>();
  std::array<int64_t, 10> hist{};
  for (int64_t x : k) {
    ASSERT_TRUE(x >= 0 && x < 10);
    ++hist[x];
  }
  for (int64_t h : hist) EXPECT_NEAR(double(h) / n, 0.1, 0.0047);
}

TEST(Random, RandintDtypesAndRanges) {
  manual_seed(5);
  EXPECT_EQ(randint(0, 5, {3}).dtype(), kInt64);
  for (DType dt : {kInt32, kFloat32, kFloat64}) {
    Tensor t = randint(-3, 4, {200}, dt);
    EXPECT_EQ(t.dtype(), dt);
    for (double x : t.to_vector<double>()) {
      EXPECT_EQ(x, std::floor(x));
      EXPECT_TRUE(x >= -3 && x < 4);
    }
  }
  auto b = randint(0, 2, {100}, kBool).to_vector<bool>();
  int ones = 0;
  for (bool x : b) ones += x;
  EXPECT_TRUE(ones > 0 && ones < 100);
  // The full int64 range (high - low overflows int64 but not uint64).
  Tensor full = randint(INT64_MIN, INT64_MAX, {50});
  EXPECT_EQ(full.numel(), 50);
  EXPECT_EQ(randint(7, 8, {4}).to_vector<int64_t>(), std::vector<int64_t>(4, 7));
}

TEST(Random, LikeForms) {
  Tensor x = zeros({3, 2}, kFloat64).t();
  EXPECT_EQ(rand_like(x).sizes(), (Shape{2, 3}));
  EXPECT_EQ(rand_like(x).dtype(), kFloat64);
  EXPECT_EQ(randn_like(zeros({4})).dtype(), kFloat32);
  expect_error([] { rand_like(zeros({2}, kInt32)); }, "rand", "floating dtype");
  expect_error([] { randn_like(Tensor()); }, "randn_like", "undefined");
}

TEST(Random, Errors) {
  expect_error([] { rand({2}, kInt64); }, "rand", "floating dtype");
  expect_error([] { randn({2}, kBool); }, "randn", "floating dtype");
  expect_error([] { rand({2, -1}); }, "rand", "negative size");
  expect_error([] { randn({2}, TensorOptions(Device::cuda(99))); }, "randn", "not available");
  expect_error([] { randint(5, 5, {2}); }, "randint", "low < high");
  expect_error([] { randint(5, 1, {2}); }, "randint", "low < high");
  expect_error([] { randint(0, int64_t(1) << 40, {2}, kInt32); }, "randint", "out of bounds");
  expect_error([] { randint(0, 3, {2}, kBool); }, "randint", "out of bounds");
  expect_error([] { randint(0, (int64_t(1) << 24) + 2, {2}, kFloat32); }, "randint",
               "out of bounds");
  expect_error([] { randint(0, 3, {-2}); }, "randint", "negative size");
  // The meta function checks recorded attrs too.
  Attrs a;
  a.dims = {2};
  a.dtype = kInt32;
  expect_error([&] { dispatch(OpId::Rand, {}, a); }, "rand", "floating dtype");
}

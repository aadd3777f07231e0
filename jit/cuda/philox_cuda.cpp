#include "jit/cuda/philox_cuda.h"

#include <fmt/format.h>

#include "runtime/error.h"

namespace kiln::jit::cuda {

namespace {

// Constants as in runtime/philox.h; 2^-24 and 2^-53 as exact hex literals.
constexpr const char* kPhilox =
    R"(KILN_INLINE void kiln_philox(kiln_u64 seed, kiln_u64 counter, unsigned r[4]) {
  unsigned c0 = (unsigned)counter, c1 = (unsigned)(counter >> 32), c2 = 0u, c3 = 0u;
  unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const kiln_u64 p0 = (kiln_u64)0xD2511F53u * c0;
    const kiln_u64 p1 = (kiln_u64)0xCD9E8D57u * c2;
    const unsigned n0 = (unsigned)(p1 >> 32) ^ c1 ^ k0;
    const unsigned n2 = (unsigned)(p0 >> 32) ^ c3 ^ k1;
    c1 = (unsigned)p1;
    c3 = (unsigned)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  r[0] = c0; r[1] = c1; r[2] = c2; r[3] = c3;
}
KILN_INLINE kiln_u64 kiln_u64_of(unsigned a, unsigned b) { return (kiln_u64)a << 32 | b; }
KILN_INLINE float kiln_uniform_f32(const unsigned r[4]) { return (float)(r[0] >> 8) * 0x1.0p-24f; }
KILN_INLINE double kiln_uniform_f64(const unsigned r[4]) {
  return (double)(kiln_u64_of(r[0], r[1]) >> 11) * 0x1.0p-53;
}
KILN_INLINE double kiln_box_muller(double u1, double u2) {
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925286766559 * u2);
}
KILN_INLINE double kiln_normal_f32(const unsigned r[4]) {
  return kiln_box_muller((double)((r[0] >> 8) + 1u) * 0x1.0p-24, (double)(r[1] >> 8) * 0x1.0p-24);
}
KILN_INLINE double kiln_normal_f64(const unsigned r[4]) {
  return kiln_box_muller((double)((kiln_u64_of(r[0], r[1]) >> 11) + 1ull) * 0x1.0p-53,
                         (double)(kiln_u64_of(r[2], r[3]) >> 11) * 0x1.0p-53);
}
KILN_INLINE float kiln_rand_uniform_f32(kiln_u64 seed, kiln_u64 counter) {
  unsigned r[4];
  kiln_philox(seed, counter, r);
  return kiln_uniform_f32(r);
}
KILN_INLINE double kiln_rand_uniform_f64(kiln_u64 seed, kiln_u64 counter) {
  unsigned r[4];
  kiln_philox(seed, counter, r);
  return kiln_uniform_f64(r);
}
)";

}  // namespace

const char* philox_cuda_source() { return kPhilox; }

std::string render_rand_uniform(const Expr& e, const std::string& index,
                                const std::array<std::string, 4>& words) {
  KILN_CHECK(e.op == ExprOp::RandUniform && is_floating(e.type),
             "cuda kernel: render_rand_uniform of {} ({})", expr_op_name(e.op), e.type);
  // Each word holds a 32-bit value in the low half of its 64-bit argument word.
  auto w = [&](int j) {
    return fmt::format("(kiln_u64)(unsigned){}", words[static_cast<size_t>(j)]);
  };
  return fmt::format("kiln_rand_uniform_{}({} << 32 | {}, ({} << 32 | {}) + (kiln_u64){})",
                     e.type == DType::Float32 ? "f32" : "f64", w(1), w(0), w(3), w(2), index);
}

}  // namespace kiln::jit::cuda

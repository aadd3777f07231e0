// Streaming (non-temporal) stores in the eager kernels (ops/cpu/streaming_store.h): copy_,
// contiguous, casts and pointwise ops with a contiguous output of at least kStreamingBytes take
// the *_nt loops. A store is a store: the results must be bitwise those of the plain loops, with
// misaligned outputs (the scalar prologue runs) and sizes that are no multiple of any vector.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "hop_traced_util.h"
#include "kiln/kiln.h"
#include "ops/cpu/eager_store_choice.h"
#include "ops/cpu/elementwise_loop.h"
#include "ops/cpu/pointwise_table.h"
#include "runtime/config.h"
#include "runtime/op_list.h"

using namespace kiln;

namespace {

// Elements of `dt` in 8 MiB plus a few (odd, so the tail runs).
int64_t above_threshold(DType dt) { return kStreamingBytes / int64_t(itemsize(dt)) + 13; }

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), size_t(ca.numel()) * itemsize(a.dtype())) == 0;
}

Tensor source(int64_t n, DType dt) {
  Tensor x = mul(randn({n}), 1000.0);
  if (dt == kBool) return gt(x, 0.0);
  return x.to(dt);
}

}  // namespace

TEST(StreamingStores, LargeCopyIntoMisalignedViewIsBitwise) {
  for (DType dt : {kFloat32, kFloat64, kInt32, kInt64, kBool}) {
    const int64_t n = above_threshold(dt);
    Tensor base = source(n + 3, dt);
    Tensor src = base.slice(0, 1, n + 1);  // misaligned source
    Tensor buf = zeros({n + 5}, TensorOptions().dtype(dt));
    Tensor dst = buf.slice(0, 3, n + 3);  // contiguous, 3 elements past an aligned start
    ASSERT_TRUE(streams_output(dst.impl()));
    dst.copy_(src);
    EXPECT_TRUE(same_bytes(dst, src)) << dtype_name(dt);
    // Nothing written outside the view.
    Tensor zero = zeros({3}, TensorOptions().dtype(dt));
    EXPECT_TRUE(same_bytes(buf.slice(0, 0, 3), zero)) << dtype_name(dt);
    EXPECT_TRUE(same_bytes(buf.slice(0, n + 3, n + 5), zero.slice(0, 0, 2))) << dtype_name(dt);
    // clone / contiguous of a misaligned view.
    EXPECT_TRUE(same_bytes(src.clone(), src)) << dtype_name(dt);
  }
}

TEST(StreamingStores, ContiguousOfLargeTransposeAndCasts) {
  // 1031 x 2049 float32 = 8.45 MB: rows of 8 KB streamed from a strided source.
  Tensor x = randn({2049, 1031});
  Tensor xt = x.t();
  Tensor c = xt.contiguous();
  ASSERT_TRUE(c.is_contiguous());
  std::vector<float> xv = x.to_vector<float>(), cv = c.to_vector<float>();
  for (int64_t i = 0; i < 1031; ++i)
    for (int64_t j = 0; j < 2049; ++j)
      ASSERT_EQ(std::memcmp(&cv[size_t(i * 2049 + j)], &xv[size_t(j * 1031 + i)], 4), 0)
          << i << "," << j;
  // Casts into a large output: against the same cast done in small (plain-store) pieces.
  const int64_t n = above_threshold(kFloat64);
  Tensor f = randn({n + 1}).slice(0, 1, n + 1);
  Tensor d = f.to(kFloat64), i = mul(f, 100.0).to(kInt64);
  for (int64_t k = 0; k < n; k += 1 << 18) {
    const int64_t e = std::min(n, k + (int64_t{1} << 18));
    ASSERT_TRUE(same_bytes(d.slice(0, k, e), f.slice(0, k, e).to(kFloat64))) << k;
    ASSERT_TRUE(same_bytes(i.slice(0, k, e), mul(f.slice(0, k, e), 100.0).to(kInt64))) << k;
  }
}

TEST(StreamingStores, LargePointwiseOutputsEqualPlainPieces) {
  const int64_t n = above_threshold(kFloat32);
  Tensor xb = randn({n + 1}), yb = randn({n + 2});
  Tensor x = xb.slice(0, 1, n + 1), y = yb.slice(0, 2, n + 2);
  Tensor e = exp(x), s = add(x, y), m = mul(x, 0.5), g = gt(x, y);
  ASSERT_TRUE(streams_output(e.impl()));
  for (int64_t k = 0; k < n; k += 1 << 20) {
    const int64_t end = std::min(n, k + (int64_t{1} << 20));  // 4 MB pieces: plain stores
    Tensor xs = x.slice(0, k, end), ys = y.slice(0, k, end);
    ASSERT_TRUE(same_bytes(e.slice(0, k, end), exp(xs))) << k;
    ASSERT_TRUE(same_bytes(s.slice(0, k, end), add(xs, ys))) << k;
    ASSERT_TRUE(same_bytes(m.slice(0, k, end), mul(xs, 0.5))) << k;
    ASSERT_TRUE(same_bytes(g.slice(0, k, end), gt(xs, ys))) << k;
  }
}

// Eager pointwise ops choose their stores per (op, compute dtype) as JIT kernels do
// (ops/cpu/eager_store_choice.h): under each KILN_JIT_STREAMING mode the calls stream as it
// says (auto: the cold call and the streaming trials, then all or none), and every call's bytes
// are those of the plain loop over small pieces.
TEST(StreamingStores, EagerChoicePerOpUnderEachMode) {
  kiln::testing::ConfigOverride<bool> eager(config().jit, false);
  const int64_t n = above_threshold(kFloat32);
  Tensor x = randn({n});
  std::vector<Tensor> pieces;  // 4 MB each: plain stores
  for (int64_t k = 0; k < n; k += 1 << 20)
    pieces.push_back(tanh(x.slice(0, k, std::min(n, k + (int64_t{1} << 20)))));
  StoreChoice& choice = eager_store_choice(OpId::Tanh, kFloat32);
  constexpr int kCalls = 2 + 2 * StoreChoice::kTrials + 2;
  for (const std::string mode : {"on", "off", "auto"}) {
    kiln::testing::ConfigOverride<std::string> stores(config().jit_streaming, mode);
    choice.reset();
    for (int call = 0; call < kCalls; ++call) {
      Tensor y = tanh(x);
      ASSERT_TRUE(streams_output(y.impl()));
      for (size_t p = 0; p < pieces.size(); ++p) {
        const int64_t k = static_cast<int64_t>(p) << 20;
        ASSERT_TRUE(same_bytes(y.slice(0, k, k + pieces[p].numel()), pieces[p]))
            << mode << " call " << call << " piece " << p;
      }
    }
    const int64_t streamed = choice.streamed();
    if (mode == "on") {
      EXPECT_EQ(streamed, kCalls);
    } else if (mode == "off") {
      EXPECT_EQ(streamed, 0);
    }
    if (mode == "auto") {
      EXPECT_GE(choice.decided(), 0) << "decided after the trials";
      EXPECT_LT(choice.best_ns_per_element(true), std::numeric_limits<double>::infinity());
      EXPECT_LT(choice.best_ns_per_element(false), std::numeric_limits<double>::infinity());
      EXPECT_EQ(streamed,
                choice.decided() == 1 ? kCalls - StoreChoice::kTrials : 1 + StoreChoice::kTrials);
    }
  }
}

// Every ISA's streaming loops against its plain loops, on runs long enough to stream (5003
// elements), into an output one element past an aligned start, contiguous and strided inputs.
TEST(StreamingStores, NtLoopsBitwiseEqualPlainLoopsEveryIsa) {
  __builtin_cpu_init();
  const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool has_avx512 = has_avx2 && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  static PointwiseTable tables[3];
  int isas = 1;
  isa_baseline::fill_pointwise_table(tables[0]);
  if (has_avx2) isa_avx2::fill_pointwise_table(tables[isas++]);
  if (has_avx512) isa_avx512::fill_pointwise_table(tables[isas++]);
  constexpr int64_t n = 5003;
  std::vector<double> v, w;
  for (int64_t i = 0; i < 2 * n + 2; ++i) {
    v.push_back(std::sin(double(i) * 0.7) * 3);
    w.push_back(std::cos(double(i) * 0.3) * 2);
  }
  const Scalar params[2] = {Scalar(-1.5), Scalar(2.25)};
  int checked = 0;
  for (int k = 0; k < isas; ++k) {
    const PointwiseTable& t = tables[k];
    for (int dt = 0; dt < kNumDTypes; ++dt) {
      const DType d = static_cast<DType>(dt);
      for (int strided = 0; strided < 2; ++strided) {
        Tensor va = from_vector<double>(v, {2 * n + 2}).to(d);
        Tensor vb = from_vector<double>(w, {2 * n + 2}).to(d);
        Tensor a = strided ? va.slice(0, 1, 2 * n + 1, 2) : va.slice(0, 1, n + 1);
        Tensor b = strided ? vb.slice(0, 0, 2 * n, 2) : vb.slice(0, 2, n + 2);
        auto run = [&](InnerLoop plain, InnerLoop nt, DType od, std::vector<Tensor> in,
                       const char* what) {
          ASSERT_TRUE(nt) << what;
          Tensor o1 = zeros({n + 1}, TensorOptions().dtype(od)).slice(0, 1, n + 1);
          Tensor o2 = zeros({n + 1}, TensorOptions().dtype(od)).slice(0, 1, n + 1);
          ElementwiseLoop(o1, in).run(plain, params);
          ElementwiseLoop(o2, in).run(nt, params);
          EXPECT_TRUE(same_bytes(o1, o2))
              << what << " " << dtype_name(d) << " isa " << k << " " << strided;
          ++checked;
        };
        for (int op = 0; op < kNumOps; ++op) {
          if (!t.op[op][dt]) continue;
          const OpId id = static_cast<OpId>(op);
          const bool binary = id >= OpId::Add && id <= OpId::LogicalOr;
          const bool bool_out = (id >= OpId::Eq && id <= OpId::Ge) || id == OpId::Isnan;
          run(t.op[op][dt], t.op_nt[op][dt], bool_out ? kBool : d,
              binary ? std::vector<Tensor>{a, b} : std::vector<Tensor>{a}, op_name(id));
        }
        for (int to = 0; to < kNumDTypes; ++to)
          run(t.cast[dt][to], t.cast_nt[dt][to], static_cast<DType>(to), {a}, "cast");
      }
    }
  }
  EXPECT_GT(checked, 300);
}

// Float32 products on libxsmm's kernels (ops/cpu/xsmm_gemm.h) against a double-precision
// reference written here, over every tail of its blocking (panels of 32 columns, blocks of 32
// rows, depth blocks of 1024) and every operand layout; and the bits of blocks against one call.
// Also: a product flushed at its thread's exit, and fork() beside a thread generating kernels.
// Bound: |c - ref| <= K * 2^-24 * sum_k |a_mk * b_kn| (a K-term float32 dot product, any order
// of fused multiply-adds), times 1.01 for the reference's own rounding.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.h"
#include "ops/cpu/blas_gemm.h"
#include "ops/cpu/xsmm_gemm.h"
#include "runtime/config.h"
#include "runtime/parallel.h"
#include "tracer/region_runner.h"

using namespace kiln;

namespace {

// op(X) [rows, cols] stored as is (row stride ld >= cols) or transposed (column stride ld >= rows).
struct Operand {
  std::vector<float> data;
  blas::Layout layout;
  int64_t rows = 0, cols = 0;
  float at(int64_t r, int64_t c) const {
    return layout.trans ? data[size_t(c * layout.ld + r)] : data[size_t(r * layout.ld + c)];
  }
};

Operand make(int64_t rows, int64_t cols, bool trans, int64_t pad, unsigned seed) {
  Operand o;
  o.rows = rows;
  o.cols = cols;
  o.layout = {true, trans, (trans ? rows : cols) + pad};
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  o.data.resize(size_t((trans ? cols : rows) * o.layout.ld));
  for (float& x : o.data) x = d(gen);
  return o;
}

bool libxsmm_here() { return blas::xsmm_enabled(); }

struct MNK {
  int64_t M, N, K;
};

}  // namespace

// Every tail: M and N below, at and past one block, K past one depth block (the accumulating
// kernels) and not a multiple of it; each operand as is or transposed, with and without a
// leading dim past its extent.
TEST(XsmmGemm, MatchesADoubleReferenceOverEveryTailAndLayout) {
  if (!libxsmm_here()) GTEST_SKIP() << "libxsmm generates no code on this CPU";
  const MNK shapes[] = {{2, 3, 5},      {31, 33, 64},   {32, 32, 1024}, {33, 65, 1025},
                        {70, 31, 2100}, {5, 100, 3000}, {64, 1, 17},    {1000, 40, 8}};
  unsigned seed = 1;
  for (const MNK& s : shapes)
    for (int layouts = 0; layouts < 8; ++layouts) {
      const bool ta = layouts & 1, tb = layouts & 2, pad = layouts & 4;
      const Operand a = make(s.M, s.K, ta, pad ? 3 : 0, seed++);
      const Operand b = make(s.K, s.N, tb, pad ? 5 : 0, seed++);
      const int64_t ldc = s.N + (pad ? 2 : 0);
      std::vector<float> c(size_t(s.M * ldc), 7.0f);
      ASSERT_TRUE(blas::xsmm_gemm(a.layout, b.layout, s.M, s.N, s.K, a.data.data(), b.data.data(),
                                  c.data(), ldc));
      for (int64_t m = 0; m < s.M; ++m)
        for (int64_t n = 0; n < s.N; ++n) {
          double ref = 0, mag = 0;
          for (int64_t k = 0; k < s.K; ++k) {
            const double p = double(a.at(m, k)) * double(b.at(k, n));
            ref += p;
            mag += std::fabs(p);
          }
          const double err = std::fabs(double(c[size_t(m * ldc + n)]) - ref);
          const double bound = 1.01 * double(s.K) * std::ldexp(1.0, -24) * mag;
          if (err > bound) {
            ADD_FAILURE() << s.M << "x" << s.N << "x" << s.K << " trans " << ta << tb << " pad "
                          << pad << ": C(" << m << ", " << n << ") = " << c[size_t(m * ldc + n)]
                          << ", reference " << ref << ", bound " << bound;
            return;
          }
        }
      // Past C's columns (the leading dim's padding) nothing is written.
      for (int64_t m = 0; pad && m < s.M; ++m)
        for (int64_t n = s.N; n < ldc; ++n) ASSERT_EQ(c[size_t(m * ldc + n)], 7.0f);
    }
}

// Row blocks, column blocks (on the kernels' blocks) and gemm_threaded's grids (1 thread; 7: 3
// panel blocks x 2 row blocks; 16: threads_for's 11, 3 x 3) give one call's bits (the promise
// ops/cpu/blas_gemm.h's splits rely on).
TEST(XsmmGemm, BlocksAndThreadsGiveTheBitsOfOneCall) {
  if (!libxsmm_here()) GTEST_SKIP() << "libxsmm generates no code on this CPU";
  const int64_t M = 150, N = 70, K = 1100;
  for (int layouts = 0; layouts < 4; ++layouts) {
    const Operand a = make(M, K, layouts & 1, 0, 50 + layouts);
    const Operand b = make(K, N, layouts & 2, 0, 60 + layouts);
    const float* A = a.data.data();
    const float* B = b.data.data();
    std::vector<float> whole(size_t(M * N)), part(size_t(M * N));
    ASSERT_TRUE(blas::xsmm_gemm(a.layout, b.layout, M, N, K, A, B, whole.data(), N));
    // Rows [0, 64) and [64, M); columns [0, 32) and [32, N): splits on the kernels' blocks
    // (blas::split_point), the tails where one call has them.
    for (int64_t r0 : {int64_t{0}, int64_t{64}}) {
      const int64_t r1 = r0 ? M : 64;
      for (int64_t c0 : {int64_t{0}, int64_t{32}}) {
        const int64_t c1 = c0 ? N : 32;
        ASSERT_TRUE(blas::xsmm_gemm(
            a.layout, b.layout, r1 - r0, c1 - c0, K, A + (a.layout.trans ? r0 : r0 * a.layout.ld),
            B + (b.layout.trans ? c0 * b.layout.ld : c0), part.data() + r0 * N + c0, N));
      }
    }
    EXPECT_EQ(std::memcmp(whole.data(), part.data(), whole.size() * sizeof(float)), 0) << layouts;
    const int saved = config().num_threads;
    for (int threads : {1, 7, 16}) {
      set_num_threads(threads);
      std::fill(part.begin(), part.end(), 0.0f);
      blas::gemm_threaded(a.layout, b.layout, M, N, K, A, B, part.data());
      EXPECT_EQ(std::memcmp(whole.data(), part.data(), whole.size() * sizeof(float)), 0)
          << layouts << ", " << threads << " threads";
    }
    set_num_threads(saved);
  }
}

// KILN_GEMM=openblas: libxsmm computes nothing; blas::gemm takes OpenBLAS, within the bound.
TEST(XsmmGemm, OpenBlasOnRequest) {
  const std::string saved = config().gemm;
  config().gemm = "openblas";
  const Operand a = make(40, 300, false, 0, 7), b = make(300, 50, true, 0, 8);
  std::vector<float> c(40 * 50);
  EXPECT_FALSE(blas::xsmm_enabled());
  EXPECT_FALSE(
      blas::xsmm_gemm(a.layout, b.layout, 40, 50, 300, a.data.data(), b.data.data(), c.data(), 50));
  blas::gemm<float>(a.layout, b.layout, 40, 50, 300, a.data.data(), b.data.data(), c.data());
  double ref = 0;
  for (int64_t k = 0; k < 300; ++k) ref += double(a.at(39, k)) * double(b.at(k, 49));
  EXPECT_NEAR(c[39 * 50 + 49], ref, 300 * 6e-8 * 300);
  config().gemm = saved;
}

// A thread's recorder runs its last recorded ops from a thread-exit destructor; a float32
// product among them must not reach state of this thread that is already gone (the panel
// buffer was a thread_local std::vector once, freed before the recorder's flush used it: heap
// corruption, and glibc aborted the process).
TEST(XsmmGemm, AProductFlushedAtItsThreadsExitIsComputed) {
  kiln::sync();
  const bool saved = config().jit;
  config().jit = true;
  Tensor a = randn({70, 300}), b = randn({300, 50}), c;
  for (int i = 0; i < 20; ++i) {
    std::thread t([&] {
      (void)matmul(a, b).sum().item<float>();  // a product run before: the thread's state exists
      c = matmul(a + 1, b);                    // recorded, not synced, until the thread ends
    });
    t.join();
  }
  config().jit = saved;
  const Tensor expected = matmul(a + 1, b);
  EXPECT_TRUE(allclose(c, expected, 1e-5, 1e-4));
}

// fork() while another thread generates libxsmm kernels (products of shapes not seen before):
// the child's first product of a new shape must not find libxsmm's registry locked by a thread
// that does not exist in it (ops/cpu/xsmm_gemm.cpp fork_guard; without it 9-10 of 300 children
// spun until their alarm). Each child computes a product of its own new shape, checks it and
// exits; one killed by its alarm is a hang. The children's products are small: one thread.
// Eager: the products are libxsmm's alone (tests/test_fork.cpp forks under KILN_JIT=1).
TEST(XsmmGemm, ForkWhileAnotherThreadGeneratesKernels) {
  if (!blas::xsmm_enabled()) GTEST_SKIP() << "libxsmm computes no float32 products here";
  kiln::sync();
  tracer::wait_for_compiles();
  const bool jit = config().jit;
  config().jit = false;
  // Every op the threads run, once here first: a fork while the maker runs a function-local
  // static's first initialization would hang the child in its guard (C++'s hazard, not kiln's).
  (void)matmul(ones({40, 30}), ones({30, 20})).sum().item<float>();
  std::atomic<bool> stop{false};
  std::thread maker([&] {
    for (int i = 0; !stop.load(); ++i) {
      const int64_t m = 1 + (i * 7) % 61, n = 1 + (i * 13) % 67, k = 1 + (i * 5) % 59;
      (void)matmul(ones({m, k}), ones({k, n}));
    }
  });
  int hung = 0, wrong = 0;
  for (int f = 0; f < 200; ++f) {
    ::usleep(200);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::alarm(10);
      const int64_t m = 70 + f % 13, n = 73 + f % 11;  // K = 71: no shape of the maker's
      const Tensor c = matmul(ones({m, 71}), ones({71, n}));
      const bool right = c.sum().item<float>() == 71.0f * static_cast<float>(m * n);
      ::_exit(right ? 0 : 3);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    hung += WIFSIGNALED(status);
    wrong += WIFEXITED(status) && WEXITSTATUS(status) != 0;
  }
  stop = true;
  maker.join();
  config().jit = jit;
  EXPECT_EQ(hung, 0) << "children killed (their alarm: a hang)";
  EXPECT_EQ(wrong, 0) << "children with a wrong product";
}

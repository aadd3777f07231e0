// matmul / mm / bmm against a naive double-precision reference written here (torch.matmul's rules:
// 1-D operands promoted and their dim removed, batch dims broadcast).
// Tolerances: integers exact; Float64 |err| <= 1e-12 * K; Float32 |err| <= 1e-5 * K (inputs lie
// in [-1, 1], so every product is <= 1 and the float32 rounding error of a K-term sum is bounded
// by about K * 2^-24 * max|partial sum| <= K * 6e-8 * K; 1e-5 * K covers K up to ~150 with margin
// and the BLAS blocked orders).
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <vector>

#include "core_test_util.h"
#include "expect_error.h"
#include "kiln/kiln.h"
#include "ops/cpu/openblas_library.h"
#include "runtime/config.h"
#include "runtime/parallel.h"

using namespace kiln;
using kiln::testing::expect_error;
using kiln::testutil::values;

namespace {

// A tensor of `shape` and dtype `dt` with deterministic values: floats in [-1, 1], ints in [-5, 5].
Tensor make_operand(const Shape& shape, DType dt, unsigned seed) {
  std::mt19937 gen(seed);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  if (is_floating(dt)) {
    std::uniform_real_distribution<double> d(-1, 1);
    for (auto& x : v) x = d(gen);
  } else {
    std::uniform_int_distribution<int> d(-5, 5);
    for (auto& x : v) x = d(gen);
  }
  return from_vector<double>(v, shape).to(dt);
}

struct Ref {
  std::vector<double> data;
  Shape shape;
};

// torch.matmul in double, written independently of kiln.
Ref ref_matmul(const Tensor& ta, const Tensor& tb) {
  std::vector<double> A = values(ta), B = values(tb);
  Shape as = ta.sizes(), bs = tb.sizes();
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  if (a1) as = {1, as[0]};
  if (b1) bs = {bs[0], 1};
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  Shape ba(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  const size_t nb = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), nb - ba.size(), 1);
  bb.insert(bb.begin(), nb - bb.size(), 1);
  Shape batch(nb);
  for (size_t d = 0; d < nb; ++d) batch[d] = ba[d] == 1 ? bb[d] : ba[d];
  int64_t count = 1;
  for (int64_t s : batch) count *= s;
  Ref r;
  r.data.assign(static_cast<size_t>(count * M * N), 0.0);
  for (int64_t bi = 0; bi < count; ++bi) {
    int64_t rem = bi, ia = 0, ib = 0, sa = 1, sb = 1;
    for (int64_t d = static_cast<int64_t>(nb) - 1; d >= 0; --d) {
      int64_t idx = rem % batch[d];
      rem /= batch[d];
      ia += (ba[d] == 1 ? 0 : idx) * sa;
      ib += (bb[d] == 1 ? 0 : idx) * sb;
      sa *= ba[d];
      sb *= bb[d];
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += A[(ia * M + i) * K + k] * B[(ib * K + k) * N + j];
        r.data[(bi * M + i) * N + j] = s;
      }
  }
  r.shape = batch;
  if (!a1) r.shape.push_back(M);
  if (!b1) r.shape.push_back(N);
  return r;
}

double tolerance(DType dt, int64_t K) {
  if (dt == kFloat32) return 1e-5 * std::max<int64_t>(K, 1);
  if (dt == kFloat64) return 1e-12 * std::max<int64_t>(K, 1);
  return 0;
}

void expect_matches(const Tensor& got, const Ref& ref, DType dt, int64_t K,
                    const std::string& what) {
  ASSERT_EQ(got.sizes(), ref.shape) << what;
  ASSERT_EQ(got.dtype(), dt) << what;
  std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), ref.data.size()) << what;
  const double tol = tolerance(dt, K);
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_LE(std::abs(g[i] - ref.data[i]), tol) << what << " at " << i;
}

void check(const Tensor& a, const Tensor& b, const std::string& what) {
  Ref ref = ref_matmul(a, b);
  expect_matches(matmul(a, b), ref, a.dtype(), a.size(-1), what);
}

const DType kDTypes[] = {kFloat32, kFloat64, kInt32, kInt64};

// A product too large for the naive reference in full: rows 0, 1, M/2 and M-1 of a 2-D a @ b
// against it (every column).
void check_sampled(const Tensor& got, const Tensor& a, const Tensor& b, const std::string& what) {
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  ASSERT_EQ(got.sizes(), (Shape{M, N})) << what;
  std::vector<double> A = values(a), B = values(b), C = values(got);
  const double tol = tolerance(a.dtype(), K);
  for (int64_t i : {int64_t{0}, int64_t{1}, M / 2, M - 1})
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += A[i * K + k] * B[k * N + j];
      ASSERT_LE(std::abs(C[i * N + j] - s), tol) << what << " at " << i << "," << j;
    }
}

std::string name(const Shape& s) { return shape_str(s); }

}  // namespace

TEST(Matmul, AllShapeRulesAllDTypes) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3}, {3}},
      {{2, 3}, {3}},
      {{3}, {3, 4}},
      {{2, 3}, {3, 4}},
      {{5, 2, 3}, {3, 4}},
      {{2, 3}, {5, 3, 4}},
      {{5, 2, 3}, {5, 3, 4}},
      {{2, 1, 2, 3}, {4, 3, 2}},
      {{3}, {2, 3, 4}},
      {{2, 4, 3}, {3}},
      {{1, 2, 3}, {4, 3, 5}},
      {{3, 1, 2, 3}, {1, 2, 3, 1}},
      {{1, 1}, {1, 1}},
      {{4, 1}, {1, 5}},
  };
  unsigned seed = 1;
  for (DType dt : kDTypes)
    for (const auto& [sa, sb] : cases) {
      Tensor a = make_operand(sa, dt, seed++);
      Tensor b = make_operand(sb, dt, seed++);
      check(a, b, fmt::format("{} @ {} {}", name(sa), name(sb), dt));
    }
}

// One row on the left (a 1-D operand, a [1, K] matrix) is a BLAS dot or gemv call (ops/cpu/
// blas_gemm.cpp): strided and transposed operands, both float dtypes, against the reference.
TEST(Matmul, OneRowProductsOfStridedAndTransposedOperands) {
  unsigned seed = 900;
  for (DType dt : {kFloat32, kFloat64}) {
    const int64_t K = 37, N = 5;
    const Tensor wide = make_operand({K, 3}, dt, seed++);  // column 1: a row of stride 3
    const Tensor bt = make_operand({N, K}, dt, seed++);    // transposed: [K, N]
    const Tensor bn = make_operand({K, N}, dt, seed++);
    const Tensor col = make_operand({K, 2}, dt, seed++);  // column 0: stride 2
    const Tensor x = wide.select(1, 1), y = make_operand({K}, dt, seed++);
    check(x, y, fmt::format("strided dot {}", dt));
    check(x, col.select(1, 0), fmt::format("two strided vectors {}", dt));
    check(y, bt.t(), fmt::format("vector @ transposed {}", dt));
    check(x, bn, fmt::format("strided vector @ matrix {}", dt));
    check(x.unsqueeze(0), bt.t(), fmt::format("[1, K] @ transposed {}", dt));
    check(wide.t().narrow(0, 1, 1), bn, fmt::format("a transposed row @ matrix {}", dt));
  }
}

TEST(Matmul, DotIsZeroDim) {
  Tensor a = from_vector<float>({1, 2, 3}, {3});
  Tensor b = from_vector<float>({4, 5, 6}, {3});
  Tensor r = matmul(a, b);
  EXPECT_EQ(r.dim(), 0);
  EXPECT_FLOAT_EQ(r.item<float>(), 32.0f);
  Tensor ri = matmul(a.to(kInt64), b.to(kInt64));
  EXPECT_EQ(ri.item<int64_t>(), 32);
}

TEST(Matmul, TransposedSlicedExpandedInputs) {
  for (DType dt : kDTypes) {
    const std::string d = fmt::format(" {}", dt);
    Tensor at = make_operand({3, 2}, dt, 11).t();  // [2, 3], column-major: BLAS trans flag
    Tensor bt = make_operand({4, 3}, dt, 12).t();  // [3, 4]
    check(at, bt, "transposed both" + d);
    check(at, make_operand({3, 4}, dt, 13), "transposed a" + d);
    check(make_operand({2, 3}, dt, 14), bt, "transposed b" + d);
    // Batched transposes and a permuted batch dim.
    check(make_operand({5, 3, 2}, dt, 15).transpose(1, 2),
          make_operand({5, 4, 3}, dt, 16).transpose(1, 2), "batched transposed" + d);
    check(make_operand({3, 5, 2}, dt, 17).transpose(0, 1), make_operand({5, 2, 4}, dt, 18),
          "permuted batch" + d);
    // Row slices (leading dim > cols), column steps (no unit stride: copied first).
    check(make_operand({6, 5}, dt, 19).slice(0, 1, 4), make_operand({5, 7}, dt, 20).slice(1, 2, 6),
          "row/col slices" + d);
    check(make_operand({4, 6}, dt, 21).slice(1, 0, 6, 2),
          make_operand({6, 8}, dt, 22).slice(0, 0, 6, 2), "stepped slices" + d);
    // Broadcast stride 0 inside the matrix and in the batch.
    check(make_operand({1, 3}, dt, 23).expand({4, 3}), make_operand({3, 1}, dt, 24).expand({3, 5}),
          "expanded matrices" + d);
    check(make_operand({2, 3}, dt, 25).unsqueeze(0).expand({6, 2, 3}),
          make_operand({6, 3, 4}, dt, 26), "expanded batch" + d);
    // Non-contiguous batched a times 2-D b (no fold) and contiguous (fold).
    check(make_operand({4, 2, 3}, dt, 27).slice(0, 0, 4, 2), make_operand({3, 5}, dt, 28),
          "sliced batch" + d);
    check(make_operand({4, 2, 3}, dt, 29), make_operand({5, 3}, dt, 30).t(), "folded batch" + d);
  }
}

TEST(Matmul, ZeroSize) {
  for (DType dt : kDTypes) {
    check(make_operand({0, 3}, dt, 1), make_operand({3, 4}, dt, 2), "M=0");
    check(make_operand({2, 3}, dt, 3), make_operand({3, 0}, dt, 4), "N=0");
    check(make_operand({0, 2, 3}, dt, 5), make_operand({3, 4}, dt, 6), "batch 0");
    check(make_operand({0}, dt, 7), make_operand({0}, dt, 8), "empty dot");
    Tensor r = matmul(make_operand({2, 0}, dt, 9), make_operand({0, 3}, dt, 10));  // K = 0: zeros
    EXPECT_EQ(r.sizes(), (Shape{2, 3}));
    for (double v : values(r)) EXPECT_EQ(v, 0.0);
    Tensor rb = matmul(make_operand({4, 2, 0}, dt, 11), make_operand({4, 0, 3}, dt, 12));
    EXPECT_EQ(rb.sizes(), (Shape{4, 2, 3}));
    for (double v : values(rb)) EXPECT_EQ(v, 0.0);
  }
}

TEST(Matmul, LargeBlasAndParallelPaths) {
  check(make_operand({2, 130, 70}, kFloat32, 40), make_operand({70, 90}, kFloat32, 41),
        "large f32 folded");
  check(make_operand({3, 64, 100}, kFloat64, 42), make_operand({3, 100, 48}, kFloat64, 43),
        "large f64 batched");
  check(make_operand({150, 120}, kFloat32, 44).t(), make_operand({150, 110}, kFloat32, 45),
        "large f32 trans");
  check(make_operand({300, 200}, kInt64, 46), make_operand({200, 150}, kInt64, 47),
        "large i64 parallel rows");
  check(make_operand({4, 90, 80}, kInt32, 48),
        make_operand({80, 300}, kInt32, 49).t().contiguous().t(),
        "large i32 strided b, row blocks > 256");
}

TEST(Matmul, IntegerOverflowWraps) {
  const int32_t big = 1 << 20;
  Tensor a = from_vector<int32_t>({big, big}, {1, 2});
  Tensor b = from_vector<int32_t>({big, big}, {2, 1});
  // 2 * 2^40 wraps to 0 in 32 bits (two's complement), as torch's int32 matmul.
  EXPECT_EQ(matmul(a, b).to_vector<int32_t>(), (std::vector<int32_t>{0}));
}

TEST(Matmul, BlasThreadsFollowSizeAndKilnConfig) {
  const int saved = config().num_threads;
  // Eager's choice (a plan's BLAS step makes the same calls: tests/test_jit_matmul.cpp).
  kiln::sync();
  const bool saved_jit = config().jit;
  config().jit = false;
  // OpenBLAS's threads (float32 products on libxsmm run on kiln's: tests/test_xsmm_gemm.cpp).
  const std::string saved_gemm = config().gemm;
  config().gemm = "openblas";
  auto run = [](int64_t n, DType dt, int64_t batch = 0) {
    const Shape s = batch ? Shape{batch, n, n} : Shape{n, n};
    (void)matmul(make_operand(s, dt, 1), make_operand(s, dt, 2)).sum().to(kFloat64).item<double>();
    return kiln::blas::openblas().get_num_threads();
  };
  set_num_threads(1);
  EXPECT_EQ(run(8, kFloat32), 1);
  EXPECT_EQ(run(1024, kFloat32), 1);  // 2.1 GFLOP, but kiln has one thread
  set_num_threads(2);
  // A 2-D Float32 product this big is split into row blocks over kiln's threads, one OpenBLAS
  // thread each (ops/cpu/blas_gemm.h); a batch of them takes OpenBLAS's threads.
  EXPECT_EQ(run(1024, kFloat32), 1);
  EXPECT_EQ(run(1024, kFloat32, 2), 2);  // above twice the per-thread threshold: every kiln thread
  EXPECT_EQ(run(512, kFloat64), 1);      // 268 MFLOP: one thread
  EXPECT_EQ(run(8, kFloat64), 1);        // small: one thread (ops/matmul.cpp, kBlasFlopsPerThread)
  EXPECT_EQ(run(64, kFloat32), 1);
  set_num_threads(saved);
  config().jit = saved_jit;
  config().gemm = saved_gemm;
}

// Shapes around the blocking and thread thresholds, each operand contiguous, transposed, with a
// leading dim larger than its rows (a slice along the columns, starting at an odd offset), or
// transposed with a larger leading dim: all go to BLAS as flags and leading dims, no copies.
TEST(Matmul, ManyShapesAndLayouts) {
  struct MNK {
    int64_t M, N, K;
  };
  const MNK shapes[] = {{1, 1, 1},    {1, 7, 5},     {6, 1, 9},   {5, 4, 1},     {17, 33, 65},
                        {64, 64, 64}, {65, 31, 129}, {2, 300, 3}, {128, 96, 200}};
  unsigned seed = 100;
  // layout 0: contiguous; 1: transposed; 2: row stride > cols; 3: transposed, stride > rows.
  auto operand = [&](int64_t r, int64_t c, int layout, DType dt) {
    switch (layout) {
      case 1:
        return make_operand({c, r}, dt, seed++).t();
      case 2:
        return make_operand({r, c + 5}, dt, seed++).slice(1, 3, c + 3);
      case 3:
        return make_operand({c, r + 4}, dt, seed++).slice(1, 1, r + 1).t();
      default:
        return make_operand({r, c}, dt, seed++);
    }
  };
  for (DType dt : {kFloat32, kFloat64})
    for (const MNK& s : shapes)
      for (int la = 0; la < 4; ++la)
        for (int lb = 0; lb < 4; ++lb) {
          Tensor a = operand(s.M, s.K, la, dt), b = operand(s.K, s.N, lb, dt);
          check(a, b, fmt::format("{}x{}x{} layouts {},{} {}", s.M, s.N, s.K, la, lb, dt));
        }
  // Batched: a slice along K of a batch of matrices (folds into one product with lda > K), the
  // same transposed (a batch of BLAS calls), and a batch of small products split over threads.
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor a = make_operand({3, 20, 37}, dt, seed++).slice(2, 2, 33);
    check(a, make_operand({31, 9}, dt, seed++), fmt::format("folded lda {}", dt));
    check(a, make_operand({9, 31}, dt, seed++).t(), fmt::format("folded lda, b transposed {}", dt));
    check(a.transpose(1, 2), make_operand({3, 20, 11}, dt, seed++),
          fmt::format("batched trans {}", dt));
  }
  // 160 products of 2*64*64*400 = 3.3 MFLOP: one BLAS thread each, the batch split over kiln's
  // threads (tasks of at least kBlasFlopsPerThread); batches 0, 80 and 159 against the reference.
  const Tensor xs = make_operand({160, 64, 400}, kFloat32, seed++);
  const Tensor ys = make_operand({160, 64, 400}, kFloat32, seed++).transpose(1, 2);
  const Tensor zs = matmul(xs, ys);
  for (int64_t bi : {0, 80, 159})
    check_sampled(zs[bi], xs[bi], ys[bi], fmt::format("batch split over threads, {}", bi));
  // Large enough for several BLAS threads (2*M*N*K = 1.1 GFLOP, above 2 * kBlasFlopsPerThread).
  Tensor a = make_operand({600, 910}, kFloat32, seed++).slice(1, 7, 907);
  Tensor b = make_operand({1000, 900}, kFloat32, seed++).t();
  check_sampled(matmul(a, b), a, b, "multi-threaded, lda and trans");
}

// A matmul inside a kiln parallel region runs on its calling thread with one BLAS thread (the
// TBB arena already uses the cores) and gives the same results.
TEST(Matmul, InsideParallelRegion) {
  const int saved = config().num_threads;
  set_num_threads(2);
  // 2*M*N*K = 2*1024*1000*600 = 1.23 GFLOP each: two BLAS threads outside a parallel region.
  constexpr int kTasks = 4;
  std::vector<Tensor> as, bs;
  for (int i = 0; i < kTasks; ++i) {
    const DType dt = i % 2 ? kFloat32 : kFloat64;
    as.push_back(make_operand({1024, 600}, dt, 200 + i));
    Tensor b = make_operand({1000, 600}, dt, 300 + i);
    bs.push_back(i < 2 ? b.t() : b.t().contiguous());
  }
  (void)matmul(as[0], bs[0]).sum().item<double>();
  EXPECT_EQ(kiln::blas::openblas().get_num_threads(), 2);
  std::vector<Tensor> got(kTasks);
  std::atomic<int> in_region{0}, blas_one{0};
  parallel_for(0, kTasks, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      in_region += in_parallel_region() ? 1 : 0;
      got[i] = matmul(as[i], bs[i]);
      (void)got[i].sum().item<double>();  // run it here, also when KILN_JIT=1 records it
      blas_one += kiln::blas::openblas().get_num_threads() == 1 ? 1 : 0;
    }
  });
  EXPECT_EQ(in_region.load(), kTasks);
  EXPECT_EQ(blas_one.load(), kTasks);
  for (int i = 0; i < kTasks; ++i)
    check_sampled(got[i], as[i], bs[i], fmt::format("in region, task {}", i));
  set_num_threads(saved);
}

TEST(Matmul, MmBmmAndMethods) {
  for (DType dt : kDTypes) {
    Tensor a = make_operand({3, 4}, dt, 1), b = make_operand({4, 2}, dt, 2);
    expect_matches(mm(a, b), ref_matmul(a, b), dt, 4, "mm");
    expect_matches(a.mm(b), ref_matmul(a, b), dt, 4, "Tensor::mm");
    expect_matches(a.matmul(b), ref_matmul(a, b), dt, 4, "Tensor::matmul");
    Tensor x = make_operand({5, 3, 4}, dt, 3), y = make_operand({5, 2, 4}, dt, 4).transpose(1, 2);
    expect_matches(bmm(x, y), ref_matmul(x, y), dt, 4, "bmm");
    expect_matches(x.bmm(y), ref_matmul(x, y), dt, 4, "Tensor::bmm");
  }
}

namespace {}  // namespace

TEST(Matmul, Errors) {
  Tensor f = make_operand({2, 3}, kFloat32, 1), g = make_operand({3, 4}, kFloat32, 2);
  expect_error([&] { matmul(f, g.to(kFloat64)); }, "matmul", "same dtype");
  expect_error([&] { matmul(f.to(kInt64), g); }, "matmul", "same dtype");
  expect_error([&] { matmul(f.to(kBool), g.to(kBool)); }, "matmul", "Bool");
  expect_error([&] { matmul(scalar_tensor(1.0), g); }, "matmul", "at least 1 dimension");
  expect_error(
      [&] {
        matmul(f, make_operand({4, 2}, kFloat32, 3));
      },
      "matmul", "cannot be multiplied");
  expect_error([&] { matmul(make_operand({3}, kFloat32, 4), make_operand({4}, kFloat32, 5)); },
               "matmul");
  expect_error(
      [&] {
        matmul(make_operand({2, 2, 3}, kFloat32, 6), make_operand({3, 3, 4}, kFloat32, 7));
      },
      "matmul");
  expect_error([&] { mm(make_operand({3}, kFloat32, 8), g); }, "mm", "2-D");
  expect_error([&] { mm(make_operand({1, 2, 3}, kFloat32, 9), g); }, "mm", "2-D");
  expect_error([&] { mm(f, make_operand({2, 4}, kFloat32, 10)); }, "mm", "cannot be multiplied");
  expect_error([&] { mm(f, g.to(kFloat64)); }, "mm", "same dtype");
  expect_error([&] { bmm(f, g); }, "bmm", "3-D");
  expect_error(
      [&] {
        bmm(make_operand({2, 2, 3}, kFloat32, 11), make_operand({3, 3, 4}, kFloat32, 12));
      },
      "bmm", "batch");
  expect_error(
      [&] {
        bmm(make_operand({2, 2, 3}, kFloat32, 13), make_operand({2, 4, 4}, kFloat32, 14));
      },
      "bmm", "cannot be multiplied");
  expect_error(
      [&] {
        bmm(make_operand({2, 2, 3}, kInt32, 15), make_operand({2, 3, 4}, kInt64, 16));
      },
      "bmm", "same dtype");
  expect_error([&] { matmul(Tensor(), g); }, "matmul");
}
